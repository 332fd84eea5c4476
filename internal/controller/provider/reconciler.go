// Package provider holds the reconciler of the seven provider kinds. It
// turns a provider into Flux objects after a preflight of the artifact and
// folds the Flux objects' health back into the provider's status; Flux does
// the fetching, applying, health checking and drift correction.
package provider

import (
	"context"
	"errors"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/render"
)

// FieldOwner is the server-side apply field manager of everything the
// controller writes.
const FieldOwner = "capwright"

// Kind describes one provider kind to the reconciler.
type Kind struct {
	Name      string // CoreProvider, BootstrapProvider, …
	NewObject func() v1alpha1.Provider
	NewList   func() v1alpha1.ProviderList
}

// Reconciler reconciles one provider kind.
type Reconciler struct {
	Client ctrl.Client
	// Reader reads without the cache (for objects the manager does not
	// watch, such as Secrets and CAPI objects).
	Reader   ctrl.Reader
	Kind     Kind
	Kinds    []Kind // every provider kind, for duplicate and dependency checks
	Fetcher  *artifact.Fetcher
	Cache    *ArtifactCache
	Mirrors  catalog.Mirrors
	Recorder kuberecorder.EventRecorder
	// InsecureRegistries are hosts reached over plain HTTP although the
	// provider does not say so itself (a plain-HTTP mirror of catalog
	// providers).
	InsecureRegistries []string
	// RegistryTimeout bounds the registry's share of one reconcile
	// (resolving, fetching); default DefaultRegistryTimeout.
	RegistryTimeout time.Duration
	// ResyncInterval bounds how long a tag move goes unnoticed when
	// spec.interval is longer.
	ResyncInterval time.Duration
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
	// Resolutions remembers what each provider's tag resolved to, so
	// reconciles woken by Flux's progress do not ask the registry again;
	// nil asks every time.
	Resolutions *Resolutions
	// Metrics records reconcile durations and each provider's state; nil
	// records nothing.
	Metrics *metrics.Recorder
	// CorePreflights hands the core provider's contract to the other
	// kinds the moment its preflight passes, shared by the reconcilers of
	// all kinds; nil leaves them to read it from the core's status.
	CorePreflights *CorePreflights

	// written keeps the shell from acting on a read older than its own
	// last write.
	written shell.Written
	// inventories remembers the version each provider's clusterctl
	// inventory was recorded at; installers, the hash of the installer
	// identity last found or applied.
	inventories, installers recentChecks
}

// Reconcile runs the reconcile shell with the provider's steps.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return (&shell.Reconciler[v1alpha1.Provider]{
		Client:     r.Client,
		Kind:       r.Kind.Name,
		New:        r.Kind.NewObject,
		Finalizer:  v1alpha1.Finalizer,
		FieldOwner: FieldOwner,
		Steps:      providerSteps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
		// The Flux objects' Ready flip within a second or two while Flux
		// fetches and applies; Installed and Available carry the news.
		ProgressFields: []string{"fluxObjects"},
	}).Reconcile(ctx, req)
}

// reconcile reads as the data flow: preflight → render and write the Flux
// objects (passing on a reconcile request) → fold their health → record
// the inventory.
func (r *Reconciler) reconcile(ctx context.Context, obj v1alpha1.Provider, request string) (shell.Outcome, error) {
	logger := log.FromContext(ctx)
	spec, status := obj.GetSpec(), obj.GetStatus()
	requeue := shell.Outcome{Result: reconcile.Result{RequeueAfter: r.resyncInterval(obj)}}

	r.reconcilePaused(obj)
	r.Timelines.seen(obj, time.Now())
	if spec.Suspend {
		if err := r.suspendFluxObjects(ctx, obj); err != nil {
			return shell.Outcome{}, err
		}
		r.foldHealth(ctx, obj, status.Artifact)
		return shell.Outcome{}, nil
	}

	pre, perr := r.preflight(ctx, obj)
	if perr != nil {
		logger.Info("preflight refused the provider", "reason", perr.Reason, "message", perr.Message)
		// A core refused now (its config Secret or a dependency changed,
		// the generation did not) no longer vouches for its contract.
		r.CorePreflights.forget(obj)
		// Nothing new is written; what Flux installed before stays, and
		// so do the additional manifests it was given.
		if err := r.restoreAdditional(ctx, obj); err != nil {
			logger.Error(err, "serving the additional manifests again")
		}
		r.foldHealth(ctx, obj, status.Artifact)
		if perr.stalls() {
			return shell.Stalled(perr.Reason, perr.Message, perr.retryAfter()), nil
		}
		return shell.Outcome{Result: reconcile.Result{RequeueAfter: perr.retryAfter()}}, nil
	}
	r.Timelines.mark(obj, stepPreflight, time.Now())
	if pre.Keep {
		// The registry is down and the checked artifact is not at hand:
		// the Flux objects stay as they are, pinned to what was checked.
		if err := r.restoreAdditional(ctx, obj); err != nil {
			logger.Error(err, "serving the additional manifests again")
		}
		r.foldHealth(ctx, obj, status.Artifact)
		return requeue, nil
	}
	status.Contract = pre.Contract
	status.Artifact = &v1alpha1.ResolvedArtifact{URL: pre.URL, Revision: pre.Revision, Digest: pre.Digest}
	if obj.ProviderType() == v1alpha1.CoreProviderType {
		r.CorePreflights.pass(obj, pre.Contract)
	}

	if err := r.writeFluxObjects(ctx, obj, pre); err != nil {
		setFalse(obj, v1alpha1.InstalledCondition, v1alpha1.InstallFailedReason, err.Error())
		var invalid *renderError
		if errors.As(err, &invalid) {
			return shell.Stalled(v1alpha1.InstallFailedReason, err.Error(), r.resyncInterval(obj)), nil
		}
		return shell.Outcome{}, err
	}
	r.Timelines.mark(obj, stepWritten, time.Now())
	if request != "" {
		if err := r.requestFluxReconcile(ctx, obj, request); err != nil {
			return shell.Outcome{}, err
		}
	}
	for _, name := range []string{objectName(obj), render.AdditionalObjectName(obj.ProviderType(), obj.GetName())} {
		if err := r.nudgeWaiting(ctx, obj, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: name}); err != nil {
			logger.Error(err, "nudging a Kustomization whose dependencies are Ready")
		}
	}
	if r.foldHealth(ctx, obj, status.Artifact) {
		// Flux is between the two writes that end its reconcile: the
		// second, a moment later, wakes the provider, and what would be
		// written now would be out of date by then.
		return shell.Outcome{Hold: true, Result: reconcile.Result{RequeueAfter: finishingRetry}}, nil
	}
	if err := r.recordInventory(ctx, obj); err != nil {
		logger.Error(err, "recording the clusterctl inventory")
	}
	return requeue, nil
}

func (r *Reconciler) resyncInterval(obj v1alpha1.Provider) time.Duration {
	interval := 10 * time.Minute
	if i := obj.GetSpec().Interval; i != nil && i.Duration > 0 {
		interval = i.Duration
	}
	if r.ResyncInterval > 0 && r.ResyncInterval < interval {
		interval = r.ResyncInterval
	}
	return interval
}

// finishingRetry is how soon a reconcile held while Flux finishes
// (health.Observation.Finishing) looks again if Flux's second write is
// not seen.
const finishingRetry = time.Second

// foldHealth reads the Flux objects and folds their conditions into
// Installed, Available, installedVersion and fluxObjects. It tells whether
// an applier is between the two writes that end Flux's reconcile
// (health.Observation.Finishing): the fold is then a moment already past.
func (r *Reconciler) foldHealth(ctx context.Context, obj v1alpha1.Provider, art *v1alpha1.ResolvedArtifact) (finishing bool) {
	status := obj.GetStatus()
	name := objectName(obj)
	in := health.ProviderInput{
		Generation:               obj.GetGeneration(),
		DesiredVersion:           obj.GetSpec().Version,
		PreviousInstalledVersion: status.InstalledVersion,
		Suspended:                obj.GetSpec().Suspend,
		PreviousFluxObjects:      status.FluxObjects,
		Now:                      metav1.Now(),
	}
	if art != nil {
		// The OCIRepository is pinned by digest, so Flux reports the bare
		// digest as its revision (tag@digest is for people).
		in.ExpectedRevision = art.Digest
	}
	if obj.GetSpec().AdditionalManifests != nil && !isChart(obj) {
		in.AdditionalSource, in.AdditionalApply, in.AdditionalRevision = r.observeAdditional(ctx, obj)
	}
	var repo sourcev1.OCIRepository
	in.Source = observe(ctx, r.Client, obj.GetNamespace(), name, &repo, func() health.Observation { return health.ObserveOCIRepository(&repo) }, sourcev1.OCIRepositoryKind)
	if isChart(obj) {
		in.Apply = r.observeHelmRelease(ctx, obj.GetNamespace(), name)
	} else {
		var ks kustomizev1.Kustomization
		in.Apply = observe(ctx, r.Client, obj.GetNamespace(), name, &ks, func() health.Observation { return health.ObserveKustomization(&ks) }, kustomizev1.KustomizationKind)
	}
	res := health.FoldProvider(in)
	now := time.Now()
	finishing = in.Apply.Finishing(now) || in.AdditionalApply.Finishing(now)
	r.Timelines.observe(obj, in, now)
	if res.Installed.Status == metav1.ConditionTrue {
		r.Timelines.finish(obj, r.Kind.Name, log.FromContext(ctx), now)
	}
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, res.Installed)
	apimeta.SetStatusCondition(&conds, res.Available)
	obj.SetConditions(conds)
	status.InstalledVersion = res.InstalledVersion
	status.FluxObjects = res.FluxObjects
	if res.Installed.Reason == v1alpha1.InstallFailedReason {
		// Flux may have failed for want of the installer's permissions:
		// its next attempt should find them restored.
		r.installers.forget(obj.GetUID())
	}
	return finishing
}

// observe gets a Flux object; a missing one is an observation too.
func observe(ctx context.Context, c ctrl.Client, namespace, name string, obj ctrl.Object, fn func() health.Observation, kind string) health.Observation {
	if err := c.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return health.Observation{Kind: kind, Name: name, Namespace: namespace, Missing: true}
	}
	return fn()
}

// observeAdditional observes the ExternalArtifact and Kustomization of
// spec.additionalManifests, and the revision the controller stored.
func (r *Reconciler) observeAdditional(ctx context.Context, obj v1alpha1.Provider) (source, apply health.Observation, revision string) {
	name := render.AdditionalObjectName(obj.ProviderType(), obj.GetName())
	var ea sourcev1.ExternalArtifact
	source = observe(ctx, r.Client, obj.GetNamespace(), name, &ea, func() health.Observation { return health.ObserveExternalArtifact(&ea) }, sourcev1.ExternalArtifactKind)
	if !source.Missing && ea.Status.Artifact != nil {
		revision = ea.Status.Artifact.Revision
	}
	var ks kustomizev1.Kustomization
	apply = observe(ctx, r.Client, obj.GetNamespace(), name, &ks, func() health.Observation { return health.ObserveKustomization(&ks) }, kustomizev1.KustomizationKind)
	return source, apply, revision
}
