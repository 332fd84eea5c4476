package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// withoutCertManager makes the plane a cluster where cert-manager is not
// installed: its CRDs are removed (no provider of the suite holds a
// Certificate at this point; it fails if one does). It returns what to
// call once the core provider was created: core must wait with
// Compatible MissingAPI naming cert-manager's API and the fix, nothing of
// it applied; then cert-manager's CRDs are installed again, and core must
// go on at once — the manager watches CRDs — well within the suite's
// resync interval (30s), which would otherwise be the delay. The CRDs
// are installed again at the end of the test whatever happens.
func withoutCertManager(t *testing.T, ctx context.Context, c client.Client) func(core *v1alpha1.CoreProvider) {
	t.Helper()
	certs := &unstructured.UnstructuredList{}
	certs.SetAPIVersion("cert-manager.io/v1")
	certs.SetKind("CertificateList")
	if err := c.List(ctx, certs); err != nil {
		t.Fatal(err)
	}
	if len(certs.Items) > 0 {
		t.Fatalf("%d Certificates exist (the first: %s/%s): removing cert-manager's CRDs would delete them; a test before this one left a provider installed",
			len(certs.Items), certs.Items[0].GetNamespace(), certs.Items[0].GetName())
	}
	if err := env.RemoveCertManagerCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := env.InstallCertManagerCRDs(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	return func(core *v1alpha1.CoreProvider) {
		t.Helper()
		t.Run("a provider that needs cert-manager waits for it, naming it, applying nothing", func(t *testing.T) {
			waitCondition(t, ctx, c, core, v1alpha1.CompatibleCondition, metav1.ConditionUnknown, v1alpha1.MissingAPIReason, 2*time.Minute)
			msg := conditionMessage(core, v1alpha1.CompatibleCondition)
			for _, want := range []string{"Certificate, Issuer of cert-manager.io/v1", "does not serve", "install cert-manager first", "spec.dependsOn"} {
				if !strings.Contains(msg, want) {
					t.Errorf("MissingAPI message %q does not say %q", msg, want)
				}
			}
			if cond := conditionStatus(core, v1alpha1.ReadyCondition); cond == metav1.ConditionTrue {
				t.Error("Ready is True while cert-manager is missing")
			}
			key := client.ObjectKey{Namespace: core.Namespace, Name: "core-cluster-api"}
			if err := c.Get(ctx, key, &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
				t.Errorf("a Kustomization %s was written while cert-manager is missing: %v", key, err)
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: core.Namespace, Name: "capi-controller-manager"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
				t.Errorf("the core's Deployment was applied while cert-manager is missing: %v", err)
			}
		})
		restore()
		installed := time.Now()
		t.Run("once cert-manager's CRDs are installed the provider goes on at once", func(t *testing.T) {
			waitCondition(t, ctx, c, core, v1alpha1.CompatibleCondition, metav1.ConditionTrue, "", 15*time.Second)
			t.Logf("cert-manager's CRDs installed: core Compatible %s later", time.Since(installed).Round(time.Millisecond))
		})
	}
}
