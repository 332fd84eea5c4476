// Package fluxobjects reads back the Flux objects Capwright writes: their
// kinds, to list them, and the inventory of an applier (Kustomization,
// HelmRelease), what Flux applied for it. `capwright status`, `capwright
// diff` and the provider controller's deletion read them through it.
package fluxobjects

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fluxcd/cli-utils/pkg/object"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is a Flux kind Capwright writes.
type Kind struct {
	Kind    string
	NewList func() client.ObjectList
}

// Kinds are the Flux kinds Capwright writes, sources first, then
// appliers: the order `capwright status` shows them in.
func Kinds() []Kind {
	return []Kind{
		{sourcev1.OCIRepositoryKind, func() client.ObjectList { return &sourcev1.OCIRepositoryList{} }},
		{sourcev1.ExternalArtifactKind, func() client.ObjectList { return &sourcev1.ExternalArtifactList{} }},
		{kustomizev1.KustomizationKind, func() client.ObjectList { return &kustomizev1.KustomizationList{} }},
		{helmv2.HelmReleaseKind, func() client.ObjectList { return &helmv2.HelmReleaseList{} }},
	}
}

// KindOf is the Flux kind of o, "" for another object.
func KindOf(o client.Object) string {
	switch o.(type) {
	case *sourcev1.OCIRepository:
		return sourcev1.OCIRepositoryKind
	case *sourcev1.ExternalArtifact:
		return sourcev1.ExternalArtifactKind
	case *kustomizev1.Kustomization:
		return kustomizev1.KustomizationKind
	case *helmv2.HelmRelease:
		return helmv2.HelmReleaseKind
	}
	return ""
}

// KindOrder is o's place in Kinds, -1 for another object.
func KindOrder(o client.Object) int {
	kind := KindOf(o)
	return slices.IndexFunc(Kinds(), func(k Kind) bool { return k.Kind == kind })
}

// Items are the objects of a filled list.
func Items(list client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		obj, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not an object", o)
		}
		out = append(out, obj)
	}
	return out, nil
}

// NotServed tells whether err says the cluster does not serve a kind (its
// CRD is missing: Capwright, or Flux, is not installed there).
func NotServed(err error) bool {
	var noMatch *meta.NoKindMatchError
	return errors.As(err, &noMatch) || meta.IsNoMatchError(err)
}

// Entry is one object of an applier's status.inventory.
type Entry struct {
	// ID is <namespace>_<name>_<group>_<kind>.
	ID string
	// Version is the API version it was applied as.
	Version string
}

// Inventory is what a Kustomization or a HelmRelease (helm-controller
// records what the release holds) says it applied; nil for another
// object, or one that has applied nothing yet.
func Inventory(o client.Object) []Entry {
	var entries []Entry
	switch obj := o.(type) {
	case *kustomizev1.Kustomization:
		if obj.Status.Inventory != nil {
			for _, e := range obj.Status.Inventory.Entries {
				entries = append(entries, Entry{ID: e.ID, Version: e.Version})
			}
		}
	case *helmv2.HelmRelease:
		if obj.Status.Inventory != nil {
			for _, e := range obj.Status.Inventory.Entries {
				entries = append(entries, Entry{ID: e.ID, Version: e.Version})
			}
		}
	}
	return entries
}

// Object is the applied object an entry names.
func (e Entry) Object() (Applied, error) {
	id, err := object.ParseObjMetadata(e.ID)
	if err != nil {
		return Applied{}, fmt.Errorf("inventory entry %q: %w", e.ID, err)
	}
	return Applied{Namespace: id.Namespace, Name: id.Name, GroupVersionKind: id.GroupKind.WithVersion(e.Version)}, nil
}

// Applied is an object Flux applied.
type Applied struct {
	Namespace, Name string
	schema.GroupVersionKind
}

// ID is the inventory ID of an object: <namespace>_<name>_<group>_<kind>.
func ID(namespace, name, group, kind string) string {
	return object.ObjMetadata{Namespace: namespace, Name: name, GroupKind: schema.GroupKind{Group: group, Kind: kind}}.String()
}
