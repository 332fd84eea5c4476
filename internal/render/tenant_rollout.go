package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// A tenant with spec.rollout runs more than one revision of its stack at
// a time: the clusters a rollout has reached run the target, the others
// the last good revision. One source per namespace that follows the tag
// cannot express that, so such a tenant has, per namespace with selected
// clusters:
//
//   - the source that follows spec.stack's tag or semver range, as every
//     tenant has (TenantSourceName), which no cluster's object uses: it
//     tells the controller which artifact the spec resolves to now;
//   - one OCIRepository per revision in use there, pinned to the
//     artifact's digest (RevisionName), which the clusters' objects
//     on that revision use.
//
// A revision is the artifact's digest and the rest of spec.stack (values,
// substitutions, path, …), kept as a ControllerRevision in the tenant's
// management namespace (the way StatefulSets and DaemonSets keep theirs),
// so that a rollback can render the last good revision's objects after
// the spec moved on. At fleet scale this costs one or two OCIRepositories
// per namespace, not one per cluster: source-controller pulls each
// artifact once per namespace.

// RevisionIDLength is the length of a StackRevision's ID (hex).
const RevisionIDLength = 10

// StackSnapshot is one revision of a tenant's stack: the artifact Flux
// resolved and spec.stack as it was.
type StackSnapshot struct {
	// ID is RevisionID(Stack, Digest).
	ID string `json:"-"`
	// Number orders the snapshots of a tenant (ControllerRevision
	// revision).
	Number int64 `json:"-"`
	// Artifact is tag@sha256:digest (or sha256:digest) as Flux reported it.
	Artifact string `json:"artifact"`
	// Digest is the OCI manifest digest, sha256:….
	Digest string                    `json:"digest"`
	Stack  tenancyv1alpha1.StackSpec `json:"stack"`
}

// Revision is the snapshot's StackRevision.
func (s StackSnapshot) Revision() tenancyv1alpha1.StackRevision {
	return tenancyv1alpha1.StackRevision{ID: s.ID, Artifact: s.Artifact}
}

// RevisionID names a revision: a hash of the digest and of the stack
// without the fields that only choose the artifact (tag, version,
// semver), so that a tag moved to another digest is a new revision and a
// second tag of the same digest is not.
func RevisionID(stack tenancyv1alpha1.StackSpec, digest string) string {
	s := *stack.DeepCopy()
	if s.Chart != nil {
		s.Chart.Version, s.Chart.SemVer = "", ""
	}
	if s.Kustomize != nil {
		s.Kustomize.Tag, s.Kustomize.SemVer = "", ""
	}
	data, err := json.Marshal(s)
	if err != nil {
		// A StackSpec always marshals; a hash of nothing would collide.
		panic(fmt.Sprintf("render: marshalling a stack: %v", err))
	}
	sum := sha256.Sum256(append(append(data, 0), digest...))
	return hex.EncodeToString(sum[:])[:RevisionIDLength]
}

// ArtifactDigest is the digest of a revision as Flux reports it
// (tag@sha256:… or sha256:…), or "" when it names none.
func ArtifactDigest(revision string) string {
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		revision = revision[i+1:]
	}
	if !strings.HasPrefix(revision, "sha256:") || len(revision) != len("sha256:")+64 {
		return ""
	}
	return revision
}

// RevisionName names what Capwright keeps of one revision, in their
// different namespaces: the OCIRepository pinned to it and its
// ControllerRevision, "<tenant>-stack-<id>".
func RevisionName(tenant, id string) string { return TenantSourceName(tenant) + "-" + id }

// Snapshot is the ControllerRevision keeping one revision of the tenant's
// stack in its management namespace.
func Snapshot(t *tenancyv1alpha1.Tenant, s StackSnapshot) (*appsv1.ControllerRevision, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("render: encoding revision %s of Tenant %s: %w", s.ID, t.Name, err)
	}
	m := tenantMeta(t, t.ManagementNamespace(), RevisionName(t.Name, s.ID), true)
	m.Labels[tenancyv1alpha1.RevisionLabel] = s.ID
	return &appsv1.ControllerRevision{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "ControllerRevision"},
		ObjectMeta: m,
		Data:       runtime.RawExtension{Raw: data},
		Revision:   s.Number,
	}, nil
}

// SnapshotOf reads a revision back from its ControllerRevision; an error
// names what is wrong with it.
func SnapshotOf(cr *appsv1.ControllerRevision) (StackSnapshot, error) {
	var s StackSnapshot
	if err := json.Unmarshal(cr.Data.Raw, &s); err != nil {
		return s, fmt.Errorf("ControllerRevision %s/%s does not hold a stack revision: %w", cr.Namespace, cr.Name, err)
	}
	s.ID, s.Number = cr.Labels[tenancyv1alpha1.RevisionLabel], cr.Revision
	if s.ID == "" || s.ID != RevisionID(s.Stack, s.Digest) {
		return s, fmt.Errorf("ControllerRevision %s/%s: its %s label %q does not match what it holds", cr.Namespace, cr.Name, tenancyv1alpha1.RevisionLabel, s.ID)
	}
	return s, nil
}

// TenantRollout is what rendering a tenant with spec.rollout needs: the
// revision each cluster is to run, and which revisions each namespace
// keeps a source of.
type TenantRollout struct {
	// Pins are the revisions of the eligible clusters; an eligible
	// cluster without one gets no objects yet (a rollout has not reached
	// it and there is no last good revision).
	Pins map[types.NamespacedName]StackSnapshot
	// Sources are, per namespace, the revisions whose pinned sources it
	// keeps: its clusters' pins, and the revisions its pending clusters'
	// objects use.
	Sources map[string][]StackSnapshot
	// Snapshots are the revisions kept as ControllerRevisions.
	Snapshots []StackSnapshot
}

// pinnedTenant is the tenant as the snapshot's revision had it: its
// stack replaces the spec's.
func pinnedTenant(t *tenancyv1alpha1.Tenant, s StackSnapshot) *tenancyv1alpha1.Tenant {
	pinned := t.DeepCopy()
	pinned.Spec.Stack = *s.Stack.DeepCopy()
	return pinned
}

// pinnedSource is the OCIRepository of one revision in one namespace: the
// revision's repository and access, at its digest.
func pinnedSource(t *tenancyv1alpha1.Tenant, namespace string, s StackSnapshot) *sourcev1.OCIRepository {
	repo := tenantSource(pinnedTenant(t, s), namespace)
	repo.Name = RevisionName(t.Name, s.ID)
	repo.Labels[tenancyv1alpha1.RevisionLabel] = s.ID
	repo.Spec.Reference = &sourcev1.OCIRepositoryRef{Digest: s.Digest}
	return repo
}

// pinnedCluster renders one cluster's objects at a revision: the
// revision's stack, from the revision's source.
func pinnedCluster(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName, s StackSnapshot, createNamespace bool) (*TenantClusterObjects, error) {
	objs, err := tenantCluster(pinnedTenant(t, s), cluster, createNamespace)
	if err != nil {
		return nil, err
	}
	source := RevisionName(t.Name, s.ID)
	if objs.HelmRelease != nil {
		objs.HelmRelease.Labels[tenancyv1alpha1.RevisionLabel] = s.ID
		objs.HelmRelease.Spec.ChartRef.Name = source
	}
	if objs.Kustomization != nil {
		objs.Kustomization.Labels[tenancyv1alpha1.RevisionLabel] = s.ID
		objs.Kustomization.Spec.SourceRef.Name = source
	}
	return objs, nil
}

// ClusterRevision is the revision label of a cluster's Flux object, or "".
func ClusterRevision(o metav1.Object) string { return o.GetLabels()[tenancyv1alpha1.RevisionLabel] }
