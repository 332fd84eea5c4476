package render

import (
	"errors"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/opencontainers/go-digest"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// Defaults of the generated Flux objects when the provider leaves
// spec.interval and spec.timeout unset.
const (
	DefaultInterval = 10 * time.Minute
	DefaultTimeout  = 5 * time.Minute
)

// Input is a provider and what preflight established about it. The
// controller fills it from the cluster and the checked artifact; `capwright
// build` fills it offline.
type Input struct {
	// Provider is the custom resource to render.
	Provider v1alpha1.Provider

	// Kind is the provider's kind (CoreProvider, …) for owner references.
	// Optional: render asks the api package's scheme, which is the owner of
	// that fact; when set it must agree.
	Kind string

	// ArtifactURL is the repository preflight read, oci://… after registry
	// mirror rules. Tag is the version (= spec.version). Digest is the
	// manifest digest preflight checked (sha256:…); the OCIRepository is
	// pinned to it.
	ArtifactURL, Tag, Digest string

	// Insecure reaches the registry over plain HTTP although the provider
	// has no source of its own: a mirror the controller was told is plain
	// HTTP. spec.source.*.insecure still applies.
	Insecure bool

	// ComponentsFile is the artifact's components file, e.g.
	// core-components.yaml; the only file the Kustomization sees.
	ComponentsFile string

	// Release is set for a provider installed from release files
	// (spec.source.release, or the catalog's release URL): Flux reads the
	// checked files from an ExternalArtifact the controller serves
	// (ReleaseArtifact packs it; Digest is its digest), not from an
	// OCIRepository. ArtifactURL is then the release URL.
	Release bool

	// ProviderLabel is the value of clusterctl's cluster.x-k8s.io/provider
	// label for this provider ("cluster-api", "bootstrap-kubeadm", …).
	ProviderLabel string

	// NamespacePatches are clusterctl's namespace fixes for installing the
	// components into the provider's namespace. They come first among the
	// Kustomization's patches. Ignored for chart sources.
	NamespacePatches []kustomize.Patch
	// Rollback renders the last good version of a provider whose upgrade
	// failed: its source is named RollbackSourceName, so the
	// Kustomization moves to it and drops the CRDs in one write (moving
	// the provider's own source first would have kustomize-controller
	// apply the old artifact, CRDs and all, with the Kustomization it
	// still has), and the CustomResourceDefinitions are left out of the
	// build: the newer ones in the cluster stay.
	Rollback bool

	// CoreDependency is the core provider's Kustomization, which a
	// non-core provider's Kustomization depends on when its components
	// hold objects of the core's kinds; nil otherwise, and for the core
	// provider. Providers that need only the core's contract install side
	// by side with it. Flux can only depend on a Kustomization from a
	// Kustomization, so it is not used for chart sources.
	CoreDependency *meta.NamespacedObjectReference

	// MirrorImages rewrite images for registry mirror rules. They come
	// before spec.images, and an entry of spec.images with the same name
	// replaces the mirror's.
	MirrorImages []kustomize.Image

	// ManagerDeployment is the name of the components' Deployment that
	// runs the provider's controller manager, and ManagerArgs the args of
	// its container named "manager" as the components give them.
	// spec.manager and spec.deployment patch that Deployment: a strategic
	// merge can only replace a container's args as a whole, so render
	// computes the whole list from ManagerArgs. Without ManagerDeployment
	// the patch targets Deployments labelled cluster.x-k8s.io/provider=
	// ProviderLabel, which Cluster API's own providers carry on their one
	// controller Deployment.
	ManagerDeployment string
	ManagerArgs       []string

	// SkipCRDSubstitution is set when no CustomResourceDefinition of the
	// components holds a variable (clusterctl.Components.
	// CRDsSubstitutionFree): the CRDs are then annotated
	// kustomize.toolkit.fluxcd.io/substitute: disabled and Flux builds
	// the provider faster. Left false, every object is substituted.
	SkipCRDSubstitution bool
}

// RenderedObjects are the Flux objects of one provider: the OCIRepository
// and exactly one of Kustomization (provider-artifact layout) or
// HelmRelease (chart source); with spec.additionalManifests also the
// ExternalArtifact and the Kustomization of the additional manifests.
type RenderedObjects struct {
	// OCIRepository is nil for a release, whose components come from
	// ComponentsArtifact.
	OCIRepository      *sourcev1.OCIRepository
	ComponentsArtifact *sourcev1.ExternalArtifact
	Kustomization      *kustomizev1.Kustomization
	HelmRelease        *helmv2.HelmRelease

	AdditionalArtifact      *sourcev1.ExternalArtifact
	AdditionalKustomization *kustomizev1.Kustomization
}

// ObjectName names the Flux objects of a provider: "<type>-<name>", e.g.
// core-cluster-api or control-plane-kubeadm. Two providers of different
// types may share a name (kubeadm), so the type is part of it.
func ObjectName(providerType, name string) string { return providerType + "-" + name }

// RollbackSourceName names the source of a provider's last good version
// while its failed upgrade is rolled back (Input.Rollback).
func RollbackSourceName(providerType, name string) string {
	return ObjectName(providerType, name) + "-rollback"
}

// Provider renders the Flux objects of a provider. It returns an error when
// the input is incomplete (preflight did not run) or the spec asks for
// something Flux cannot do; the message names the field and the fix.
func Provider(in Input) (*RenderedObjects, error) {
	om, err := checkInput(in)
	if err != nil {
		return nil, err
	}
	if IsChart(in.Provider) {
		return renderChart(in, om)
	}
	return renderComponents(in, om)
}

// Source renders only the provider's OCIRepository, exactly as Provider
// renders it. It needs the resolved artifact (URL, tag, digest, components
// file) but nothing preflight reads from the components, so the controller
// can have Flux fetch a provider's artifact while the rest of preflight
// runs, before anything refers to it.
func Source(in Input) (*sourcev1.OCIRepository, error) {
	om, err := checkInput(in)
	if err != nil {
		return nil, err
	}
	if IsChart(in.Provider) {
		if err := checkChartSpec(in); err != nil {
			return nil, err
		}
		return chartSource(in, om), nil
	}
	return componentsSource(in, om)
}

// checkInput refuses an incomplete input or a spec no Flux object can be
// rendered from, and returns the objects' shared metadata.
func checkInput(in Input) (objectMeta, error) {
	if in.Provider == nil {
		return objectMeta{}, errors.New("render: no provider given")
	}
	if err := checkArtifact(in); err != nil {
		return objectMeta{}, err
	}
	om, err := newObjectMeta(in)
	if err != nil {
		return objectMeta{}, err
	}
	spec := in.Provider.GetSpec()
	if spec.Source != nil && spec.Source.OCI != nil && spec.Source.Chart != nil {
		return objectMeta{}, errors.New("spec.source: both oci and chart are set; keep oci for a provider-artifact (components file) or chart for an OCI Helm chart")
	}
	if err := CheckAdditionalManifests(in.Provider); err != nil {
		return objectMeta{}, err
	}
	return om, nil
}

// IsChart tells whether the provider is packaged as a Helm chart
// (spec.source.chart): its Flux objects are an OCIRepository of the chart
// and a HelmRelease.
func IsChart(p v1alpha1.Provider) bool {
	src := p.GetSpec().Source
	return src != nil && src.Chart != nil
}

// componentsSource is the OCIRepository of a provider-artifact, filtered
// to the components file.
func componentsSource(in Input, om objectMeta) (*sourcev1.OCIRepository, error) {
	if in.ComponentsFile == "" {
		return nil, errors.New("render: the components file is unknown; preflight must read the artifact first")
	}
	var access *v1alpha1.OCIRegistryAccess
	if src := in.Provider.GetSpec().Source; src != nil && src.OCI != nil {
		access = &src.OCI.OCIRegistryAccess
	}
	repo := ociRepository(in, om, access)
	ignore := componentsOnly(in.ComponentsFile)
	repo.Spec.Ignore = &ignore
	return repo, nil
}

// renderComponents renders a provider-artifact: OCIRepository filtered to
// the components file plus the Kustomization applying it; for a release,
// the ExternalArtifact of the checked files plus the Kustomization
// applying its components directory.
func renderComponents(in Input, om objectMeta) (*RenderedObjects, error) {
	out := &RenderedObjects{}
	src := om
	if in.Rollback {
		src.name = RollbackSourceName(in.Provider.ProviderType(), in.Provider.GetName())
	}
	if in.Release {
		if in.ComponentsFile == "" {
			return nil, errors.New("render: the components file is unknown; preflight must read the release first")
		}
		out.ComponentsArtifact = externalArtifact(in, src)
	} else {
		repo, err := componentsSource(in, src)
		if err != nil {
			return nil, err
		}
		out.OCIRepository = repo
	}
	ks, err := kustomization(in, om)
	if err != nil {
		return nil, err
	}
	ks.Spec.SourceRef.Name = src.name
	if in.Release {
		ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: src.name}
		ks.Spec.Path = "./" + ReleaseComponentsDir
	}
	out.Kustomization = ks
	out.AdditionalArtifact, out.AdditionalKustomization, err = renderAdditional(in, om, ks)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkArtifact refuses to render without the facts preflight establishes:
// an OCIRepository without a checked digest could install anything the tag
// points at.
func checkArtifact(in Input) error {
	spec := in.Provider.GetSpec()
	switch {
	case in.ArtifactURL == "" || in.Digest == "" || in.Tag == "":
		return errors.New("render: the artifact URL, tag and digest are required; preflight must check the artifact first")
	case !isSHA256(in.Digest):
		return fmt.Errorf("render: artifact digest %q is not sha256: followed by 64 lower-case hex digits", in.Digest)
	case in.Tag != spec.Version:
		return fmt.Errorf("render: the checked artifact is tag %s but spec.version is %s; preflight must check spec.version", in.Tag, spec.Version)
	}
	return nil
}

// isSHA256 reports whether s is a valid sha256 OCI digest, the only
// algorithm preflight resolves tags to.
func isSHA256(s string) bool {
	d, err := digest.Parse(s)
	return err == nil && d.Algorithm() == digest.SHA256
}
