package clusterctl_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

const targetNamespace = "capi-custom"

// clusterScoped tells the cluster-scoped kinds in Cluster API components.
func clusterScoped(kind string) bool {
	switch kind {
	case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		return true
	}
	return false
}

// TestNamespacePatchesMoveRealComponents builds the real components with
// kustomize exactly as Flux's generated kustomization.yaml does
// (`namespace:` from spec.targetNamespace plus spec.patches) and checks that
// nothing refers to the original namespace any more.
func TestNamespacePatchesMoveRealComponents(t *testing.T) {
	for _, file := range []string{"core-components.yaml", "bootstrap-components.yaml", "control-plane-components.yaml"} {
		raw := clusterctltest.Read(t, clusterctltest.Current, file)
		original, err := clusterctl.ComponentNamespace(raw)
		if err != nil {
			t.Fatalf("%s: ComponentNamespace: %v", file, err)
		}
		patches, err := clusterctl.NamespacePatches(raw, targetNamespace)
		if err != nil {
			t.Fatalf("%s: NamespacePatches: %v", file, err)
		}
		if len(patches) == 0 {
			t.Fatalf("%s: no patches, but kustomize alone leaves references to %s", file, original)
		}
		// Flux builds the raw components and substitutes afterwards; the brief
		// for this test also asks for the components with defaults applied.
		substituted, err := envsubst.Eval(string(raw), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("%s: substituting defaults: %v", file, err)
		}
		for name, components := range map[string][]byte{"raw": raw, "defaults": []byte(substituted)} {
			t.Run(file+"/"+name, func(t *testing.T) {
				out := clusterctltest.KustomizeBuild(t, components, targetNamespace, patches)
				if loc := regexp.MustCompile(`.*\b` + regexp.QuoteMeta(original) + `\b.*`).Find(out); loc != nil {
					t.Errorf("the build still refers to %s: %q", original, loc)
				}
				assertMoved(t, parseObjects(t, out))
			})
		}
	}
}

// assertMoved checks every place clusterctl's fixTargetNamespace touches.
func assertMoved(t *testing.T, objs []unstructured.Unstructured) {
	t.Helper()
	namespaces := 0
	for _, o := range objs {
		id := o.GetKind() + " " + o.GetName()
		switch {
		case o.GetKind() == "Namespace":
			namespaces++
			if o.GetName() != targetNamespace {
				t.Errorf("Namespace is named %q, want %q", o.GetName(), targetNamespace)
			}
		case clusterScoped(o.GetKind()):
			if o.GetNamespace() != "" {
				t.Errorf("%s is cluster-scoped but has namespace %q", id, o.GetNamespace())
			}
		case o.GetNamespace() != targetNamespace:
			t.Errorf("%s is in namespace %q, want %q", id, o.GetNamespace(), targetNamespace)
		}
		if v, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok && !strings.HasPrefix(v, targetNamespace+"/") {
			t.Errorf("%s: inject-ca-from is %q", id, v)
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if ns := s.(map[string]any)["namespace"]; ns != nil && ns != targetNamespace {
				t.Errorf("%s: subject %v", id, s)
			}
		}
		webhooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, w := range webhooks {
			if ns, _, _ := unstructured.NestedString(w.(map[string]any), "clientConfig", "service", "namespace"); ns != targetNamespace {
				t.Errorf("%s: webhook service namespace %q", id, ns)
			}
		}
		if ns, ok, _ := unstructured.NestedString(o.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace"); ok && ns != targetNamespace {
			t.Errorf("%s: conversion webhook service namespace %q", id, ns)
		}
		dnsNames, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
		for _, name := range dnsNames {
			if !strings.Contains(name, "."+targetNamespace+".svc") {
				t.Errorf("%s: dnsName %q", id, name)
			}
		}
	}
	if namespaces != 1 {
		t.Errorf("%d Namespace objects, want 1", namespaces)
	}
}

// TestKustomizeAloneLeavesReferences pins down what kustomize's namespace
// transformer does not change, i.e. why NamespacePatches exists: if a
// kustomize upgrade starts fixing these, the patches may shrink.
func TestKustomizeAloneLeavesReferences(t *testing.T) {
	raw := clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml")
	out := clusterctltest.KustomizeBuild(t, raw, targetNamespace, nil)
	left := map[string]bool{}
	for _, line := range regexp.MustCompile(`.*\bcapi-system\b.*`).FindAll(out, -1) {
		key, _, _ := strings.Cut(strings.TrimSpace(string(line)), ":")
		left[key] = true
	}
	want := map[string]bool{
		"cert-manager.io/inject-ca-from":                       true, // CRDs and webhook configurations
		"- capi-webhook-service.capi-system.svc":               true, // Certificate dnsNames
		"- capi-webhook-service.capi-system.svc.cluster.local": true,
	}
	for key := range left {
		if !want[key] {
			t.Errorf("kustomize alone now leaves %q referring to capi-system; extend the test and NamespacePatches' doc", key)
		}
	}
	for key := range want {
		if !left[key] {
			t.Errorf("kustomize alone now fixes %q: NamespacePatches may no longer need that patch", key)
		}
	}
}

// Kustomize's name references re-point subjects and webhook services only
// to a ServiceAccount or Service of the same build; the patches do not
// depend on that.
func TestNamespacePatchesWithoutReferencedObjects(t *testing.T) {
	components := []byte(`apiVersion: v1
kind: Namespace
metadata: {name: old}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: manager}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: manager}
subjects:
- {kind: ServiceAccount, name: elsewhere, namespace: kube-system}
- {kind: ServiceAccount, name: manager, namespace: old}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: hooks
  annotations: {cert-manager.io/inject-ca-from-secret: old/webhook-cert}
webhooks:
- name: a.example.com
  clientConfig: {url: "https://hooks.example.com"}
  sideEffects: None
  admissionReviewVersions: [v1]
- name: b.example.com
  clientConfig: {service: {name: webhook, namespace: old, path: /validate}}
  sideEffects: None
  admissionReviewVersions: [v1]
`)
	patches, err := clusterctl.NamespacePatches(components, "new")
	if err != nil {
		t.Fatalf("NamespacePatches: %v", err)
	}
	out := clusterctltest.KustomizeBuild(t, components, "new", patches)
	if regexp.MustCompile(`\bold\b`).Match(out) {
		t.Errorf("the build still refers to namespace old:\n%s", out)
	}
	objs := parseObjects(t, out)
	if len(objs) != 3 || objs[0].GetName() != "new" {
		t.Fatalf("unexpected build:\n%s", out)
	}
	subjects, _, _ := unstructured.NestedSlice(objs[1].Object, "subjects")
	if ns := subjects[0].(map[string]any)["namespace"]; ns != "kube-system" {
		t.Errorf("a subject in another namespace moved to %v", ns)
	}
	if ns := subjects[1].(map[string]any)["namespace"]; ns != "new" {
		t.Errorf("the provider's subject is in %v, want new", ns)
	}
	webhooks, _, _ := unstructured.NestedSlice(objs[2].Object, "webhooks")
	if ns, _, _ := unstructured.NestedString(webhooks[1].(map[string]any), "clientConfig", "service", "namespace"); ns != "new" {
		t.Errorf("webhook service namespace is %q, want new", ns)
	}
	if v := objs[2].GetAnnotations()["cert-manager.io/inject-ca-from-secret"]; v != "new/webhook-cert" {
		t.Errorf("inject-ca-from-secret is %q", v)
	}
}

func TestNamespacePatchesSameNamespace(t *testing.T) {
	raw := clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml")
	patches, err := clusterctl.NamespacePatches(raw, "capi-system")
	if err != nil || patches != nil {
		t.Errorf("NamespacePatches to the components' own namespace = %v, %v; want nil, nil", patches, err)
	}
}

func TestNamespacePatchesErrors(t *testing.T) {
	tests := []struct{ name, data, target, want string }{
		{"invalid target", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n", "Not_A_Namespace", `"Not_A_Namespace" is not a valid namespace name`},
		{"no namespace", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "b", "no Namespace object"},
		{"bad annotation", `apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: hooks
  annotations: {cert-manager.io/inject-ca-from: just-a-name}
`, "b", `ValidatingWebhookConfiguration hooks (document 2): annotation cert-manager.io/inject-ca-from is "just-a-name"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clusterctl.NamespacePatches([]byte(tt.data), tt.target)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NamespacePatches error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func parseObjects(t *testing.T, data []byte) []unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("reading kustomize output: %v", err)
		}
		var o map[string]any
		if err := utilyaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("decoding kustomize output: %v", err)
		}
		if len(o) > 0 {
			objs = append(objs, unstructured.Unstructured{Object: o})
		}
	}
}
