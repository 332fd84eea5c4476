package health

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Observation is what health needs of one Flux object: a copy of its
// generation, status and revisions, so the fold never sees the object
// change under it.
type Observation struct {
	Kind, Name, Namespace string
	Generation            int64
	ObservedGeneration    int64
	Conditions            []metav1.Condition
	// Revision identifies what the object holds or applied: an
	// OCIRepository's artifact revision, a Kustomization's
	// lastAppliedRevision, the OCI digest of a HelmRelease's deployed
	// release. Flux writes tag@sha256:… for tag references and sha256:…
	// for digest references.
	Revision string
	// LastAttemptedRevision is what the object is applying or last tried
	// to: a Kustomization's lastAttemptedRevision, a HelmRelease's
	// lastAttemptedRevisionDigest.
	LastAttemptedRevision string
	// AttemptedGeneration is the generation a HelmRelease last ran a Helm
	// action for (status.lastAttemptedGeneration): a failure before that,
	// waiting for its source say, never reached the chart. 0 for the
	// other kinds.
	AttemptedGeneration int64
	// Missing is set when the object does not exist.
	Missing bool
}

// ObserveOCIRepository observes a source.
func ObserveOCIRepository(o *sourcev1.OCIRepository) Observation {
	obs := observation(sourcev1.OCIRepositoryKind, o.ObjectMeta, o.Status.ObservedGeneration, o.Status.Conditions)
	if o.Status.Artifact != nil {
		obs.Revision = o.Status.Artifact.Revision
	}
	return obs
}

// ObserveExternalArtifact observes the ExternalArtifact Capwright keeps
// for a provider's additional manifests. Its status has no
// observedGeneration: the Ready condition's says which generation the
// artifact is for.
func ObserveExternalArtifact(o *sourcev1.ExternalArtifact) Observation {
	obs := observation(sourcev1.ExternalArtifactKind, o.ObjectMeta, 0, o.Status.Conditions)
	for _, c := range o.Status.Conditions {
		if c.Type == meta.ReadyCondition {
			obs.ObservedGeneration = c.ObservedGeneration
		}
	}
	if o.Status.Artifact != nil {
		obs.Revision = o.Status.Artifact.Revision
	}
	return obs
}

// ObserveKustomization observes the applier of a provider-artifact.
func ObserveKustomization(k *kustomizev1.Kustomization) Observation {
	obs := observation(kustomizev1.KustomizationKind, k.ObjectMeta, k.Status.ObservedGeneration, k.Status.Conditions)
	obs.Revision = k.Status.LastAppliedRevision
	obs.LastAttemptedRevision = k.Status.LastAttemptedRevision
	return obs
}

// helmReleaseDeployed is the status of a snapshot whose release is the one
// currently deployed (Helm's release status "deployed").
const helmReleaseDeployed = "deployed"

// ObserveHelmRelease observes the applier of a chart. helm-controller
// records, per release, the OCI digest of the chart artifact it came from
// (snapshot ociDigest, the source's revision for a digest reference), and
// the digest it is attempting (status.lastAttemptedRevisionDigest); those
// identify the artifact, where the chart version alone would not. The
// revision is the deployed release's: after a failed upgrade rolled back,
// the newest snapshot is the rollback of the old chart.
func ObserveHelmRelease(h *helmv2.HelmRelease) Observation {
	obs := observation(helmv2.HelmReleaseKind, h.ObjectMeta, h.Status.ObservedGeneration, h.Status.Conditions)
	obs.LastAttemptedRevision = h.Status.LastAttemptedRevisionDigest
	obs.AttemptedGeneration = h.Status.LastAttemptedGeneration
	var deployed *helmv2.Snapshot
	for _, s := range h.Status.History { // History.Latest() would sort the caller's slice
		if s != nil && s.Status == helmReleaseDeployed && (deployed == nil || s.Version > deployed.Version) {
			deployed = s
		}
	}
	if deployed != nil {
		obs.Revision = deployed.OCIDigest
	}
	return obs
}

func observation(kind string, m metav1.ObjectMeta, observed int64, conds []metav1.Condition) Observation {
	return Observation{
		Kind: kind, Name: m.Name, Namespace: m.Namespace,
		Generation: m.Generation, ObservedGeneration: observed,
		Conditions: append([]metav1.Condition(nil), conds...),
	}
}

// Observe observes a Flux object of kind namespace/name as it was read:
// obj is nil (or of no Flux kind) when it was not found, and a missing
// object is an observation too. The one way every fold reads a Flux
// object.
func Observe(obj any, kind, namespace, name string) Observation {
	switch o := obj.(type) {
	case *sourcev1.OCIRepository:
		if o != nil {
			return ObserveOCIRepository(o)
		}
	case *sourcev1.ExternalArtifact:
		if o != nil {
			return ObserveExternalArtifact(o)
		}
	case *kustomizev1.Kustomization:
		if o != nil {
			return ObserveKustomization(o)
		}
	case *helmv2.HelmRelease:
		if o != nil {
			return ObserveHelmRelease(o)
		}
	}
	return Observation{Kind: kind, Name: name, Namespace: namespace, Missing: true}
}
