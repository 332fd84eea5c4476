package clusterctl

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ComponentNamespace returns the namespace the components install into:
// the name of their single Namespace object. clusterctl derives the default
// target namespace the same way; components without one, or with several,
// cannot be moved to the provider's namespace reliably.
func ComponentNamespace(components []byte) (string, error) {
	objs, err := decodeObjects(components)
	if err != nil {
		return "", err
	}
	return componentNamespace(objs)
}

func componentNamespace(objs []object) (string, error) {
	var names []string
	for _, o := range objs {
		if isNamespace(o) {
			names = append(names, o.GetName())
		}
	}
	switch len(names) {
	case 0:
		return "", errors.New("the components have no Namespace object: a provider's components must create the namespace they run in")
	case 1:
		return names[0], nil
	}
	return "", fmt.Errorf("the components have %d Namespace objects (%s), clusterctl allows exactly one: the provider's own namespace",
		len(names), strings.Join(names, ", "))
}

// isNamespace tells whether o is a core/v1 Namespace.
func isNamespace(o object) bool {
	return o.GetAPIVersion() == "v1" && o.GetKind() == "Namespace"
}

// isCRD tells whether o is a CustomResourceDefinition.
func isCRD(o object) bool {
	return o.GroupVersionKind().Group == "apiextensions.k8s.io" && o.GetKind() == "CustomResourceDefinition"
}

// definedKind is the group and kind a CustomResourceDefinition defines.
func definedKind(crd object) schema.GroupKind {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}
}

// CRDKinds returns the group and kind of every CustomResourceDefinition in
// the components, sorted: the kinds whose objects must be gone before the
// provider may be deleted.
func CRDKinds(components []byte) ([]schema.GroupKind, error) {
	objs, err := decodeObjects(components)
	if err != nil {
		return nil, err
	}
	var kinds []schema.GroupKind
	for _, o := range objs {
		if !isCRD(o) {
			continue
		}
		gk := definedKind(o)
		if gk.Group == "" || gk.Kind == "" {
			return nil, fmt.Errorf("%s: spec.group and spec.names.kind are required", o)
		}
		kinds = append(kinds, gk)
	}
	slices.SortFunc(kinds, func(a, b schema.GroupKind) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Kind, b.Kind))
	})
	return slices.Compact(kinds), nil
}

// ForeignKinds returns, sorted, the group, version and kind of every
// object of the components whose kind no CustomResourceDefinition of the
// components defines, leaving out groups: the kinds the cluster must
// already serve for the components to apply (cert-manager's Certificate
// and Issuer, most often, besides Kubernetes' own kinds).
func (c *Components) ForeignKinds(leaveOut map[string]bool) []schema.GroupVersionKind {
	defined := map[schema.GroupKind]bool{}
	for _, o := range c.objs {
		if isCRD(o) {
			defined[definedKind(o)] = true
		}
	}
	var kinds []schema.GroupVersionKind
	for _, o := range c.objs {
		gvk := o.GroupVersionKind()
		if gvk.Kind == "" || defined[gvk.GroupKind()] || leaveOut[gvk.Group] {
			continue
		}
		kinds = append(kinds, gvk)
	}
	slices.SortFunc(kinds, func(a, b schema.GroupVersionKind) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Version, b.Version), strings.Compare(a.Kind, b.Kind))
	})
	return slices.Compact(kinds)
}
