package install

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// capwrightGroups are the API groups of Capwright's own CRDs.
var capwrightGroups = []string{v1alpha1.GroupVersion.Group, "tenancy.capwright.io"}

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := framework.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{helmv2.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func apply(ctx context.Context, t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	a, err := plane.NewApplier(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
}

// providersOf returns the provider CRs among objs, typed.
func providersOf(t *testing.T, c client.Client, objs []*unstructured.Unstructured) []v1alpha1.Provider {
	t.Helper()
	var out []v1alpha1.Provider
	for _, o := range objs {
		if o.GroupVersionKind().GroupVersion() != v1alpha1.GroupVersion {
			continue
		}
		obj, err := c.Scheme().New(o.GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		p, ok := obj.(v1alpha1.Provider)
		if !ok {
			t.Fatalf("%s is not a provider kind", o.GetKind())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if len(out) != 3 {
		t.Fatalf("want the three Cluster API providers in the example, found %d", len(out))
	}
	return out
}

// waitProvidersReady waits until every provider is Ready for its
// generation.
func waitProvidersReady(ctx context.Context, t *testing.T, c client.Client, providers []v1alpha1.Provider, timeout time.Duration) {
	t.Helper()
	for _, p := range providers {
		if err := framework.WaitReady(ctx, c, p, timeout); err != nil {
			t.Fatal(err)
		}
	}
}

// notReady names the providers that are not Ready right now.
func notReady(ctx context.Context, c client.Client, providers []v1alpha1.Provider) []string {
	var out []string
	for _, p := range providers {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", p.GetName(), err))
			continue
		}
		if r := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s/%s: %+v", p.GetNamespace(), p.GetName(), r))
		}
	}
	return out
}

// waitGone waits until obj no longer exists.
func waitGone(ctx context.Context, t *testing.T, c client.Client, obj client.Object, timeout time.Duration) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%T %s still there after %s (finalizers %v)", obj, key, timeout, obj.GetFinalizers())
	}
}

// capwrightCRDs lists Capwright's own CRDs on the API server.
func capwrightCRDs(ctx context.Context, t *testing.T, c client.Client) []apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var out []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		for _, g := range capwrightGroups {
			if crd.Spec.Group == g {
				out = append(out, crd)
			}
		}
	}
	return out
}

// managerUser is the API user of a manager running as the ServiceAccount
// namespace/name.
func managerUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// fluxWrites are the writes of user to Flux objects since since.
func fluxWrites(t *testing.T, user string, since time.Time) []plane.Write {
	t.Helper()
	writes, err := env.Writes(user, since)
	if err != nil {
		t.Fatal(err)
	}
	var out []plane.Write
	for _, w := range writes {
		switch w.Resource {
		case "ocirepositories", "kustomizations", "helmreleases", "externalartifacts":
			out = append(out, w)
		}
	}
	return out
}

// checkUpgraded checks Capwright after Flux applied upgradeVersion: the
// providers are Ready; the Deployment names wantImage, so its pod is
// replaced by a manager from that image; every Capwright CRD carries the
// upgrade's change; the providers stay Ready while the new manager resyncs
// them, and since since the manager wrote nothing to their Flux objects.
// It returns the new manager.
func checkUpgraded(ctx context.Context, t *testing.T, c client.Client, deploy *appsv1.Deployment, old *deployedManager, wantImage string, providers []v1alpha1.Provider, since time.Time) *deployedManager {
	t.Helper()
	if bad := notReady(ctx, c, providers); len(bad) > 0 {
		t.Errorf("providers not Ready while Flux upgraded Capwright: %v", bad)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(deploy), deploy); err != nil {
		t.Fatal(err)
	}
	old.stop()
	manager := runDeployedManager(ctx, t, deploy, wantImage)
	for _, crd := range capwrightCRDs(ctx, t, c) {
		if crd.Labels[upgradeCRDLabel] != upgradeVersion {
			t.Errorf("CRD %s was not upgraded: labels %v, want %s=%s", crd.Name, crd.Labels, upgradeCRDLabel, upgradeVersion)
		}
	}
	settle := time.Now().Add(15 * time.Second)
	for time.Now().Before(settle) {
		if bad := notReady(ctx, c, providers); len(bad) > 0 {
			t.Fatalf("providers not Ready after the upgrade to %s: %v", upgradeVersion, bad)
		}
		time.Sleep(500 * time.Millisecond)
	}
	user := managerUser(deploy.Namespace, deploy.Spec.Template.Spec.ServiceAccountName)
	if w := fluxWrites(t, user, since); len(w) > 0 {
		t.Errorf("upgrading Capwright rewrote the providers' Flux objects (%d writes): %v", len(w), w)
	}
	all, err := env.Writes(user, since)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE upgrade %s → %s: %d API writes by the manager, none to Flux objects", firstVersion, upgradeVersion, len(all))
	return manager
}

// installExampleProviders applies the guide's provider CRs and waits until
// all three are Ready; it logs the time since start as a figure.
func installExampleProviders(ctx context.Context, t *testing.T, c client.Client, start time.Time, what string) []v1alpha1.Provider {
	t.Helper()
	objs := exampleAsWritten(t, "repository/infrastructure/providers/cluster-api.yaml")
	providers := providersOf(t, c, objs)
	apply(ctx, t, objs...)
	waitProvidersReady(ctx, t, c, providers, 3*time.Minute)
	t.Logf("FIGURE %s → Capwright %s running → three Cluster API providers Ready: %s", what, firstVersion, time.Since(start).Round(time.Millisecond))
	return providers
}

// retag makes the OCIRepository namespace/name follow tag: the one-line
// change a user commits to upgrade Capwright.
func retag(ctx context.Context, t *testing.T, c client.Client, namespace, name, tag string) {
	t.Helper()
	repo := &sourcev1.OCIRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, repo); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Reference.Tag = tag
	if err := c.Patch(ctx, repo, patch); err != nil {
		t.Fatal(err)
	}
}
