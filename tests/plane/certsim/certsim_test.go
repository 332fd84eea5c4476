package certsim

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

func newFakeClient(objs ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	listKinds := map[schema.GroupVersionResource]string{
		gvrIssuer:        "IssuerList",
		gvrClusterIssuer: "ClusterIssuerList",
		gvrCertificate:   "CertificateList",
		gvrSecret:        "SecretList",
		gvrCRD:           "CustomResourceDefinitionList",
		gvrValidating:    "ValidatingWebhookConfigurationList",
		gvrMutating:      "MutatingWebhookConfigurationList",
		gvrAPIService:    "APIServiceList",
	}
	rt := make([]runtime.Object, len(objs))
	for i, o := range objs {
		rt[i] = o
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, rt...)
}

// newTestSimulator wires a simulator to the fake client. The fake cannot do
// server-side apply of unstructured objects (it would strategic-merge without
// a schema), so apply is played here: the applied object must be minimal, and
// it is merged into the live one the way SSA merges (maps by key, webhooks by
// name) and written with an Update, bumping resourceVersion as a server would.
func newTestSimulator(t *testing.T, client *dynamicfake.FakeDynamicClient) *simulator {
	t.Helper()
	s := newSimulator(client, func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if strings.Contains(line, "PRIVATE KEY") || strings.Contains(line, "CERTIFICATE-----") {
			t.Errorf("key material logged: %s", line)
		}
		t.Log(line)
	})
	s.listMeta = func(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.ObjectMeta, error) {
		l, err := client.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []metav1.ObjectMeta
		for _, o := range l.Items {
			out = append(out, metav1.ObjectMeta{Name: o.GetName(), Annotations: o.GetAnnotations(), ResourceVersion: o.GetResourceVersion()})
		}
		return out, nil
	}
	rv := 100
	s.apply = func(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		for k := range obj.Object {
			if !slices.Contains([]string{"apiVersion", "kind", "metadata", "spec", "webhooks"}, k) {
				t.Errorf("applied object has field %q", k)
			}
		}
		if md, _, _ := unstructured.NestedMap(obj.Object, "metadata"); len(md) != 1 {
			t.Errorf("applied metadata should hold only the name: %v", md)
		}
		live, err := client.Resource(gvr).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		merged := mergeApplied(live.Object, obj.DeepCopy().Object).(map[string]any)
		live = &unstructured.Unstructured{Object: merged}
		rv++
		live.SetResourceVersion(strconv.Itoa(rv))
		return client.Resource(gvr).Update(ctx, live, metav1.UpdateOptions{})
	}
	return s
}

func mergeApplied(live, applied any) any {
	switch a := applied.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return a
		}
		for k, v := range a {
			l[k] = mergeApplied(l[k], v)
		}
		return l
	case []any:
		l, _ := live.([]any)
	items:
		for _, item := range a {
			for i, li := range l {
				if lm, ok := li.(map[string]any); ok && lm["name"] == item.(map[string]any)["name"] {
					l[i] = mergeApplied(li, item)
					continue items
				}
			}
			l = append(l, item)
		}
		return l
	default:
		return applied
	}
}

func writes(c *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			out = append(out, fmt.Sprintf("%s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource()))
		}
	}
	return out
}

func obj(apiVersion, kind, ns, name string, annotations map[string]any, fields map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "generation": int64(3), "resourceVersion": "1"}
	if ns != "" {
		md["namespace"] = ns
	}
	if annotations != nil {
		md["annotations"] = annotations
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range fields {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

func certificateObj(ns, name, secret string, dnsNames ...any) *unstructured.Unstructured {
	return obj("cert-manager.io/v1", "Certificate", ns, name, nil, map[string]any{"spec": map[string]any{
		"secretName": secret,
		"dnsNames":   dnsNames,
		"issuerRef":  map[string]any{"name": "selfsigned", "kind": "Issuer"},
	}})
}

func injectFrom(ref string) map[string]any { return map[string]any{annotationInjectFrom: ref} }

func webhookConfig(kind, name string, annotations map[string]any, hooks ...string) *unstructured.Unstructured {
	var list []any
	for _, h := range hooks {
		list = append(list, map[string]any{
			"name":                    h,
			"sideEffects":             "None",
			"admissionReviewVersions": []any{"v1"},
			"clientConfig":            map[string]any{"service": map[string]any{"name": "webhook", "namespace": "capi-system", "path": "/" + h}},
		})
	}
	return obj("admissionregistration.k8s.io/v1", kind, "", name, annotations, map[string]any{"webhooks": list})
}

func crdObj(name, strategy string, annotations map[string]any) *unstructured.Unstructured {
	conversion := map[string]any{"strategy": strategy}
	if strategy == "Webhook" {
		conversion["webhook"] = map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig":             map[string]any{"service": map[string]any{"name": "webhook", "namespace": "capi-system", "path": "/convert"}},
		}
	}
	return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name, annotations,
		map[string]any{"spec": map[string]any{"group": "example.com", "scope": "Namespaced", "conversion": conversion}})
}

// tlsSecret returns a Secret as a previous run might have left it, issued by
// a CA other than the simulator's.
func tlsSecret(t *testing.T, ns, name string, dnsNames ...string) *unstructured.Unstructured {
	t.Helper()
	now := time.Now()
	ca, _, err := newAuthority(now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, _, err := ca.issue(leafRequest{dnsNames: dnsNames}, now)
	if err != nil {
		t.Fatal(err)
	}
	return obj("v1", "Secret", ns, name, nil, map[string]any{
		"type": "kubernetes.io/tls",
		"data": map[string]any{"tls.crt": b64(certPEM), "tls.key": b64(keyPEM), "ca.crt": b64(ca.certPEM)},
	})
}

func get(t *testing.T, c *dynamicfake.FakeDynamicClient, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := c.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return o
}

func str(o *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(o.Object, path...)
	return s
}

func checkReady(t *testing.T, o *unstructured.Unstructured, reason string) {
	t.Helper()
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	if len(conds) != 1 {
		t.Fatalf("%s %s: want one condition, got %v", o.GetKind(), o.GetName(), conds)
	}
	c := conds[0].(map[string]any)
	if c["type"] != "Ready" || c["status"] != "True" || c["reason"] != reason || c["observedGeneration"] != int64(3) || c["lastTransitionTime"] == "" {
		t.Errorf("%s %s: condition %v", o.GetKind(), o.GetName(), c)
	}
}

// checkServingSecret checks that a Secret holds a key pair for req that
// its ca.crt verifies, and returns its tls.crt.
func checkServingSecret(t *testing.T, sec *unstructured.Unstructured, req leafRequest) string {
	t.Helper()
	if got := str(sec, "type"); got != "kubernetes.io/tls" {
		t.Errorf("secret type %q", got)
	}
	caPEM := secretBytes(sec, "ca.crt")
	leaf, err := checkLeaf(secretBytes(sec, "tls.crt"), secretBytes(sec, "tls.key"), caPEM, req, time.Now())
	if err != nil {
		t.Fatalf("secret %s: %v", sec.GetName(), err)
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("ext key usages %v", leaf.ExtKeyUsage)
	}
	return str(sec, "data", "tls.crt")
}

func TestPass(t *testing.T) {
	ctx := context.Background()
	wrongSecret := tlsSecret(t, "capi-system", "wrong-tls", "old.example.com")
	keptSecret := tlsSecret(t, "capi-system", "kept-tls", "kept.capi-system.svc")
	wrongCert := certificateObj("capi-system", "wrong", "wrong-tls", "new.capi-system.svc")
	_ = unstructured.SetNestedField(wrongCert.Object, int64(4), "status", "revision")

	tests := []struct {
		name    string
		objects []*unstructured.Unstructured
		check   func(t *testing.T, c *dynamicfake.FakeDynamicClient)
	}{{
		name: "issuers become ready",
		objects: []*unstructured.Unstructured{
			obj("cert-manager.io/v1", "Issuer", "capi-system", "selfsigned", nil, map[string]any{"spec": map[string]any{"selfSigned": map[string]any{}}}),
			obj("cert-manager.io/v1", "ClusterIssuer", "", "cluster", nil, map[string]any{"spec": map[string]any{"selfSigned": map[string]any{}}}),
		},
		check: func(t *testing.T, c *dynamicfake.FakeDynamicClient) {
			checkReady(t, get(t, c, gvrIssuer, "capi-system", "selfsigned"), "IsReady")
			checkReady(t, get(t, c, gvrClusterIssuer, "", "cluster"), "IsReady")
		},
	}, {
		name: "certificate is issued",
		objects: []*unstructured.Unstructured{func() *unstructured.Unstructured {
			o := certificateObj("capi-system", "serving", "serving-tls", "webhook.capi-system.svc", "webhook.capi-system.svc.cluster.local")
			_ = unstructured.SetNestedField(o.Object, "webhook", "spec", "commonName")
			_ = unstructured.SetNestedStringSlice(o.Object, []string{"10.0.0.1", "::1"}, "spec", "ipAddresses")
			_ = unstructured.SetNestedStringMap(o.Object, map[string]string{"team": "capi"}, "spec", "secretTemplate", "labels")
			_ = unstructured.SetNestedStringMap(o.Object, map[string]string{"note": "hi"}, "spec", "secretTemplate", "annotations")
			return o
		}()},
		check: func(t *testing.T, c *dynamicfake.FakeDynamicClient) {
			sec := get(t, c, gvrSecret, "capi-system", "serving-tls")
			certPEM, keyPEM, caPEM := secretBytes(sec, "tls.crt"), secretBytes(sec, "tls.key"), secretBytes(sec, "ca.crt")
			req := leafRequest{commonName: "webhook", dnsNames: []string{"webhook.capi-system.svc", "webhook.capi-system.svc.cluster.local"}, ips: []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("::1")}}
			leaf, err := checkLeaf(certPEM, keyPEM, caPEM, req, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if d := leaf.NotAfter.Sub(leaf.NotBefore); d != leafValidity {
				t.Errorf("validity %v", d)
			}
			checkServingSecret(t, sec, req)
			if caSec := get(t, c, gvrSecret, caSecretNamespace, caSecretName); str(caSec, "data", "tls.crt") != b64(caPEM) {
				t.Error("ca.crt is not the CA stored in kube-system/certsim-ca")
			}
			want := map[string]string{
				annotationCertificateName: "serving", annotationIssuerName: "selfsigned", annotationIssuerKind: "Issuer", "note": "hi",
			}
			for k, v := range want {
				if got := sec.GetAnnotations()[k]; got != v {
					t.Errorf("annotation %s = %q, want %q", k, got, v)
				}
			}
			if sec.GetLabels()["team"] != "capi" {
				t.Errorf("labels %v", sec.GetLabels())
			}
			cert := get(t, c, gvrCertificate, "capi-system", "serving")
			checkReady(t, cert, "Ready")
			if rev, _, _ := unstructured.NestedInt64(cert.Object, "status", "revision"); rev != 1 {
				t.Errorf("revision %d", rev)
			}
			if got := str(cert, "status", "notAfter"); got != rfc3339(leaf.NotAfter) {
				t.Errorf("notAfter %q", got)
			}
			if str(cert, "status", "notBefore") == "" || str(cert, "status", "renewalTime") == "" {
				t.Errorf("status %v", cert.Object["status"])
			}
		},
	}, {
		name:    "secret with other names is reissued",
		objects: []*unstructured.Unstructured{wrongCert, wrongSecret},
		check: func(t *testing.T, c *dynamicfake.FakeDynamicClient) {
			sec := get(t, c, gvrSecret, "capi-system", "wrong-tls")
			if checkServingSecret(t, sec, leafRequest{dnsNames: []string{"new.capi-system.svc"}}) == str(wrongSecret, "data", "tls.crt") {
				t.Error("not reissued")
			}
			cert := get(t, c, gvrCertificate, "capi-system", "wrong")
			if rev, _, _ := unstructured.NestedInt64(cert.Object, "status", "revision"); rev != 5 {
				t.Errorf("revision %d, want 5", rev)
			}
		},
	}, {
		name:    "valid secret from another CA is kept",
		objects: []*unstructured.Unstructured{certificateObj("capi-system", "kept", "kept-tls", "kept.capi-system.svc"), keptSecret},
		check: func(t *testing.T, c *dynamicfake.FakeDynamicClient) {
			sec := get(t, c, gvrSecret, "capi-system", "kept-tls")
			if checkServingSecret(t, sec, leafRequest{dnsNames: []string{"kept.capi-system.svc"}}) != str(keptSecret, "data", "tls.crt") {
				t.Error("reissued a valid secret")
			}
			if sec.GetAnnotations()[annotationCertificateName] != "kept" {
				t.Errorf("annotations %v", sec.GetAnnotations())
			}
			checkReady(t, get(t, c, gvrCertificate, "capi-system", "kept"), "Ready")
		},
	}, {
		name: "webhook configurations get the CA in every webhook",
		objects: []*unstructured.Unstructured{
			certificateObj("capi-system", "serving", "serving-tls", "webhook.capi-system.svc"),
			webhookConfig("ValidatingWebhookConfiguration", "capi-validating", injectFrom("capi-system/serving"), "a.example.com", "b.example.com"),
			webhookConfig("MutatingWebhookConfiguration", "capi-mutating", injectFrom("capi-system/serving"), "c.example.com", "d.example.com"),
			webhookConfig("MutatingWebhookConfiguration", "unrelated", nil, "e.example.com"),
		},
		check: func(t *testing.T, c *dynamicfake.FakeDynamicClient) {
			ca := str(get(t, c, gvrSecret, "capi-system", "serving-tls"), "data", "ca.crt")
			for _, w := range []struct {
				gvr  schema.GroupVersionResource
				name string
				want string
			}{{gvrValidating, "capi-validating", ca}, {gvrMutating, "capi-mutating", ca}, {gvrMutating, "unrelated", ""}} {
				hooks, _, _ := unstructured.NestedSlice(get(t, c, w.gvr, "", w.name).Object, "webhooks")
				for _, h := range hooks {
					hook := h.(map[string]any)
					if got, _, _ := unstructured.NestedString(hook, "clientConfig", "caBundle"); got != w.want {
						t.Errorf("%s webhook %s: caBundle %q, want %q", w.name, hook["name"], got, w.want)
					}
					if svc, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path"); svc != "/"+hook["name"].(string) || hook["sideEffects"] != "None" {
						t.Errorf("%s webhook %s lost fields: %v", w.name, hook["name"], hook)
					}
				}
			}
		},
	}, {
		name: "CRD with webhook conversion gets the CA",
		objects: []*unstructured.Unstructured{
			certificateObj("capi-system", "serving", "serving-tls", "webhook.capi-system.svc"),
			crdObj("clusters.example.com", "Webhook", injectFrom("capi-system/serving")),
			crdObj("machines.example.com", "None", injectFrom("capi-system/serving")),
		},
		check: func(t *testing.T, c *dynamicfake.FakeDynamicClient) {
			ca := str(get(t, c, gvrSecret, "capi-system", "serving-tls"), "data", "ca.crt")
			crd := get(t, c, gvrCRD, "", "clusters.example.com")
			if got := str(crd, "spec", "conversion", "webhook", "clientConfig", "caBundle"); got != ca || ca == "" {
				t.Errorf("caBundle %q, want %q", got, ca)
			}
			if str(crd, "spec", "conversion", "webhook", "clientConfig", "service", "path") != "/convert" {
				t.Errorf("CRD lost fields: %v", crd.Object["spec"])
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(get(t, c, gvrCRD, "", "machines.example.com").Object, "spec", "conversion", "webhook"); found {
				t.Error("CRD without webhook conversion was given one")
			}
		},
	}, {
		name: "APIService gets the CA from a secret",
		objects: []*unstructured.Unstructured{
			tlsSecret(t, "metrics", "metrics-tls", "metrics.svc"),
			obj("apiregistration.k8s.io/v1", "APIService", "", "v1beta1.metrics.k8s.io",
				map[string]any{annotationInjectFromSecret: "metrics/metrics-tls"}, map[string]any{"spec": map[string]any{"group": "metrics.k8s.io"}}),
		},
		check: func(t *testing.T, c *dynamicfake.FakeDynamicClient) {
			ca := str(get(t, c, gvrSecret, "metrics", "metrics-tls"), "data", "ca.crt")
			if got := str(get(t, c, gvrAPIService, "", "v1beta1.metrics.k8s.io"), "spec", "caBundle"); got != ca {
				t.Errorf("caBundle %q, want %q", got, ca)
			}
		},
	}}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []*unstructured.Unstructured
			for _, o := range tt.objects {
				objs = append(objs, o.DeepCopy())
			}
			c := newFakeClient(objs...)
			s := newTestSimulator(t, c)
			if err := s.pass(ctx); err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)

			c.ClearActions()
			if err := s.pass(ctx); err != nil {
				t.Fatal(err)
			}
			if w := writes(c); len(w) > 0 {
				t.Errorf("second pass wrote: %v", w)
			}

			// A restarted simulator reuses the stored CA and writes nothing.
			c.ClearActions()
			restarted := newTestSimulator(t, c)
			if err := restarted.pass(ctx); err != nil {
				t.Fatal(err)
			}
			if w := writes(c); len(w) > 0 {
				t.Errorf("restarted simulator wrote: %v", w)
			}
			if string(restarted.ca.certPEM) != string(s.ca.certPEM) {
				t.Error("restarted simulator did not reuse the CA")
			}
		})
	}
}

func TestDeletedSecretIsReissued(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(
		certificateObj("capi-system", "serving", "serving-tls", "webhook.capi-system.svc"),
		webhookConfig("ValidatingWebhookConfiguration", "capi", injectFrom("capi-system/serving"), "a.example.com"),
	)
	s := newTestSimulator(t, c)
	if err := s.pass(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Resource(gvrSecret).Namespace("capi-system").Delete(ctx, "serving-tls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.pass(ctx); err != nil {
		t.Fatal(err)
	}
	checkServingSecret(t, get(t, c, gvrSecret, "capi-system", "serving-tls"), leafRequest{dnsNames: []string{"webhook.capi-system.svc"}})
	if rev, _, _ := unstructured.NestedInt64(get(t, c, gvrCertificate, "capi-system", "serving").Object, "status", "revision"); rev != 2 {
		t.Errorf("revision %d, want 2", rev)
	}
}

func TestMissingKindsAreSkipped(t *testing.T) {
	c := newFakeClient(obj("cert-manager.io/v1", "ClusterIssuer", "", "cluster", nil, nil))
	notFound := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "cert-manager.io", Resource: "certificates"}, "")
	}
	c.PrependReactor("list", "certificates", notFound)
	c.PrependReactor("list", "issuers", notFound)
	var logs []string
	s := newTestSimulator(t, c)
	s.logf = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	if err := s.pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkReady(t, get(t, c, gvrClusterIssuer, "", "cluster"), "IsReady")
	for _, l := range logs {
		if strings.Contains(l, "listing") {
			t.Errorf("missing kind logged: %s", l)
		}
	}
}

func TestCorruptCASecretStops(t *testing.T) {
	c := newFakeClient(obj("v1", "Secret", caSecretNamespace, caSecretName, nil, map[string]any{
		"data": map[string]any{"tls.crt": base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}))},
	}))
	err := newTestSimulator(t, c).pass(context.Background())
	if !errors.Is(err, errCorruptCA) {
		t.Fatalf("got %v, want errCorruptCA", err)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Nothing listens there; Run must still return nil once ctx is done.
	if err := Run(ctx, &rest.Config{Host: "https://127.0.0.1:1"}, Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestChangesWakeAPass runs certsim's loop with a resync longer than the
// test: a Certificate created, and a webhook configuration annotated for
// injection, while it runs are served all the same, because passes follow
// the watches, not a clock.
func TestChangesWakeAPass(t *testing.T) {
	c := newFakeClient()
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	s := newTestSimulator(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watchAndReconcile(ctx, s, c, md, time.Hour) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// Let the first pass (the CA) and the informers' start go by.
	time.Sleep(500 * time.Millisecond)

	if _, err := c.Resource(gvrCertificate).Namespace("capi-system").Create(ctx, certificateObj("capi-system", "serving", "serving-tls", "webhook.capi-system.svc"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Certificate's Secret", func() bool {
		_, err := c.Resource(gvrSecret).Namespace("capi-system").Get(ctx, "serving-tls", metav1.GetOptions{})
		return err == nil
	})

	// Injection targets are watched by their metadata only.
	hook := webhookConfig("ValidatingWebhookConfiguration", "capi", injectFrom("capi-system/serving"), "a.example.com")
	if _, err := c.Resource(gvrValidating).Create(ctx, hook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "capi", Annotations: hook.GetAnnotations(), ResourceVersion: hook.GetResourceVersion()}}
	if _, err := md.Resource(gvrValidating).(metadatafake.MetadataClient).CreateFake(meta, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the webhook's CA bundle", func() bool {
		hooks, _, _ := unstructured.NestedSlice(get(t, c, gvrValidating, "", "capi").Object, "webhooks")
		if len(hooks) == 0 {
			return false
		}
		bundle, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle")
		return bundle != ""
	})
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come within 10s", what)
		}
	}
}
