package provider

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// Desired is what the plan wants done.
type Desired struct {
	// Status are the provider's status values the checks set, refused or
	// not.
	Status Status
	// Suspend: spec.suspend is set; the existing Flux objects are
	// suspended and nothing is written.
	Suspend bool
	// Keep: nothing is written; the Flux objects stay pinned to what was
	// checked (Artifact.Keep).
	Keep bool
	// Passed: every check passed (Keep aside).
	Passed bool
	// Adopting, on the reconcile that writes a first install over an
	// installation another tool made, says what is taken over (an
	// event's message).
	Adopting string
	// Resync is when to look again when nothing else asks sooner.
	Resync time.Duration
	// Additional: the additional manifests are served; false removes
	// their stored artifact.
	Additional bool
	// Release: the provider's components come from a release's
	// ExternalArtifact rather than an OCIRepository.
	Release bool
	// RollingBack: the last good version is planned, from a source of its
	// own (render.RollbackSourceName).
	RollingBack bool
	// Owner names the provider; Objects are the Flux objects named after
	// it, existing or not (its source, applier and additional manifests'),
	// which spec.suspend is carried to; Served names its
	// ExternalArtifacts, served again when the artifact storage lost them
	// while nothing is written, Unserved those whose stored artifacts go
	// once the writes are made (owner.go).
	Owner    Owner
	Objects  []plan.Object
	Served   []string
	Unserved []string
	// ReleaseCopy is the release the components' ExternalArtifact serves,
	// kept in the cluster once written; without one (an OCI source) any
	// copy is removed.
	ReleaseCopy []byte
	// Inventory is clusterctl's inventory object of the provider, recorded
	// with the version the Flux objects show installed once written.
	Inventory *unstructured.Unstructured
	// Expect is what the Flux objects read back are folded against.
	Expect health.ProviderInput
	// Sync is what is written, in order: the installer's ServiceAccount
	// and ClusterRoleBinding (Uncached, side by side: InstallerBatch), the OCIRepository, the
	// Kustomization or HelmRelease, then the additional manifests'
	// ExternalArtifact (with its Artifact) and Kustomization — or the
	// objects of additional manifests no longer wanted, pruned. Observe
	// holds the Flux objects the fold reads, whatever the path.
	Sync plan.Desired
}

// InstallerBatch is the Batch of the installer's ServiceAccount and
// ClusterRoleBinding: written side by side (a binding names its subject,
// which need not exist yet), before the Flux objects that name them, so
// Flux's first attempt already has its permissions.
const InstallerBatch = "installer"

// Status are the status values of the checks.
type Status struct {
	// LastAttemptedRevision is the revision resolved ("" leaves it).
	LastAttemptedRevision string
	// ArtifactResolved and Compatible are the conditions the checks
	// passed with (nil leaves them; a refusal sets its own).
	ArtifactResolved, Compatible *metav1.Condition
	// Artifact and Contract are what passed: set only then.
	Artifact *v1alpha1.ResolvedArtifact
	Contract string
}

// Group is the group of every write of a provider (plan.Write.Group):
// the first object that is someone else's stops the rest, as it stops the
// pruning and the nudges.
const Group = "provider"

// Plan checks the spec (no field Flux would take and then fail on) and the
// desired version — the tag did not move, the contract is
// known and compatible with the core's, no downgrade across minors, the
// provider is unique and not installed in another namespace, every
// variable has a value or a default, the additional manifests pack, the
// dependencies are Ready, and on a first install no object it would
// apply is another tool's — in that order,
// and renders the Flux objects that install it. A refusal (a
// *plan.Refusal) comes with the status values set before it and the
// objects to observe; nothing is then written.
func Plan(f Facts) (Desired, error) {
	d, err := checkAndRender(f)
	owned(f, &d)
	return d, err
}

func checkAndRender(f Facts) (Desired, error) {
	p := f.Provider
	d := Desired{Sync: observe(p, f.Release, f.RollingBack), Resync: f.Resync, Release: f.Release, RollingBack: f.RollingBack}
	if p.GetSpec().Suspend {
		d.Suspend = true
		return d, nil
	}
	// The spec first: what a refused resolution says comes after it.
	if err := checkSpec(f); err != nil {
		return d, err
	}
	if f.Refusal != nil {
		return d, f.Refusal
	}
	if err := checkTag(f); err != nil {
		return d, err
	}
	if f.Release && !f.ArtifactStorage {
		return d, Refusal(v1alpha1.ArtifactResolvedCondition, v1alpha1.ResolveFailedReason, fmt.Sprintf(
			"%s %s installs from the release at %s, which the manager serves Flux from its artifact storage, and the manager runs without it: start it with --artifact-storage-path (the chart and the release manifests set it), or give the provider an OCI source (spec.source.oci)",
			p.GetName(), p.GetSpec().Version, f.Artifact.URL), 0)
	}
	a := f.Artifact
	d.Status.LastAttemptedRevision = a.Revision
	switch {
	case a.Unreachable != "":
		reason := a.KeptReason
		if reason == "" {
			reason = v1alpha1.RegistryUnreachableReason
		}
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, reason, a.Unreachable)
	case a.Release != nil:
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason,
			fmt.Sprintf("release %s of %s fetched (%s) and checked; Flux applies it as %s", a.Tag, a.URL, DescribeFiles(a.Release.Files), a.Digest))
	case render.IsChart(p):
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason,
			fmt.Sprintf("%s:%s resolved to %s, a Helm chart", strings.TrimPrefix(a.URL, "oci://"), a.Tag, a.Digest))
	default:
		d.Status.ArtifactResolved = condition(v1alpha1.ArtifactResolvedCondition, metav1.ConditionTrue, v1alpha1.ResolvedReason,
			fmt.Sprintf("%s:%s resolved to %s and follows the provider-artifact layout", strings.TrimPrefix(a.URL, "oci://"), a.Tag, a.Digest))
	}
	if a.Keep {
		// Nothing to check again: Compatible stays as the check of this
		// version left it.
		d.Keep = true
		return d, nil
	}
	c, err := check(f, Owners)
	if err != nil {
		return d, err
	}
	contract := c.contract
	in := renderInput(f, c.coreDependency)
	if a.Checked == nil {
		d.Status.Compatible = condition(v1alpha1.CompatibleCondition, metav1.ConditionTrue, v1alpha1.CompatibleReason,
			fmt.Sprintf("%s %s can be installed (a chart declares no clusterctl contract)", p.GetName(), p.GetSpec().Version))
	} else {
		patches, err := a.Checked.NamespacePatches(p.GetNamespace())
		if err != nil {
			return d, incompatible(v1alpha1.ArtifactInvalidReason,
				fmt.Sprintf("cannot install %s into namespace %s: %v", a.Checked.ComponentsFile, p.GetNamespace(), err), 0)
		}
		in.NamespacePatches = patches
		in.ManagerDeployment, in.ManagerArgs = a.Checked.ManagerDeployment()
		in.SkipCRDSubstitution = a.Checked.CRDsSubstitutionFree()
		msg := fmt.Sprintf("%s %s (contract %s) can be installed", p.GetName(), p.GetSpec().Version, contract)
		if adopting := Adopting(f); adopting != "" {
			msg += "; " + adopting
			if f.FirstInstall {
				d.Adopting = fmt.Sprintf("%s %s: %s", p.GetName(), p.GetSpec().Version, adopting)
			}
		}
		d.Status.Compatible = condition(v1alpha1.CompatibleCondition, metav1.ConditionTrue, v1alpha1.CompatibleReason, msg)
	}
	d.Passed = true
	d.Status.Contract = contract
	d.Status.Artifact = &v1alpha1.ResolvedArtifact{URL: a.URL, Revision: a.Revision, Digest: a.Digest}
	if a.Release != nil {
		d.Status.Artifact.Files = slices.Clone(a.Release.Files)
	}
	return d, writes(f, in, &d)
}

// DescribeFiles names each file of a release with its sha256.
func DescribeFiles(files []v1alpha1.ReleaseFile) string {
	parts := make([]string, 0, len(files))
	for _, f := range files {
		parts = append(parts, f.Name+" "+f.SHA256)
	}
	return strings.Join(parts, ", ")
}

func condition(typ string, status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	return &metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}
