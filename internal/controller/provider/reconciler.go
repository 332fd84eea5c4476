// Package provider holds the reconciler of the seven provider kinds. It
// asks internal/resolve which checked artifact a provider installs,
// gathers the rest of its facts (the core provider, its dependencies),
// has internal/plan/provider turn them into
// the Flux objects that install it, writes those, and folds the Flux
// objects' health back into the provider's status; Flux does the
// fetching, applying, health checking and drift correction.
package provider

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/resolve"
)

// Kind describes one provider kind to the reconciler.
type Kind = v1alpha1.Kind

// Reconciler reconciles one provider kind.
type Reconciler struct {
	Client ctrl.Client
	// Reader reads without the cache (for objects the manager does not
	// watch, such as Secrets and CAPI objects).
	Reader ctrl.Reader
	Kind   Kind
	Kinds  []Kind // every provider kind, for duplicate and dependency checks
	// Source is the resolution stage: which checked artifact the
	// provider installs (internal/resolve); shared by every kind.
	Source   *resolve.Resolver
	Recorder kuberecorder.EventRecorder
	// Artifacts stores and serves the artifacts of additional manifests;
	// nil when the manager runs without artifact storage, and then
	// spec.additionalManifests is refused.
	Artifacts *fluxartifact.Storage
	// RESTMapper tells namespaced kinds from cluster-scoped ones, to put
	// additional manifests without a namespace into the provider's.
	RESTMapper apimeta.RESTMapper
	// Timelines records when each step of an install or upgrade happened;
	// nil records nothing.
	Timelines *Timelines
	// Metrics records reconcile durations and each provider's state; nil
	// records nothing.
	Metrics *metrics.Recorder
	// CorePreflights hands the core provider's contract to the other
	// kinds the moment its preflight passes, shared by the reconcilers of
	// all kinds; nil leaves them to read it from the core's status.
	CorePreflights *CorePreflights
	// Upgrades checks the providers' sources for newer versions at a low
	// rate; nil never checks.
	Upgrades *UpgradeChecks
	// APIs tells the kinds the cluster serves, for the components' kinds
	// they do not define (cert-manager's); nil does not ask, and takes
	// every kind as served.
	APIs *ServedAPIs
	// DryRun dry-runs an upgrade's objects on the API server before the
	// first of them is written; nil skips the dry run.
	DryRun DryRunFunc

	// written keeps the shell from acting on a read older than its own
	// last write.
	written shell.Written
	// inventories remembers the version each provider's clusterctl
	// inventory was recorded at; installers, the hash of the installer
	// identity last found or applied.
	inventories, installers recentChecks
	// installationsRead remembers what was found installed before a
	// provider's first install.
	installationsRead installationsMemo
}

// Reconcile runs the reconcile shell with the provider's steps.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return (&shell.Reconciler[v1alpha1.Provider]{
		Client:     r.Client,
		Kind:       r.Kind.Name,
		New:        r.Kind.NewObject,
		Finalizer:  v1alpha1.Finalizer,
		FieldOwner: plan.FieldOwner,
		Steps:      providerSteps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
		// Flux leaves the pruning of providers to Capwright (prune.go).
		Metadata: r.takeOverPrune,
		// The Flux objects' Ready flip within a second or two while Flux
		// fetches and applies; Installed and Available carry the news.
		ProgressFields: []string{"fluxObjects"},
	}).Reconcile(ctx, req)
}

// reconcile walks the stages once, in order: the resolution (which
// checked artifact to install: internal/resolve), the facts (what the
// cluster says: facts.go, with the source written ahead of the slow
// ones), the plan (pure: internal/plan/provider), the sync (the writes,
// in order: sync.go) and the fold (what the Flux objects say, into the
// status: fold.go). Every path — suspended, refused, kept, written — ends
// in the one fold.
func (r *Reconciler) reconcile(ctx context.Context, obj v1alpha1.Provider, request string) (shell.Outcome, error) {
	r.Timelines.seen(obj, time.Now())
	// While a failed upgrade rolls back, the provider is planned at its
	// last good version (upgrade.go).
	up := providerplan.UpgradeOf(obj)
	target := up.Target(obj)
	found := r.Source.Resolve(ctx, target)
	facts := r.facts(ctx, target, found)
	facts.RollingBack = up.RollingBack
	if r.fetchAhead(ctx, facts) {
		facts = r.gather(ctx, facts)
	}
	desired, err := providerplan.Plan(facts)
	if err == nil {
		err = r.dryRun(ctx, up, facts, desired)
	}
	r.CorePreflights.settle(desired, err)
	synced, err := r.sync(ctx, desired, request, err)
	if desired.Adopting != "" && !synced.written.IsZero() && r.Recorder != nil {
		r.Recorder.Event(obj, corev1.EventTypeNormal, providerplan.AdoptingEvent, desired.Adopting)
	}
	out, err := r.fold(ctx, obj, up, desired, synced, err)
	// Nothing is read unless a check is due (see UpgradeChecks.due).
	r.checkUpgrades(ctx, obj, found, request != "")
	// Last, as Flux's prune comes after its apply: a provider Git dropped
	// is deleted, or kept while it is in use (prune.go).
	switch done, res, perr := r.pruneDropped(ctx, obj); {
	case perr != nil:
		err = errors.Join(err, perr)
	case done == deleted:
		return shell.Outcome{Hold: true}, nil
	case done == keptInUse && (out.Result.RequeueAfter == 0 || res.RequeueAfter < out.Result.RequeueAfter):
		out.Result.RequeueAfter = res.RequeueAfter
	}
	return out, err
}

// Facts gathers what the plan of obj needs, as a reconcile does, without
// writing anything (no source is written ahead): the artifact resolved
// and checked and, once the quick checks pass, the slower facts — of its
// last good version while a failed upgrade is rolled back.
// `capwright build` plans from them what the manager would write.
func (r *Reconciler) Facts(ctx context.Context, obj v1alpha1.Provider) providerplan.Facts {
	up := providerplan.UpgradeOf(obj)
	target := up.Target(obj)
	facts := r.facts(ctx, target, r.Source.Resolve(ctx, target))
	facts.RollingBack = up.RollingBack
	if _, more := providerplan.Ahead(facts); more {
		facts = r.gather(ctx, facts)
	}
	return facts
}

func objectName(obj v1alpha1.Provider) string {
	return render.ObjectName(obj.ProviderType(), obj.GetName())
}

func namespaceOr(namespace, fallback string) string {
	if namespace == "" {
		return fallback
	}
	return namespace
}

// additionalKey names the ExternalArtifact and Kustomization of
// spec.additionalManifests.
func additionalKey(obj v1alpha1.Provider) ctrl.ObjectKey {
	return ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: render.AdditionalObjectName(obj.ProviderType(), obj.GetName())}
}

// owner names obj as its plan does: its Flux objects (Components,
// Additional), its release copy.
func (r *Reconciler) owner(obj v1alpha1.Provider) providerplan.Owner {
	return providerplan.OwnerOf(obj, r.Kind.Name)
}
