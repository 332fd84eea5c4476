package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// kstatusWait proves that providers read right to kstatus, the way a
// platform team's own Flux sees them: a Kustomization with wait: true that
// applies a provider CR goes Ready only once the provider is, and one that
// applies a refused provider fails long before its timeout, naming it.
func kstatusWait(t *testing.T, ctx context.Context, c client.Client) {
	const timeout = 5 * time.Minute
	deliver := func(t *testing.T, name string, p *v1alpha1.InfrastructureProvider) *kustomizev1.Kustomization {
		t.Helper()
		p.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "InfrastructureProvider"}
		data, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		pushed, err := framework.PushFiles(ctx, env.Registry.Host, "kstatus/"+name, "v1", map[string][]byte{"provider.yaml": data}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ks := framework.Kustomization("default", name, name)
		ks.Spec.Timeout = &metav1.Duration{Duration: timeout}
		for _, o := range []client.Object{framework.OCIRepository("default", name, pushed), ks} {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		return ks
	}

	t.Run("a Kustomization waiting on a provider is Ready when the provider is", func(t *testing.T) {
		url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "kstatusok", "v0.1.0", map[string][]byte{
			"metadata.yaml":                  testMetadata("v1beta2"),
			"infrastructure-components.yaml": testComponents("kstatusok-system", "x"),
		})
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kstatusok"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url)}}
		ks := deliver(t, "kstatus-ok", p)
		if err := framework.WaitReady(ctx, c, ks, 3*time.Minute); err != nil {
			t.Fatal(err)
		}
		// kustomize-controller waited for the provider: by the time it
		// is Ready, so is the provider, at the generation it applied.
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		ready := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != p.Generation {
			t.Errorf("Kustomization Ready but the provider's Ready is %+v", ready)
		}
		if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReconcilingCondition); c != nil {
			t.Errorf("a Ready provider is still Reconciling: %+v", c)
		}
		deleteKustomization(t, ctx, c, ks)
		waitGone(t, ctx, c, p, 2*time.Minute)
	})

	t.Run("a Kustomization waiting on a refused provider fails before its timeout, naming it", func(t *testing.T) {
		url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "kstatusold", "v0.1.0", map[string][]byte{
			"metadata.yaml":                  testMetadata("v1alpha4"),
			"infrastructure-components.yaml": testComponents("kstatusold-system", "x"),
		})
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kstatusold"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url)}}
		start := time.Now()
		ks := deliver(t, "kstatus-refused", p)
		var last string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
				return false, nil
			}
			r := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			if r == nil {
				return false, nil
			}
			last = string(r.Status) + " " + r.Reason + ": " + r.Message
			return r.Status == metav1.ConditionFalse && r.Reason == meta.HealthCheckFailedReason, nil
		})
		if err != nil {
			t.Fatalf("the Kustomization did not fail its health check within 2m (timeout %s); last Ready: %s", timeout, last)
		}
		t.Logf("failed after %s: %s", time.Since(start).Round(time.Second), last)
		if !strings.Contains(last, "InfrastructureProvider/default/kstatusold") {
			t.Errorf("the failure should name the provider: %s", last)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		stalled := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.StalledCondition)
		if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != v1alpha1.IncompatibleContractReason {
			t.Errorf("the refused provider's Stalled is %+v, want True IncompatibleContract", stalled)
		}
		if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReconcilingCondition); c != nil {
			t.Errorf("a stalled provider is also Reconciling: %+v", c)
		}
		waitResourceInfo(t, ctx, "InfrastructureProvider", "default", "kstatusold", func(l map[string]string) bool {
			return l != nil && l["ready"] == "False" && l["reason"] == v1alpha1.IncompatibleContractReason
		})
		deleteKustomization(t, ctx, c, ks)
		waitGone(t, ctx, c, p, 2*time.Minute)
		waitResourceInfo(t, ctx, "InfrastructureProvider", "default", "kstatusold", func(l map[string]string) bool { return l == nil })
	})
}

// deleteKustomization deletes a Kustomization; Flux prunes what it applied.
func deleteKustomization(t *testing.T, ctx context.Context, c client.Client, ks *kustomizev1.Kustomization) {
	t.Helper()
	if err := c.Delete(ctx, ks); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}

// reconcileRequestReachesFlux asks a Ready provider to reconcile, as
// `flux reconcile` would: the request reaches its OCIRepository and
// Kustomization, status.lastHandledReconcileAt acknowledges it, and
// nothing else is written — no status flapping while Flux re-runs, no
// events.
func reconcileRequestReachesFlux(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider) {
	time.Sleep(2 * time.Second)
	since := time.Now()
	requestReconcile(t, ctx, c, p)
	token := p.(client.Object).GetAnnotations()[meta.ReconcileRequestAnnotation]
	name := render.ObjectName(p.ProviderType(), p.GetName())
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p.(client.Object)), p.(client.Object)); err != nil {
			return false, nil
		}
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.GetNamespace(), Name: name}, ks); err != nil {
			return false, nil
		}
		return p.GetStatus().LastHandledReconcileAt == token && ks.Status.LastHandledReconcileAt == token, nil
	})
	if err != nil {
		t.Fatalf("request %s: provider acknowledged %q; want it handled by the provider and its Kustomization %s", token, p.GetStatus().LastHandledReconcileAt, name)
	}
	// Let Flux finish what the request started.
	time.Sleep(8 * time.Second)
	writes, err := env.Writes(plane.CapwrightUser, since)
	if err != nil {
		t.Fatal(err)
	}
	statusWrites := 0
	for _, w := range writes {
		switch {
		case w.Subresource == "status" && w.Name == p.GetName():
			statusWrites++
		case w.Subresource == "" && (w.Resource == "ocirepositories" || w.Resource == "kustomizations") && w.Name == name:
		default:
			t.Errorf("unexpected write for a reconcile request: %s", w)
		}
	}
	if statusWrites != 1 {
		t.Errorf("%d status writes for a reconcile request, want 1 (the acknowledgement): %v", statusWrites, writes)
	}
	if ready := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.ReadyCondition); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready after the request: %+v", ready)
	}
}
