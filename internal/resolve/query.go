package resolve

import (
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// query is what resolving a provider reads of it, once: who it is (the
// memory's keys), where its artifact comes from after the catalog and the
// mirror rules, what its spec pins and how it is reached, and what was
// installed for it. Everything after reads the query, not the provider.
type query struct {
	// obj is told to OnUnreachable; nothing else reads it.
	obj v1alpha1.Provider

	uid        types.UID
	generation int64
	// request is the reconcile request (reconcile.fluxcd.io/requestedAt)
	// the provider carries.
	request                       string
	providerType, name, namespace string
	// version is spec.version; chart tells a provider installed from an
	// OCI Helm chart.
	version string
	chart   bool
	// interval is how often the provider is looked at again.
	interval time.Duration

	// url is the OCI repository (ref: with spec.version's tag and the
	// digest spec.source.oci pins) or, for release, the release URL
	// (before the mirror rules); set by locate.
	url     string
	release bool
	ref     artifact.Reference
	// key is what the provider's source is remembered by (Resolutions),
	// and maxAge how long what it resolved to holds: half the interval for
	// an OCI tag, the recheck interval for a release.
	key    string
	maxAge time.Duration
	// pin is spec.source.release.digest.
	pin string
	// accessField and access are the registry access of spec.source.oci or
	// .chart and its field path (nil for a catalog provider); releaseSource
	// is spec.source.release.
	accessField   string
	access        *v1alpha1.OCIRegistryAccess
	releaseSource *v1alpha1.ReleaseSource

	// installed is status.artifact, installedVersion and contract what the
	// status says is installed; compatible tells that the Compatible
	// condition is True for the current generation.
	installed        *v1alpha1.ResolvedArtifact
	installedVersion string
	contract         string
	compatible       bool
}

// about reads obj into a query, without locating its artifact.
func (r *Resolver) about(obj v1alpha1.Provider) query {
	spec, status := obj.GetSpec(), obj.GetStatus()
	q := query{obj: obj, uid: obj.GetUID(), generation: obj.GetGeneration(), request: obj.GetAnnotations()[meta.ReconcileRequestAnnotation],
		providerType: obj.ProviderType(), name: obj.GetName(), namespace: obj.GetNamespace(), version: spec.Version,
		interval:  providerplan.Interval(obj, r.ResyncInterval),
		installed: status.Artifact, installedVersion: status.InstalledVersion, contract: status.Contract}
	switch src := spec.Source; {
	case src != nil && src.OCI != nil:
		q.accessField, q.access = "spec.source.oci", &src.OCI.OCIRegistryAccess
	case src != nil && src.Chart != nil:
		q.accessField, q.access, q.chart = "spec.source.chart", &src.Chart.OCIRegistryAccess, true
	case src != nil && src.Release != nil:
		q.releaseSource, q.pin = src.Release, src.Release.Digest
	}
	c := apimeta.FindStatusCondition(obj.GetConditions(), v1alpha1.CompatibleCondition)
	q.compatible = c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration()
	return q
}

// locate sets where the provider's artifact comes from: the catalog and
// the mirror rules turn its spec into an OCI repository or a release URL.
func (r *Resolver) locate(q *query) error {
	loc, err := catalog.Locate(q.obj, r.catalogOptions())
	if err != nil {
		return err
	}
	if loc.Release != "" {
		q.url, q.release = loc.Release, true
		q.key, q.maxAge = "release "+q.url+"@"+q.version, r.releaseRecheck()
		return nil
	}
	q.url = loc.OCI
	q.ref, err = artifact.ParseURL(loc.OCI)
	if err != nil {
		return fmt.Errorf("artifact URL %s: %v", loc.OCI, err)
	}
	q.ref.Tag = q.version
	if src := q.obj.GetSpec().Source; src != nil && src.OCI != nil {
		q.ref.Digest = src.OCI.Digest
	}
	q.key, q.maxAge = q.ref.String(), q.interval/2
	return nil
}

// sourceURL is the URL an artifact of the provider's source is recorded
// with: its OCI repository, or its release URL.
func (q *query) sourceURL() string {
	if q.release {
		return q.url
	}
	return q.ref.URL()
}

// ProviderType, GetNamespace and GetName name the provider's release
// copy (releasecopy.Of).
func (q *query) ProviderType() string { return q.providerType }

// GetNamespace is the provider's namespace.
func (q *query) GetNamespace() string { return q.namespace }

// GetName is the provider's name.
func (q *query) GetName() string { return q.name }
