package providers

import (
	"context"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// webhooksOfMovedCore proves clusterctl's namespace fixes on the real
// core provider that Capwright installed into a namespace of the user's
// choosing (not the capi-system its components name): with the real
// Cluster API manager serving the webhooks of that namespace's
// capi-webhook-service, the API server calls them — a Cluster is created
// (defaulting and validating webhooks, failure policy Fail), read at
// v1beta1 (CRD conversion) and deleted (the manager's finalizer). Each
// fix is needed: the webhook configurations' Service references (else the
// call goes to capi-system, where nothing serves), cert-manager's CA
// injection annotations (else no caBundle trusts the serving
// certificate: StartCAPIManager waits for it) and the Certificate's DNS
// names (else the API server refuses the served certificate).
func webhooksOfMovedCore(t *testing.T, ctx context.Context, c client.Client, core *v1alpha1.CoreProvider) {
	ns := core.Namespace
	// The fixes, as applied.
	cert := &unstructured.Unstructured{}
	cert.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "capi-serving-cert"}, cert); err != nil {
		t.Fatal(err)
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if want := "capi-webhook-service." + ns + ".svc"; !slices.Contains(dnsNames, want) {
		t.Errorf("Certificate %s/capi-serving-cert names %v, not %s", ns, dnsNames, want)
	}
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "capi-validating-webhook-configuration"}, &validating); err != nil {
		t.Fatal(err)
	}
	if got := validating.Annotations["cert-manager.io/inject-ca-from"]; got != ns+"/capi-serving-cert" {
		t.Errorf("capi-validating-webhook-configuration injects its CA from %q, want %s/capi-serving-cert", got, ns)
	}
	for _, w := range validating.Webhooks {
		if s := w.ClientConfig.Service; s == nil || s.Namespace != ns {
			t.Errorf("validating webhook %s calls %+v, not a Service in %s", w.Name, s, ns)
		}
	}

	manager, err := env.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("the Cluster API manager for %s: %v", ns, err)
	}
	defer manager.Stop()
	if err := env.InstallTestInfraClusterCRD(ctx); err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters.cluster.x-k8s.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	if conv := crd.Spec.Conversion; conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil ||
		conv.Webhook.ClientConfig.Service.Namespace != ns || len(conv.Webhook.ClientConfig.CABundle) == 0 {
		t.Errorf("clusters.cluster.x-k8s.io converts through %+v, want a Service in %s with a caBundle", conv, ns)
	}

	cluster := plane.NewTestCluster("default", "moved-webhooks")
	if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
		t.Fatalf("creating a Cluster through the webhooks of %s/capi-webhook-service: %v", ns, err)
	}
	// v1beta1 is deprecated: its warning is not this test's business.
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v1beta1 := schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	if _, err := dyn.Resource(v1beta1).Namespace("default").Get(ctx, cluster.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("reading the Cluster at v1beta1 (conversion webhook of %s): %v", ns, err)
	}
	if err := c.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cluster), plane.NewTestCluster("default", "moved-webhooks"))
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("Cluster default/moved-webhooks was not finalized by the Cluster API manager of %s", ns)
	}
}
