package dryrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// The Runner against a fake API server: what it asks, in which cases it
// does not, and how it reads the answers. tests/e2e/dryrun runs it
// against a real one.

// fakeServer answers a Runner's requests: objects it holds exist, dry-run
// applies get what refuse says (nil: accepted), CRDs are read from its
// fake clientset.
type fakeServer struct {
	t      *testing.T
	refuse func(name string) error
	live   map[string]bool
	crds   *apiextensionsfake.Clientset

	mu      sync.Mutex
	applied []string
	options []metav1.PatchOptions
}

func newFakeServer(t *testing.T, refuse func(name string) error, live ...*unstructured.Unstructured) *fakeServer {
	t.Helper()
	s := &fakeServer{t: t, refuse: refuse, live: map[string]bool{}, crds: apiextensionsfake.NewClientset()}
	for _, o := range live {
		if o.GetKind() == "CustomResourceDefinition" {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
				t.Fatal(err)
			}
			if err := s.crds.Tracker().Add(&crd); err != nil {
				t.Fatal(err)
			}
			continue
		}
		s.live[o.GetNamespace()+"/"+o.GetName()] = true
	}
	return s
}

func (s *fakeServer) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return fakeResource{server: s, gvr: gvr}
}

// fakeResource is what a Runner uses of metadata.ResourceInterface.
type fakeResource struct {
	metadata.ResourceInterface
	server    *fakeServer
	gvr       schema.GroupVersionResource
	namespace string
}

func (r fakeResource) Namespace(ns string) metadata.ResourceInterface {
	r.namespace = ns
	return r
}

func (r fakeResource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*metav1.PartialObjectMetadata, error) {
	if !r.server.live[r.namespace+"/"+name] {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), name)
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: name}}, nil
}

func (r fakeResource) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (*metav1.PartialObjectMetadata, error) {
	s := r.server
	if pt != types.ApplyPatchType {
		s.t.Errorf("a %s patch of %s, want server-side apply", pt, name)
	}
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON(data); err != nil || obj.GetName() != name {
		s.t.Errorf("the apply of %s sent %s (%v)", name, data, err)
	}
	s.mu.Lock()
	s.applied = append(s.applied, name)
	s.options = append(s.options, opts)
	s.mu.Unlock()
	if s.refuse != nil {
		if err := s.refuse(name); err != nil {
			return nil, err
		}
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: name}}, nil
}

// mapper serves the core kinds, CRDs and Deployments, and nothing of
// Cluster API.
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), meta.RESTScopeRoot)
	return m
}

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

func configMap(namespace, name string) *unstructured.Unstructured {
	return object("v1", "ConfigMap", namespace, name)
}

func crdObject(t *testing.T, c *apiextensionsv1.CustomResourceDefinition) *unstructured.Unstructured {
	t.Helper()
	c = c.DeepCopy()
	c.APIVersion, c.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func run(t *testing.T, server *fakeServer, built *Built) (Result, error) {
	t.Helper()
	r := &Runner{objects: server, crds: server.crds.ApiextensionsV1().CustomResourceDefinitions(), mapper: mapper(), slots: make(chan struct{}, concurrency)}
	return r.Run(context.Background(), built)
}

func TestRunChecksWhatFluxWouldApply(t *testing.T) {
	disabled := configMap("capi-system", "left-alone")
	disabled.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/reconcile": "disabled"})
	ignored := configMap("capi-system", "ignored")
	ignored.SetLabels(map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "Ignore"})
	once := configMap("capi-system", "created-once")
	once.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"})
	onceNew := configMap("capi-system", "created-once-new")
	onceNew.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"})
	built := &Built{Objects: []*unstructured.Unstructured{
		object("v1", "Namespace", "", "capi-system"),
		object("v1", "Namespace", "", "capi-new"),
		crdObject(t, crd("v1beta1:s", "v1beta2:sS")),
		object("apps/v1", "Deployment", "capi-system", "capi-controller-manager"),
		object("cluster.x-k8s.io/v1beta2", "Cluster", "capi-system", "introduced"),
		configMap("capi-new", "in-a-new-namespace"),
		disabled, ignored, once, onceNew,
	}}
	server := newFakeServer(t, nil,
		object("v1", "Namespace", "", "capi-system"),
		crdObject(t, crd("v1alpha4:s", "v1beta1:sS")),
		configMap("capi-system", "created-once"),
	)
	res, err := run(t, server, built)
	if err != nil {
		t.Fatal(err)
	}
	wantApplied := []string{"capi-system", "capi-new", "clusters.cluster.x-k8s.io", "capi-controller-manager", "created-once-new"}
	slices.Sort(wantApplied)
	slices.Sort(server.applied)
	if !slices.Equal(server.applied, wantApplied) || res.Checked != len(wantApplied) {
		t.Errorf("applied %v (Checked %d), want %v", server.applied, res.Checked, wantApplied)
	}
	for _, o := range server.options {
		if !slices.Equal(o.DryRun, []string{metav1.DryRunAll}) || o.Force == nil || !*o.Force || o.FieldManager != FluxFieldManager {
			t.Errorf("applied with %+v, want a forced dry run as %s", o, FluxFieldManager)
		}
	}
	wantSkipped := []string{
		"Cluster capi-system/introduced: its kind is not served yet: the new CustomResourceDefinition clusters.cluster.x-k8s.io introduces it",
		"ConfigMap capi-new/in-a-new-namespace: its namespace capi-new is new: the new objects create it",
		"ConfigMap capi-system/left-alone: Flux does not apply it (kustomize.toolkit.fluxcd.io/reconcile: disabled)",
		"ConfigMap capi-system/ignored: Flux does not apply it (kustomize.toolkit.fluxcd.io/ssa: Ignore)",
		"ConfigMap capi-system/created-once: it exists, and Flux applies it only when absent (kustomize.toolkit.fluxcd.io/ssa: IfNotPresent)",
	}
	if !slices.Equal(res.Skipped, wantSkipped) {
		t.Errorf("Skipped =\n%s\nwant\n%s", strings.Join(res.Skipped, "\n"), strings.Join(wantSkipped, "\n"))
	}
	wantBlocked := []string{"CustomResourceDefinition clusters.cluster.x-k8s.io: the storage version moves from v1beta1 to v1beta2; it stops serving v1alpha4"}
	if !slices.Equal(res.RollbackBlocked, wantBlocked) {
		t.Errorf("RollbackBlocked = %q, want %q", res.RollbackBlocked, wantBlocked)
	}
	if res.Took <= 0 {
		t.Errorf("Took = %s", res.Took)
	}
}

// TestRunReportsTheFirstRefusal: whichever answer comes first, the
// refusal reported is the first object's in built order.
func TestRunReportsTheFirstRefusal(t *testing.T) {
	var objects []*unstructured.Unstructured
	for i := range 40 {
		objects = append(objects, configMap("capi-system", fmt.Sprintf("cm-%02d", i)))
	}
	for range 20 {
		server := newFakeServer(t, func(name string) error {
			if name == "cm-07" || name == "cm-31" || name == "cm-39" {
				return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, name, nil)
			}
			return nil
		})
		_, err := run(t, server, &Built{Objects: objects})
		var refusal *Refusal
		if !errors.As(err, &refusal) {
			t.Fatalf("Run = %v, want a refusal", err)
		}
		if refusal.Object != "ConfigMap capi-system/cm-07" || refusal.Message != `ConfigMap capi-system/cm-07: ConfigMap "cm-07" is invalid` {
			t.Fatalf("refusal = %+v, want cm-07's", refusal)
		}
	}
}

func TestRunTellsRefusalsFromFailures(t *testing.T) {
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, tc := range []struct {
		name    string
		err     error
		refusal string
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "m", nil), `Deployment capi-system/m: Deployment.apps "m" is invalid`},
		{"webhook", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: `admission webhook "validation.example.com" denied the request: no`}},
			`Deployment capi-system/m: admission webhook "validation.example.com" denied the request: no`},
		{"RBAC", apierrors.NewForbidden(deployments, "m", errors.New("cannot patch")), `Deployment capi-system/m: deployments.apps "m" is forbidden: cannot patch`},
		{"missing namespace", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "capi-system"), `Deployment capi-system/m: namespaces "capi-system" not found`},
		{"internal", apierrors.NewInternalError(errors.New("failed calling webhook")), ""},
		{"throttled", apierrors.NewTooManyRequests("later", 1), ""},
		{"unauthorized", apierrors.NewUnauthorized("who"), ""},
		{"connection", errors.New("connection refused"), ""},
		{"impersonation", apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, DryRunUser, errors.New("cannot impersonate")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := newFakeServer(t, func(string) error { return tc.err })
			_, err := run(t, server, &Built{Objects: []*unstructured.Unstructured{object("apps/v1", "Deployment", "capi-system", "m")}})
			var refusal *Refusal
			switch {
			case tc.refusal != "" && (!errors.As(err, &refusal) || refusal.Message != tc.refusal):
				t.Errorf("Run = %v, want the refusal %q", err, tc.refusal)
			case tc.refusal == "" && (err == nil || errors.As(err, &refusal)):
				t.Errorf("Run = %v, want an error that is no refusal", err)
			}
			if tc.name == "impersonation" && (err == nil || !strings.Contains(err.Error(), "may not impersonate")) {
				t.Errorf("Run = %v, want it to say the manager may not impersonate", err)
			}
		})
	}
}

func TestRunRefusesWhatTheClusterCannotTake(t *testing.T) {
	for _, tc := range []struct {
		obj  *unstructured.Unstructured
		want string
	}{
		{object("cluster.x-k8s.io/v1beta2", "Cluster", "capi-system", "c"),
			"Cluster capi-system/c: the cluster serves no Cluster in cluster.x-k8s.io/v1beta2, and no new CustomResourceDefinition does"},
		{configMap("", "no-namespace"),
			"ConfigMap no-namespace: its kind is namespaced and it has no namespace (set it, or the Kustomization's spec.targetNamespace)"},
	} {
		server := newFakeServer(t, nil)
		_, err := run(t, server, &Built{Objects: []*unstructured.Unstructured{tc.obj}})
		var refusal *Refusal
		if !errors.As(err, &refusal) || refusal.Message != tc.want {
			t.Errorf("Run = %v, want %q", err, tc.want)
		}
	}
}

// TestRunMasksSecretValues: neither a value the substitution read nor
// one of a Secret among the objects shows in what Run returns.
func TestRunMasksSecretValues(t *testing.T) {
	secret := object("v1", "Secret", "capi-system", "credentials")
	secret.Object["data"] = map[string]any{"password": "aHVudGVyMg=="} // hunter2
	built := &Built{
		Objects: []*unstructured.Unstructured{secret, configMap("capi-system", "named-s3cr3t")},
		masks:   []string{"s3cr3t"},
	}
	server := newFakeServer(t, func(name string) error {
		if name == "named-s3cr3t" {
			return apierrors.NewBadRequest(`ConfigMap "named-s3cr3t": data.password: Invalid value: "hunter2" (aHVudGVyMg==) ` + strings.Repeat("padding ", 200))
		}
		return nil
	})
	_, err := run(t, server, built)
	var refusal *Refusal
	if !errors.As(err, &refusal) {
		t.Fatalf("Run = %v, want a refusal", err)
	}
	for _, text := range []string{refusal.Object, refusal.Message} {
		for _, secret := range []string{"s3cr3t", "hunter2", "aHVudGVyMg=="} {
			if strings.Contains(text, secret) {
				t.Errorf("%q shows %s", text, secret)
			}
		}
	}
	if refusal.Object != "ConfigMap capi-system/named-***" || !strings.HasPrefix(refusal.Message, `ConfigMap capi-system/named-***: ConfigMap "named-***": data.password: Invalid value: "***" (***) padding`) {
		t.Errorf("refusal = %+v", refusal)
	}
	if len(refusal.Message) > maxMessage {
		t.Errorf("the message is %d bytes long", len(refusal.Message))
	}
}
