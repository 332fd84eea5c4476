package lockdown

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/capwright/capwright/internal/dryrun"
	"github.com/capwright/capwright/tests/plane"
)

// dryRunRefusal is how the admission policy capwright-provider-dry-run
// (manifests/rbac/manager_admission.yaml) starts its message.
const dryRunRefusal = "capwright:provider-dry-run may only dry-run (ValidatingAdmissionPolicy capwright-provider-dry-run"

// TestManagerMayOnlyDryRunAsTheInstaller: the manager's identity, with the
// RBAC of manifests/rbac, may impersonate the dry-run user and no one
// else; as that user it may dry-run what a provider's installer may
// apply (a Deployment), and the admission policy refuses the same create
// for real.
func TestManagerMayOnlyDryRunAsTheInstaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	managerConfig, err := env.UserConfig(plane.CapwrightUser)
	if err != nil {
		t.Fatal(err)
	}
	impersonating := rest.CopyConfig(managerConfig)
	impersonating.Impersonate = rest.ImpersonationConfig{UserName: dryrun.DryRunUser}
	dryRunUser := newClient(t, impersonating)
	deployment := func() *appsv1.Deployment {
		labels := map[string]string{"app": "dry-run-probe"}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: "dry-run-probe"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example.com/manager:v1"}}},
				},
			},
		}
	}

	if err := dryRunUser.Create(ctx, deployment(), client.DryRunAll); err != nil {
		t.Errorf("the manager, as %s, could not dry-run a Deployment create: %v", dryrun.DryRunUser, err)
	}
	// The policy may take a moment to load after the suite installed it: a
	// create it did not see yet is undone and tried again.
	var last error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = dryRunUser.Create(ctx, deployment())
		if last == nil {
			return false, client.IgnoreNotFound(newClient(t, env.Config).Delete(ctx, deployment()))
		}
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), dryRunRefusal), nil
	})
	if err != nil {
		t.Errorf("the manager, as %s, created a Deployment for real or was refused otherwise: %v, want the policy's refusal", dryrun.DryRunUser, last)
	}

	// Anyone else is out of reach: Flux's kustomize-controller, an admin.
	// (A clientset: a client that discovers first would fail there.)
	for _, user := range []string{"system:serviceaccount:flux-system:kustomize-controller", "system:admin", "capwright:provider-dry-run-2"} {
		cfg := rest.CopyConfig(managerConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.AppsV1().Deployments(clusterNamespace).Create(ctx, deployment(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot impersonate") {
			t.Errorf("the manager impersonating %s: %v, want the impersonation refused", user, err)
		}
	}

	// The Runner the manager builds on its own config does the same.
	httpClient, err := rest.HTTPClientFor(managerConfig)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(managerConfig, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	runner, err := dryrun.NewRunner(managerConfig, mapper)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(deployment())
	if err != nil {
		t.Fatal(err)
	}
	probe := &unstructured.Unstructured{Object: obj}
	probe.SetAPIVersion("apps/v1")
	probe.SetKind("Deployment")
	res, err := runner.Run(ctx, &dryrun.Built{Objects: []*unstructured.Unstructured{probe}})
	var refusal *dryrun.Refusal
	switch {
	case errors.As(err, &refusal):
		t.Errorf("the manager's dry run was refused: %s", refusal.Message)
	case err != nil:
		t.Errorf("the manager's dry run: %v", err)
	case res.Checked != 1:
		t.Errorf("the manager's dry run checked %d objects, want the Deployment", res.Checked)
	}
	if err := newClient(t, env.Config).Get(ctx, client.ObjectKeyFromObject(deployment()), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment %s/dry-run-probe exists after the dry runs (%v)", clusterNamespace, err)
	}
}
