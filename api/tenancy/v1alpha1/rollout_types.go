package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RolloutSpec moves every new revision of the stack — a new tag or chart
// version, a new semver match, or changed values, substitutions or any
// other field of spec.stack — to the tenant's clusters wave by wave:
// within a wave at most maxUpdating clusters at a time, then a bake time
// during which the wave's clusters must stay healthy, then the next wave.
// Clusters not reached yet keep running the last good revision, pinned by
// its digest. When more clusters of a wave fail than its failure budget
// allows, the rollout stops and (unless onFailure is Pause) every cluster
// on the failed revision goes back to the last good one; that revision is
// not tried again until the stack changes or the Tenant is annotated with
// tenancy.capwright.io/retry-rollout.
//
// Without spec.rollout every cluster follows the stack's tag or semver
// range at once.
// +kubebuilder:validation:XValidation:rule="!has(self.waves) || self.waves.all(w, has(w.clusters) || has(self.waveLabel))",message="rollout.waves: a wave without clusters takes the clusters whose rollout.waveLabel label has the wave's name as value; set waveLabel, or list each wave's clusters"
// +kubebuilder:validation:XValidation:rule="!has(self.waves) || self.waves.all(w, self.waves.exists_one(o, o.name == w.name))",message="rollout.waves: wave names must be unique"
type RolloutSpec struct {
	// WaveLabel is the label key whose values order clusters into waves:
	// a wave without clusters takes the selected Clusters whose label has
	// the wave's name as value, e.g. waveLabel ring with waves canary,
	// early and late.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="rollout.waveLabel must be a label key, e.g. ring or example.com/ring: a name of at most 63 letters, digits, -, _ and . starting and ending with a letter or digit, after an optional DNS subdomain prefix and /; no Cluster carries any other, so every cluster would fall into the last wave"
	WaveLabel string `json:"waveLabel,omitempty"`

	// Waves are the waves in order. A wave takes the Clusters it lists by
	// name (in any of the tenant's namespaces), or else those whose
	// waveLabel label has its name as value. Selected clusters no wave
	// takes form a last wave of their own, named "rest". Without waves,
	// all clusters are one wave.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Waves []Wave `json:"waves,omitempty"`

	// MaxUpdating is how many clusters of a wave move to the new revision
	// at once: a number, or a percentage of the wave rounded up. Default
	// 25%; never less than one cluster.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="rollout.maxUpdating must be a number of clusters (at least 1) or a percentage from 1% to 100%"
	MaxUpdating *intstr.IntOrString `json:"maxUpdating,omitempty"`

	// BakeTime is how long every cluster of a wave must stay healthy on
	// the new revision before the next wave starts. Default 5m; at least
	// 10s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('10s')",message="rollout.bakeTime must be at least 10s: it is how long a wave's clusters must stay healthy before the next wave starts, and a shorter one proves nothing; leave it out for the default (5m)"
	BakeTime *metav1.Duration `json:"bakeTime,omitempty"`

	// FailureBudget is how many clusters of one wave may fail on the new
	// revision before the rollout stops: 0 (the default) stops at the
	// first failure. It must be smaller than the wave.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailureBudget int32 `json:"failureBudget,omitempty"`

	// OnFailure is what happens when a wave fails beyond its budget:
	// Rollback (the default) puts every cluster on the failed revision
	// back on the last good one; Pause leaves them as they are. Either
	// way no further wave is started.
	// +optional
	// +kubebuilder:validation:Enum=Rollback;Pause
	// +kubebuilder:default:=Rollback
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`
}

// Wave is one step of a rollout.
type Wave struct {
	// Name of the wave; with rollout.waveLabel and no clusters, the label
	// value that puts a cluster in it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	Name string `json:"name"`

	// Clusters are the names of the Clusters of this wave, in any of the
	// tenant's namespaces. A cluster may be listed in one wave only.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	Clusters []string `json:"clusters,omitempty"`
}

// RolloutFailurePolicy is what a failed wave leads to.
type RolloutFailurePolicy string

// Failure policies.
const (
	RolloutRollback RolloutFailurePolicy = "Rollback"
	RolloutPause    RolloutFailurePolicy = "Pause"
)

// RolloutPhase is where a rollout is.
// +kubebuilder:validation:Enum=Progressing;Baking;Paused;RolledBack;Complete
type RolloutPhase string

// Rollout phases.
const (
	// RolloutProgressing: clusters of the current wave are moving to the
	// target revision.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutBaking: the current wave is on the target revision and must
	// stay healthy for the bake time.
	RolloutBaking RolloutPhase = "Baking"
	// RolloutPaused: a wave failed beyond its budget and onFailure is
	// Pause, or the tenant is suspended.
	RolloutPaused RolloutPhase = "Paused"
	// RolloutRolledBack: a wave failed beyond its budget and the clusters
	// on the failed revision went back to the last good one.
	RolloutRolledBack RolloutPhase = "RolledBack"
	// RolloutComplete: every cluster runs the target revision, which is
	// now the last good one.
	RolloutComplete RolloutPhase = "Complete"
)

// RolloutStatus is where the rollout of the stack's revisions is.
type RolloutStatus struct {
	// Phase is Progressing, Baking, Paused, RolledBack or Complete.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`

	// Target is the revision the clusters move to: the stack as the spec
	// has it, with the artifact Flux resolved for it.
	// +optional
	Target *StackRevision `json:"target,omitempty"`

	// LastGood is the last revision that went through every wave; the
	// clusters not reached yet run it, and a failed rollout goes back to
	// it.
	// +optional
	LastGood *StackRevision `json:"lastGood,omitempty"`

	// Waves is the progress of the target revision, wave by wave.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=33
	Waves []WaveStatus `json:"waves,omitempty"`

	// Failed are the revisions that failed, newest first (at most ten):
	// none is tried again until the stack changes or the Tenant is
	// annotated with tenancy.capwright.io/retry-rollout.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Failed []FailedRevision `json:"failed,omitempty"`

	// LastHandledRetry is the value of the
	// tenancy.capwright.io/retry-rollout annotation last acted on.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LastHandledRetry string `json:"lastHandledRetry,omitempty"`
}

// StackRevision is one revision of a tenant's stack: the artifact and the
// rest of spec.stack.
type StackRevision struct {
	// ID names the revision: a hash of the artifact's digest and of
	// spec.stack (its tag, version or semver range aside).
	// +required
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// Artifact is the OCI artifact, tag@sha256:digest as Flux reports it.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Artifact string `json:"artifact,omitempty"`
}

// WaveStatus is the progress of one wave.
type WaveStatus struct {
	// +required
	Name string `json:"name"`
	// Clusters is how many eligible clusters the wave has.
	Clusters int32 `json:"clusters"`
	// Updated is how many of them are healthy on the target revision.
	Updated int32 `json:"updated"`
	// Failed is how many of them failed on the target revision.
	Failed int32 `json:"failed"`
	// CompletedAt is when every cluster of the wave was first healthy on
	// the target revision (within the failure budget); the bake time
	// counts from it.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Message says why a wave is empty or waits.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// FailedRevision is a revision a wave failed on.
type FailedRevision struct {
	StackRevision `json:",inline"`
	// Wave is the wave that failed.
	// +required
	Wave string `json:"wave"`
	// Clusters are the clusters that failed, namespace/name (at most 20).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Clusters []string `json:"clusters,omitempty"`
	// Message says why, from the first failed cluster's line.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// FailedAt is when the rollout stopped.
	// +required
	FailedAt metav1.Time `json:"failedAt"`
}
