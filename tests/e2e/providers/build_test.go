package providers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/kustomize"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// buildMatchesManager gives the control plane provider options of every
// kind (the manager's flags and feature gates, the Deployment's
// tolerations and resources, an image override, a patch, a variable),
// then writes the three providers as a repository holds them and checks
// that `capwright build`, given the manager's settings, prints exactly
// the objects the manager applied for them, and all of them.
func buildMatchesManager(t *testing.T, ctx context.Context, c client.Client, providers []installed) {
	cp := providers[2].obj
	updateProvider(t, ctx, c, cp, func() {
		spec := cp.GetSpec()
		spec.Manager = &v1alpha1.ManagerSpec{FeatureGates: map[string]bool{"ClusterTopology": true}, Verbosity: ptr.To(int32(4)),
			AdditionalArgs: map[string]string{"--kubeadm-control-plane-concurrency": "5"}}
		spec.Deployment = &v1alpha1.DeploymentSpec{
			Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []v1alpha1.ContainerSpec{{Name: "manager", Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")}}}}}
		spec.Images = []kustomize.Image{{Name: "registry.k8s.io/cluster-api/kubeadm-control-plane-controller", NewName: "registry.k8s.io/cluster-api/kubeadm-control-plane-controller", NewTag: spec.Version}}
		spec.Patches = []kustomize.Patch{{Target: &kustomize.Selector{Kind: "Deployment"},
			Patch: `[{"op":"add","path":"/metadata/annotations","value":{"example.com/reviewed":"yes"}}]`}}
		spec.Variables = map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":8444"}
	})
	waitCondition(t, ctx, c, cp, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)

	var owners []client.Object
	for _, p := range providers {
		owners = append(owners, p.obj.(client.Object))
	}
	buildSameAsManager(t, ctx, c, owners, 3*3)
}

// buildSameAsManager writes owners, providers the manager installed, as
// a repository holds them and checks that `capwright build`, given the
// manager's settings, prints exactly the objects the manager applied for
// them, at least least objects.
func buildSameAsManager(t *testing.T, ctx context.Context, c client.Client, owners []client.Object, least int) {
	t.Helper()
	for _, o := range owners {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	repo := framework.WriteRepository(t, filepath.Join(t.TempDir(), "providers"), owners...)
	built, stderr := framework.Build(t, ctx, framework.CLI(t, ctx, env), managerEnv, append([]string{"-f", repo}, managerArgs...)...)
	n := framework.AssertBuildMatchesManager(t, ctx, c, owners, built)
	if n < least {
		t.Errorf("build printed %d objects for %d providers, want at least %d (their installer, source and applier):\n%s", n, len(owners), least, stderr)
	}
	t.Logf("capwright build printed %d objects for %d providers, each what the manager applied; stderr:\n%s", n, len(owners), stderr)
}
