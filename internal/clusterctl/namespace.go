package clusterctl

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/fluxcd/pkg/apis/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Annotations through which cert-manager's CA injector finds the CA to put
// into webhook configurations, CRDs and APIServices: "<namespace>/<name>" of
// a Certificate or of a Secret.
const (
	annotationInjectCAFrom       = "cert-manager.io/inject-ca-from"
	annotationInjectCAFromSecret = "cert-manager.io/inject-ca-from-secret"
)

// NamespacePatches returns the Flux Kustomization patches that, together
// with spec.targetNamespace, move provider components from their own
// namespace (ComponentNamespace) into targetNamespace the way clusterctl's
// `init --target-namespace` does (fixTargetNamespace in
// cmd/clusterctl/client/repository/components.go). It returns nil when
// targetNamespace is the components' own namespace.
//
// What kustomize (api v0.21.1, the one Flux v2.9 builds with) does by itself
// for `namespace:` / spec.targetNamespace:
//   - sets metadata.namespace on every namespaced object, including custom
//     kinds such as cert-manager Certificates and Issuers;
//   - renames the v1 Namespace object to the target namespace;
//   - sets spec.conversion.webhook.clientConfig.service.namespace of CRDs and
//     spec.service.namespace of APIServices (namespace field specs);
//   - sets the namespace of RoleBinding and ClusterRoleBinding subjects named
//     "default" only (setRoleBindingSubjects: defaultOnly);
//   - its name-reference pass also re-points ServiceAccount subjects and
//     webhook clientConfig.service references, but only to a ServiceAccount
//     or Service of the same build, which is a heuristic we do not rely on.
//
// What it never does, and the patches below do, each a JSON6902 replace of a
// value that names the old namespace:
//   - RoleBinding/ClusterRoleBinding subjects of kind ServiceAccount in the
//     old namespace;
//   - webhooks[].clientConfig.service.namespace of Mutating- and
//     ValidatingWebhookConfigurations that point into the old namespace;
//   - cert-manager.io/inject-ca-from(-secret) annotations "<old>/<name>" on
//     any object;
//   - cert-manager Certificate spec.dnsNames "<svc>.<old>.svc[…]".
//
// Flux puts spec.patches and spec.targetNamespace into one generated
// kustomization.yaml, where kustomize runs patches before the namespace
// transformer. The patches therefore select objects by group, version, kind
// and exact name only (names do not change), never by namespace, and they
// write final values, so they are correct in either order.
func NamespacePatches(components []byte, targetNamespace string) ([]kustomize.Patch, error) {
	if errs := validation.IsDNS1123Label(targetNamespace); len(errs) > 0 {
		return nil, fmt.Errorf("target namespace %q is not a valid namespace name: %s", targetNamespace, strings.Join(errs, "; "))
	}
	c, err := Decode(components)
	if err != nil {
		return nil, err
	}
	return c.NamespacePatches(targetNamespace)
}

// NamespacePatches is NamespacePatches of decoded components.
func (c *Components) NamespacePatches(targetNamespace string) ([]kustomize.Patch, error) {
	if errs := validation.IsDNS1123Label(targetNamespace); len(errs) > 0 {
		return nil, fmt.Errorf("target namespace %q is not a valid namespace name: %s", targetNamespace, strings.Join(errs, "; "))
	}
	objs := c.objs
	current, err := componentNamespace(objs)
	if err != nil {
		return nil, err
	}
	if current == targetNamespace {
		return nil, nil
	}
	move := namespaceMove{from: current, to: targetNamespace}
	var patches []kustomize.Patch
	for _, o := range objs {
		ops, err := move.ops(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o, err)
		}
		if len(ops) == 0 {
			continue
		}
		patch, err := yaml.Marshal(ops)
		if err != nil {
			return nil, fmt.Errorf("%s: encoding namespace patch: %w", o, err)
		}
		gvk := o.GroupVersionKind()
		patches = append(patches, kustomize.Patch{
			Patch: string(patch),
			Target: &kustomize.Selector{
				Group:   gvk.Group,
				Version: gvk.Version,
				Kind:    gvk.Kind,
				// Selector names are anchored regular expressions.
				Name: regexp.QuoteMeta(o.GetName()),
			},
		})
	}
	return patches, nil
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// namespaceMove computes the operations that finish moving one object from
// one namespace to another after kustomize's namespace transformer.
type namespaceMove struct {
	from, to string
}

func (m namespaceMove) ops(o object) ([]jsonPatchOp, error) {
	ops, err := m.injectCAOps(o)
	if err != nil {
		return nil, err
	}
	group := o.GroupVersionKind().Group
	var more []jsonPatchOp
	switch {
	case group == "rbac.authorization.k8s.io" && (o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding"):
		more, err = m.subjectOps(o)
	case group == "admissionregistration.k8s.io" && (o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration"):
		more, err = m.webhookOps(o)
	case group == "cert-manager.io" && o.GetKind() == "Certificate":
		more, err = m.dnsNameOps(o)
	}
	if err != nil {
		return nil, err
	}
	return append(ops, more...), nil
}

// injectCAOps re-points cert-manager CA injection annotations.
func (m namespaceMove) injectCAOps(o object) ([]jsonPatchOp, error) {
	var ops []jsonPatchOp
	annotations := o.GetAnnotations()
	for _, key := range []string{annotationInjectCAFrom, annotationInjectCAFromSecret} {
		value, ok := annotations[key]
		if !ok {
			continue
		}
		namespace, name, found := strings.Cut(value, "/")
		if !found || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("annotation %s is %q, expected <namespace>/<name>", key, value)
		}
		if namespace == m.from {
			ops = append(ops, replace("/metadata/annotations/"+escapePointer(key), m.to+"/"+name))
		}
	}
	return ops, nil
}

// subjectOps re-points ServiceAccount subjects of a (Cluster)RoleBinding.
func (m namespaceMove) subjectOps(o object) ([]jsonPatchOp, error) {
	subjects, _, err := unstructured.NestedSlice(o.Object, "subjects")
	if err != nil {
		return nil, fmt.Errorf("reading subjects: %w", err)
	}
	var ops []jsonPatchOp
	for i, s := range subjects {
		subject, _ := s.(map[string]any)
		if subject["kind"] == "ServiceAccount" && subject["namespace"] == m.from {
			ops = append(ops, replace(fmt.Sprintf("/subjects/%d/namespace", i), m.to))
		}
	}
	return ops, nil
}

// webhookOps re-points the services of admission webhooks.
func (m namespaceMove) webhookOps(o object) ([]jsonPatchOp, error) {
	webhooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return nil, fmt.Errorf("reading webhooks: %w", err)
	}
	var ops []jsonPatchOp
	for i, w := range webhooks {
		webhook, _ := w.(map[string]any)
		namespace, _, _ := unstructured.NestedString(webhook, "clientConfig", "service", "namespace")
		if namespace == m.from {
			ops = append(ops, replace(fmt.Sprintf("/webhooks/%d/clientConfig/service/namespace", i), m.to))
		}
	}
	return ops, nil
}

// dnsNameOps rewrites the service DNS names a webhook serving certificate
// is issued for, <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local,
// replacing the first ".<old>." as clusterctl does.
func (m namespaceMove) dnsNameOps(o object) ([]jsonPatchOp, error) {
	names, _, err := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
	if err != nil {
		return nil, fmt.Errorf("reading spec.dnsNames: %w", err)
	}
	var ops []jsonPatchOp
	for i, name := range names {
		fixed := strings.Replace(name, "."+m.from+".", "."+m.to+".", 1)
		if fixed != name {
			ops = append(ops, replace(fmt.Sprintf("/spec/dnsNames/%d", i), fixed))
		}
	}
	return ops, nil
}

func replace(path string, value any) jsonPatchOp {
	return jsonPatchOp{Op: "replace", Path: path, Value: value}
}

// escapePointer escapes a key for use in a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
