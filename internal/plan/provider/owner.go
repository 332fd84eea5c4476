package provider

import (
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// What the sync does besides the writes, named by the plan so that the
// sync needs nothing of the provider but its Desired: whose objects they
// are (Owner), which to suspend, which artifacts to serve again or to
// stop serving, the release copy to keep, clusterctl's inventory object
// to record, and what the Flux objects read back are expected to show
// (Expect).

// Owner is the provider a plan is for, as the sync names it: its memory
// keys, its release copy, its inventory.
type Owner struct {
	// Kind is the provider's kind (CoreProvider, …), Type its provider
	// type (core, bootstrap, …).
	Kind, Type      string
	Namespace, Name string
	UID             types.UID
	// Generation is the provider's generation the plan is for.
	Generation int64
}

// ProviderType, GetNamespace and GetName name the provider's release
// copy (releasecopy).
func (o Owner) ProviderType() string { return o.Type }

// GetNamespace is the provider's namespace.
func (o Owner) GetNamespace() string { return o.Namespace }

// GetName is the provider's name.
func (o Owner) GetName() string { return o.Name }

// ObjectName names the provider's components' Flux objects.
func (o Owner) ObjectName() string { return render.ObjectName(o.Type, o.Name) }

// AdditionalName names the Flux objects of its additional manifests.
func (o Owner) AdditionalName() string { return render.AdditionalObjectName(o.Type, o.Name) }

// Components are the Flux objects named after the provider, existing or
// not (named, empty): its OCIRepository or the ExternalArtifact of its
// release, and its Kustomization or HelmRelease.
func (o Owner) Components() []plan.Object {
	m := metav1.ObjectMeta{Namespace: o.Namespace, Name: o.ObjectName()}
	r := metav1.ObjectMeta{Namespace: o.Namespace, Name: o.RollbackSourceName()}
	return []plan.Object{&kustomizev1.Kustomization{ObjectMeta: m}, &helmv2.HelmRelease{ObjectMeta: m}, &sourcev1.OCIRepository{ObjectMeta: m},
		&sourcev1.ExternalArtifact{ObjectMeta: m}, &sourcev1.OCIRepository{ObjectMeta: r}, &sourcev1.ExternalArtifact{ObjectMeta: r}}
}

// RollbackSourceName names the source of its last good version while a
// failed upgrade is rolled back.
func (o Owner) RollbackSourceName() string { return render.RollbackSourceName(o.Type, o.Name) }

// Additional are the Flux objects of spec.additionalManifests, existing
// or not (named, empty).
func (o Owner) Additional() []plan.Object {
	m := metav1.ObjectMeta{Namespace: o.Namespace, Name: o.AdditionalName()}
	return []plan.Object{&kustomizev1.Kustomization{ObjectMeta: m}, &sourcev1.ExternalArtifact{ObjectMeta: m}}
}

// InventoryGVK is clusterctl's inventory kind: one Provider object per
// installed provider, which `clusterctl describe`, `clusterctl move` and
// `clusterctl upgrade plan` read.
var InventoryGVK = schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "Provider"}

// clusterctlTypes maps provider types to the inventory's type names.
var clusterctlTypes = map[string]string{
	v1alpha1.CoreProviderType:             "CoreProvider",
	v1alpha1.BootstrapProviderType:        "BootstrapProvider",
	v1alpha1.ControlPlaneProviderType:     "ControlPlaneProvider",
	v1alpha1.InfrastructureProviderType:   "InfrastructureProvider",
	v1alpha1.IPAMProviderType:             "IPAMProvider",
	v1alpha1.RuntimeExtensionProviderType: "RuntimeExtensionProvider",
	v1alpha1.AddonProviderType:            "AddonProvider",
}

// ClusterctlType is the inventory's type name of a provider type
// (CoreProvider, BootstrapProvider, …).
func ClusterctlType(providerType string) string { return clusterctlTypes[providerType] }

// Inventory is clusterctl's inventory object of the provider, without
// its version (what the Flux objects show installed): the name and
// labels clusterctl gives it, so an adopted provider's entry, which
// clusterctl created, is taken over in place.
func Inventory(p v1alpha1.Provider, kind string) *unstructured.Unstructured {
	name := InventoryName(p)
	inv := &unstructured.Unstructured{}
	inv.SetGroupVersionKind(InventoryGVK)
	inv.SetNamespace(p.GetNamespace())
	inv.SetName(name)
	inv.SetLabels(map[string]string{
		clusterctl.LabelProvider:   name,
		clusterctl.LabelClusterctl: "",
		clusterctl.LabelCore:       clusterctl.LabelCoreInventory,
		v1alpha1.ProviderKindLabel: kind,
		v1alpha1.ProviderNameLabel: p.GetName(),
	})
	inv.Object["providerName"] = p.GetName()
	inv.Object["type"] = clusterctlTypes[p.ProviderType()]
	return inv
}

// owned fills in what the sync does besides the writes, on every path.
func owned(f Facts, d *Desired) {
	p := f.Provider
	d.Owner = OwnerOf(p, f.Kind)
	d.Objects = append(d.Owner.Components(), d.Owner.Additional()...)
	served, unserved := d.Owner.ObjectName(), d.Owner.RollbackSourceName()
	if d.RollingBack {
		served, unserved = unserved, served
	}
	d.Served = []string{served, d.Owner.AdditionalName()}
	d.Unserved = append(d.Unserved, unserved)
	if !d.Additional {
		d.Unserved = append(d.Unserved, d.Owner.AdditionalName())
	}
	if !d.Release {
		d.Unserved = append(d.Unserved, served)
	}
	d.Inventory = Inventory(p, f.Kind)
	d.Expect = expect(p, d)
}

// OwnerOf names p, of kind, as the sync does.
func OwnerOf(p v1alpha1.Provider, kind string) Owner {
	return Owner{Kind: kind, Type: p.ProviderType(), Namespace: p.GetNamespace(), Name: p.GetName(), UID: p.GetUID(), Generation: p.GetGeneration()}
}

// expect is what the fold reads the Flux objects against: the provider's
// generation, the version and revision Flux is to apply, what was
// installed before, and which Flux objects are its source, its applier
// and its additional manifests'; the sync reads those back into it.
func expect(p v1alpha1.Provider, d *Desired) health.ProviderInput {
	spec, status := p.GetSpec(), p.GetStatus()
	in := health.ProviderInput{
		Generation:               p.GetGeneration(),
		DesiredVersion:           spec.Version,
		PreviousInstalledVersion: status.InstalledVersion,
		Suspended:                spec.Suspend,
		PreviousFluxObjects:      status.FluxObjects,
	}
	art := status.Artifact
	if d.Status.Artifact != nil {
		art = d.Status.Artifact
	}
	if art != nil {
		// The OCIRepository is pinned by digest, so Flux reports the bare
		// digest as its revision (tag@digest is for people).
		in.ExpectedRevision = art.Digest
		// What Flux applies is the version that artifact was checked
		// for: while a new spec.version is refused, the one installed
		// before is what runs, and is what Installed names.
		if tag, _, ok := strings.Cut(art.Revision, "@"); ok && tag != "" {
			in.DesiredVersion = tag
		}
	}
	ns, name := p.GetNamespace(), render.ObjectName(p.ProviderType(), p.GetName())
	in.Source = health.Observation{Kind: sourcev1.OCIRepositoryKind, Namespace: ns, Name: name}
	if d.RollingBack {
		in.Source.Name = render.RollbackSourceName(p.ProviderType(), p.GetName())
	}
	if d.Release {
		in.Source.Kind = sourcev1.ExternalArtifactKind
	}
	in.Apply = health.Observation{Kind: kustomizev1.KustomizationKind, Namespace: ns, Name: name}
	if render.IsChart(p) {
		in.Apply.Kind = helmv2.HelmReleaseKind
	} else if spec.AdditionalManifests != nil {
		extra := render.AdditionalObjectName(p.ProviderType(), p.GetName())
		in.AdditionalSource = health.Observation{Kind: sourcev1.ExternalArtifactKind, Namespace: ns, Name: extra}
		in.AdditionalApply = health.Observation{Kind: kustomizev1.KustomizationKind, Namespace: ns, Name: extra}
	}
	return in
}
