package contract

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// BackendGroup is the group of the backend's Flux objects in a sync: a
// conflict on the source skips its applier.
const BackendGroup = "backend"

// Desired is what a reconcile wants: the backend's Flux objects to write
// (plan.Desired), and what the sync and the fold need of the plan.
type Desired struct {
	plan.Desired
	// Cluster is the owning Cluster.
	Cluster clusterapi.Facts
	// Pause, when set, says the object is paused: nothing is written.
	Pause *Pause
	// Vars are the variables substituted in the spec.
	Vars map[string]string
	// Objects are the rendered Flux objects; nil without a backend.
	Objects *render.ContractObjects
	// AppliedHash is the hash the applier carries once it holds this
	// plan (plan.HashAnnotation): a cached applier without it still
	// describes the previous spec.
	AppliedHash string
	// StatusName is spec.statusFrom.name, substituted.
	StatusName string
	// KubeconfigSecret is a control plane's spec.kubeconfig.secretName,
	// substituted.
	KubeconfigSecret string
}

// Pause is a paused object: Paused=True is written once, then nothing at
// all until the pause ends (Hold), a new generation included.
type Pause struct {
	Message string
	Hold    bool
}

// Plan is what a contract object wants, from its facts: its backend's
// Flux objects, variables substituted and mirrors applied. It stalls a
// spec that cannot be rendered (InvalidSpec, the message naming the
// field) — what no Cluster can change (status expressions that do not
// parse, keyless signing identities that are no regular expressions)
// before any Cluster owns the object — and refuses (*plan.Refusal) while
// none does.
func Plan(f Facts) (Desired, error) {
	if err := checkSpec(f); err != nil && PauseReason(f.Object, f.Cluster) == "" {
		return Desired{}, Invalid(f, err)
	}
	if f.Cluster == nil {
		return Desired{}, WaitingForCluster(f.Kind)
	}
	d := Desired{Cluster: *f.Cluster}
	if why := PauseReason(f.Object, f.Cluster); why != "" {
		d.Pause = &Pause{Message: why, Hold: f.PausedSaid}
		return d, nil
	}
	d.Vars = Variables(*f.Cluster, f.version())
	if f.Backend == nil {
		return d, nil
	}
	backend, err := SubstituteBackend(*f.Backend, d.Vars)
	if err != nil {
		return Desired{}, Invalid(f, err)
	}
	if f.StatusFrom != nil {
		if d.StatusName, err = Substitute("spec.statusFrom.name", f.StatusFrom.Name, d.Vars); err != nil {
			return Desired{}, Invalid(f, err)
		}
	}
	url, insecure := f.Mirrors.OCISource(backendURL(backend), f.InsecureRegistries)
	d.Objects, err = render.ContractBackend(render.ContractInput{Owner: f.Object, Kind: f.Kind, Cluster: f.Cluster.Name, Backend: backend, URL: url, Insecure: insecure})
	if err != nil {
		return Desired{}, Invalid(f, err)
	}
	if f.Kubeconfig != nil {
		if d.KubeconfigSecret, err = Substitute("spec.kubeconfig.secretName", f.Kubeconfig.SecretName, d.Vars); err != nil {
			return Desired{}, Invalid(f, err)
		}
	}
	applied, err := plan.AsApplied(d.Objects.Applier(), plan.HashAnnotation)
	if err != nil {
		return Desired{}, err
	}
	d.AppliedHash = applied.GetAnnotations()[plan.HashAnnotation]
	for _, o := range d.Objects.Objects() {
		d.Writes = append(d.Writes, plan.Write{Object: o, Group: BackendGroup, Request: true})
	}
	d.Owned = ownedBy(f)
	d.Request = f.Request
	d.Observe = observe(d.Objects)
	return d, nil
}

// checkSpec is what makes the spec unusable whatever Cluster owns the
// object: a paused object is not refused for it (it writes nothing while
// paused).
func checkSpec(f Facts) error {
	if f.StatusFromInvalid != nil {
		return f.StatusFromInvalid
	}
	return render.CheckBackend(f.Backend)
}

// WaitingForCluster is the refusal of an object no Cluster owns yet: its
// conditions say it waits (False), and it looks again at its resync.
func WaitingForCluster(kind string) *plan.Refusal {
	return &plan.Refusal{Condition: clustersv1alpha1.BackendReadyCondition, Status: metav1.ConditionFalse,
		Reason:  clustersv1alpha1.WaitingForClusterReason,
		Message: "waiting for a Cluster to refer to this " + kind + " (Cluster API then sets itself as its owner)"}
}

// Invalid refuses a spec that cannot be rendered: the message names the
// object and the field; nothing is written.
func Invalid(f Facts, err error) *plan.Refusal {
	return plan.Stalling(clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.InvalidSpecReason, f.Ref()+": "+err.Error(), 0)
}

// ownedBy refuses a Flux object of the backend's name that the object
// does not control.
func ownedBy(f Facts) func(*unstructured.Unstructured, plan.Object) error {
	uid := f.Object.GetUID()
	return func(existing *unstructured.Unstructured, _ plan.Object) error {
		if render.ControlledBy(existing, uid) {
			return nil
		}
		return fmt.Errorf("%s %s exists and is not this %s's: Capwright changes nothing; delete or rename it", existing.GetKind(), plan.ObjectRef(existing), f.Kind)
	}
}

// observe are the backend's Flux objects, read back for the fold.
func observe(objs *render.ContractObjects) []plan.Object {
	meta := metav1.ObjectMeta{Namespace: objs.Source.Namespace, Name: objs.Source.Name}
	out := []plan.Object{&sourcev1.OCIRepository{ObjectMeta: meta}}
	if objs.HelmRelease != nil {
		return append(out, &helmv2.HelmRelease{ObjectMeta: meta})
	}
	return append(out, &kustomizev1.Kustomization{ObjectMeta: meta})
}
