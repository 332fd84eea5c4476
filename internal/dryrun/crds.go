package dryrun

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crdVersions is what the dry run reads of a CRD: whose kind it defines,
// and which versions it serves and stores in. Read from the built object's
// map in place, not converted to the typed CRD, whose schemas are most of
// its bytes.
type crdVersions struct {
	name     string
	kind     schema.GroupKind
	versions []crdVersion
}

type crdVersion struct {
	name            string
	served, storage bool
}

// crdOf is obj's versions when it is a CRD, or nil.
func crdOf(obj *unstructured.Unstructured) (*crdVersions, error) {
	if obj.GroupVersionKind() != apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
		return nil, nil
	}
	bad := func(field string) error {
		return fmt.Errorf("CustomResourceDefinition %s: %s is not what a CRD holds", obj.GetName(), field)
	}
	group, _, err := unstructured.NestedString(obj.Object, "spec", "group")
	if err != nil {
		return nil, bad("spec.group")
	}
	kind, _, err := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	if err != nil {
		return nil, bad("spec.names.kind")
	}
	crd := &crdVersions{name: obj.GetName(), kind: schema.GroupKind{Group: group, Kind: kind}}
	list, _, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "versions")
	versions, ok := list.([]any)
	if err != nil || (list != nil && !ok) {
		return nil, bad("spec.versions")
	}
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad("spec.versions")
		}
		name, _, err1 := unstructured.NestedString(m, "name")
		served, _, err2 := unstructured.NestedBool(m, "served")
		storage, _, err3 := unstructured.NestedBool(m, "storage")
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, bad("spec.versions")
		}
		crd.versions = append(crd.versions, crdVersion{name: name, served: served, storage: storage})
	}
	return crd, nil
}

// versionsOf is what the dry run reads of an installed CRD.
func versionsOf(crd *apiextensionsv1.CustomResourceDefinition) *crdVersions {
	out := &crdVersions{name: crd.Name, kind: schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}}
	for _, v := range crd.Spec.Versions {
		out.versions = append(out.versions, crdVersion{name: v.Name, served: v.Served, storage: v.Storage})
	}
	return out
}

// introducing is the CRD among crds that serves gvk, or "".
func introducing(crds []*crdVersions, gvk schema.GroupVersionKind) string {
	for _, crd := range crds {
		if crd.kind != gvk.GroupKind() {
			continue
		}
		for _, v := range crd.versions {
			if v.name == gvk.Version && v.served {
				return crd.name
			}
		}
	}
	return ""
}

// rollbackBlocked says why going back from next to live, the CRD
// installed now, would not be safe, or "": once next is applied, objects
// are written in its storage version, which live may not read back, and
// whatever reads a version live serves and next does not (the installed
// controllers, users' tools) stops working before any rollback.
func rollbackBlocked(live, next *crdVersions) string {
	var why []string
	if from, to := live.storageVersion(), next.storageVersion(); from != "" && to != "" && from != to {
		why = append(why, fmt.Sprintf("the storage version moves from %s to %s", from, to))
	}
	served := map[string]bool{}
	for _, v := range next.versions {
		served[v.name] = v.served
	}
	var stopped []string
	for _, v := range live.versions {
		if v.served && !served[v.name] {
			stopped = append(stopped, v.name)
		}
	}
	if len(stopped) > 0 {
		why = append(why, "it stops serving "+strings.Join(stopped, ", "))
	}
	if len(why) == 0 {
		return ""
	}
	return "CustomResourceDefinition " + next.name + ": " + strings.Join(why, "; ")
}

// storageVersion is the version the CRD stores objects in.
func (c *crdVersions) storageVersion() string {
	for _, v := range c.versions {
		if v.storage {
			return v.name
		}
	}
	return ""
}
