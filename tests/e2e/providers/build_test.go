package providers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/kustomize"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// mirroredControlPlaneImage is the image spec.images gives the control
// plane provider's manager (kwok runs no image, so any name will do).
const mirroredControlPlaneImage = "mirror.example.com/cluster-api/kubeadm-control-plane-controller"

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
		spec.Deployment = &v1alpha1.DeploymentSpec{Replicas: ptr.To(int32(2)), NodeSelector: map[string]string{"type": "kwok"},
			Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []v1alpha1.ContainerSpec{{Name: "manager", Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("96Mi")}}}}}
		spec.Images = []kustomize.Image{{Name: "registry.k8s.io/cluster-api/kubeadm-control-plane-controller", NewName: mirroredControlPlaneImage, NewTag: spec.Version}}
		spec.Patches = []kustomize.Patch{{Target: &kustomize.Selector{Kind: "Deployment"},
			Patch: `[{"op":"add","path":"/metadata/annotations","value":{"example.com/reviewed":"yes"}}]`}}
		spec.Variables = map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":8444"}
	})
	waitCondition(t, ctx, c, cp, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	optionsApplied(t, ctx, c, providers)

	var owners []client.Object
	for _, p := range providers {
		owners = append(owners, p.obj.(client.Object))
	}
	repo := buildSameAsManager(t, ctx, c, owners, 3*3)

	t.Run("offline, from OCI image layouts oras wrote, with the registry stopped", func(t *testing.T) {
		// Each provider's installed artifact copied by oras into a layout
		// of its own, tagged with its version as `oras cp
		// --to-oci-layout DIR:TAG` names it.
		oras := filepath.Join(env.RepoRoot(), "bin", "oras")
		var layouts []string
		for _, o := range owners {
			a := o.(v1alpha1.Provider).GetStatus().Artifact
			dir := filepath.Join(t.TempDir(), "layout")
			tag := strings.SplitN(a.Revision, "@", 2)[0]
			orasOutput(t, ctx, oras, "cp", "--from-plain-http", strings.TrimPrefix(a.URL, "oci://")+"@"+a.Digest, "--to-oci-layout", dir+":"+tag)
			layouts = append(layouts, "--layout", dir)
		}
		if err := env.Registry.Stop(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := env.Registry.Start(); err != nil {
				t.Fatal(err)
			}
		}()
		args := append(append([]string{"-f", repo}, layouts...), managerArgs...)
		built, stderr := framework.Build(t, ctx, framework.CLI(t, ctx, env), managerEnv, args...)
		n := framework.AssertBuildMatchesManager(t, ctx, c, owners, built)
		if got := strings.Count(stderr, "read from the OCI image layout"); got != len(owners) || n < 3*3 {
			t.Errorf("offline build: %d objects, %d artifacts read from the layouts, want all %d:\n%s", n, got, len(owners), stderr)
		}
		t.Logf("offline: %d objects, each what the manager applied, with the registry stopped; stderr:\n%s", n, stderr)
	})
}

// buildSameAsManager writes owners, providers the manager installed, as
// a repository holds them and checks that `capwright build`, given the
// manager's settings, prints exactly the objects the manager applied for
// them, at least least objects. It returns the repository's directory.
func buildSameAsManager(t *testing.T, ctx context.Context, c client.Client, owners []client.Object, least int) string {
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
	return repo
}

// optionsApplied checks the live Deployments Flux applied for the options
// buildMatchesManager gives the control plane provider, and for the
// variable the lifecycle test gives the bootstrap provider: each setting
// is on the object the API server holds, not only in the Kustomization.
func optionsApplied(t *testing.T, ctx context.Context, c client.Client, providers []installed) {
	t.Helper()
	var dep appsv1.Deployment
	if err := c.Get(ctx, providers[2].deployment, &dep); err != nil {
		t.Fatal(err)
	}
	var manager *corev1.Container
	for i := range dep.Spec.Template.Spec.Containers {
		if dep.Spec.Template.Spec.Containers[i].Name == "manager" {
			manager = &dep.Spec.Template.Spec.Containers[i]
		}
	}
	if manager == nil {
		t.Fatalf("Deployment %s has no manager container", providers[2].deployment)
	}
	version := providers[2].obj.GetSpec().Version
	if want := mirroredControlPlaneImage + ":" + version; manager.Image != want {
		t.Errorf("spec.images: manager image %q, want %q", manager.Image, want)
	}
	gates, _ := argValue(manager.Args, "--feature-gates")
	// The gate is set in place; the components' other gates keep their
	// defaults (substituted by Flux).
	if !strings.Contains(","+gates+",", ",ClusterTopology=true,") || !strings.Contains(gates, "MachinePool=true") {
		t.Errorf("spec.manager.featureGates: --feature-gates=%s, want ClusterTopology=true beside the components' gates", gates)
	}
	for flag, want := range map[string]string{
		"--v":                                 "4",     // spec.manager.verbosity
		"--kubeadm-control-plane-concurrency": "5",     // spec.manager.additionalArgs
		"--diagnostics-address":               ":8444", // spec.variables
	} {
		if got, ok := argValue(manager.Args, flag); !ok || got != want {
			t.Errorf("Deployment %s: %s=%q (set: %v), want %q; args %v", dep.Name, flag, got, ok, want, manager.Args)
		}
	}
	if got := manager.Resources.Requests[corev1.ResourceMemory]; got.String() != "96Mi" {
		t.Errorf("spec.deployment.containers[manager].resources: memory request %s, want 96Mi", got.String())
	}
	if got := ptr.Deref(dep.Spec.Replicas, 1); got != 2 {
		t.Errorf("spec.deployment.replicas: Deployment has %d replicas, want 2", got)
	}
	if dep.Status.AvailableReplicas != 2 {
		t.Errorf("Deployment %s: %d replicas available, want 2", dep.Name, dep.Status.AvailableReplicas)
	}
	if dep.Spec.Template.Spec.NodeSelector["type"] != "kwok" {
		t.Errorf("spec.deployment.nodeSelector: %v, want type=kwok", dep.Spec.Template.Spec.NodeSelector)
	}
	tolerated := false
	for _, tol := range dep.Spec.Template.Spec.Tolerations {
		tolerated = tolerated || (tol.Key == "node-role.kubernetes.io/control-plane" && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoSchedule)
	}
	if !tolerated {
		t.Errorf("spec.deployment.tolerations: %v lacks the control-plane toleration", dep.Spec.Template.Spec.Tolerations)
	}
	if dep.Annotations["example.com/reviewed"] != "yes" {
		t.Errorf("spec.patches: Deployment annotations %v, want example.com/reviewed=yes", dep.Annotations)
	}

	// The bootstrap provider's spec.variables, substituted by Flux.
	var bootstrap appsv1.Deployment
	if err := c.Get(ctx, providers[1].deployment, &bootstrap); err != nil {
		t.Fatal(err)
	}
	args := bootstrap.Spec.Template.Spec.Containers[0].Args
	if got, _ := argValue(args, "--bootstrap-token-ttl"); got != "30m" {
		t.Errorf("spec.variables KUBEADM_BOOTSTRAP_TOKEN_TTL=30m: bootstrap manager has --bootstrap-token-ttl=%q; args %v", got, args)
	}
}

// argValue returns the value of flag=value in args.
func argValue(args []string, flag string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}
