// Package tenant holds the reconciler of Tenants. It writes a tenant's
// namespace and RBAC on the management cluster and, per selected Cluster
// API cluster, the Flux object that installs the tenant's stack there
// through the Cluster's kubeconfig Secret; Flux does the installing. It
// folds the Flux objects' health into one status line per cluster.
package tenant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capwright/capwright/internal/catalog"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/controller/clusterwatch"
	"github.com/capwright/capwright/internal/controller/shell"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/plan"
	tenantplan "github.com/capwright/capwright/internal/plan/tenant"
	"github.com/capwright/capwright/internal/render"
)

// Reconciler reconciles Tenants.
type Reconciler struct {
	// Client reads Tenants and Flux objects from the cache and writes.
	Client ctrl.Client
	// Reader reads without the cache: the objects the controller writes
	// before it writes them, and the revisions of a stack kept as
	// ControllerRevisions, which it does not watch.
	Reader ctrl.Reader
	// Clusters reads Cluster API Clusters (typed, v1beta2) and the
	// metadata of kubeconfig Secrets: the manager's cache when
	// WatchClusters, else an uncached reader until the watches start
	// (ClusterAPIServed).
	Clusters ctrl.Reader
	// WatchClusters is set when Clusters and kubeconfig Secrets are
	// watched from the start; without it the controller re-reads them
	// every minute until they are.
	WatchClusters bool
	// ClusterAPIServed, when set and WatchClusters is not, is asked,
	// once a Tenant exists, every ClusterAPIPoll (default
	// clusterwatch.DefaultPoll) whether the Cluster kind is served now;
	// once it is (at once if it was at start-up, or once Cluster API was
	// installed after the manager), Clusters and kubeconfig Secrets are
	// watched through the manager's cache, without a restart
	// (clusterwatch.LateWatch).
	ClusterAPIServed func() (bool, error)
	ClusterAPIPoll   time.Duration
	// clusterWatch starts the watches of Clusters late, and then reads
	// them.
	clusterWatch *clusterwatch.LateWatch
	Recorder     kuberecorder.EventRecorder
	// ResyncInterval is how often an unchanged tenant is looked at again
	// (Clusters and Flux objects are watched, so this is a safety net).
	ResyncInterval time.Duration
	// Metrics records reconcile durations, each tenant's state and its
	// clusters per phase; nil records nothing.
	Metrics *metrics.Recorder
	// ForbiddenNamespaces no tenant may select Clusters in (the manager's
	// --tenant-forbidden-namespaces and its own namespace), besides
	// Kubernetes' own and other Tenants' management namespaces, which are
	// always refused (render.CheckTenantNamespaces).
	ForbiddenNamespaces render.ForbiddenNamespaces
	// Artifacts stores and serves the artifacts of the ExternalArtifacts
	// that hand Flux a kustomize stack's target namespace (the storage
	// the provider controller serves additional manifests from); nil
	// when the manager runs without --artifact-storage-path, and then a
	// kustomize artifact must carry its Namespace manifest.
	Artifacts *fluxartifact.Storage
	// Sharding is how the tenant's Flux objects carry Flux's shard label
	// (the manager's --flux-sharding); zero is off.
	Sharding render.Sharding
	// Mirrors are the manager's registry mirror rules and
	// InsecureRegistries the hosts it reaches over plain HTTP
	// (--registry-mirror, --insecure-registry), applied to the stack's URL.
	Mirrors            catalog.Mirrors
	InsecureRegistries []string

	// written keeps the shell from acting on a read older than its own
	// last write.
	written shell.Written
}

// Reconcile runs the reconcile shell with the tenant's steps.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A Tenant exists: it needs Clusters watched.
	r.clusterWatch.Want()
	return (&shell.Reconciler[*tenancyv1alpha1.Tenant]{
		Client:     r.Client,
		Kind:       tenancyv1alpha1.TenantKind,
		New:        func() *tenancyv1alpha1.Tenant { return &tenancyv1alpha1.Tenant{} },
		Finalizer:  tenancyv1alpha1.Finalizer,
		FieldOwner: plan.FieldOwner,
		Steps:      steps{r},
		Events:     r.Recorder,
		Metrics:    r.Metrics,
		Written:    &r.written,
	}).Reconcile(ctx, req)
}

// reconcile reads as the data flow: gather the facts → plan
// (tenantplan.Plan: the namespace checks, the selection, the rendered
// objects, what is stale, what to observe and nudge; or a refusal) →
// sync (apply.Syncer: write, pass the request on, prune, observe,
// nudge) → fold what came of it into the status (tenantplan.Fold), once,
// whatever the reconcile came to. Nothing is written after the fold but
// the shell's status.
func (r *Reconciler) reconcile(ctx context.Context, t *tenancyv1alpha1.Tenant, request string) (shell.Outcome, error) {
	requeue := r.resyncInterval()
	in := tenantplan.Reconciled{Now: metav1.Now()}
	facts, err := r.facts(ctx, t)
	if err != nil {
		in.Err = err
	} else {
		d, refusal := tenantplan.Plan(facts)
		d.Request, d.Owned = request, tenantOwned
		res, err := r.syncer().Sync(ctx, d.Desired)
		err = errors.Join(err, r.pruned(t, res.Pruned))
		in.Desired, in.Refusal, in.Result, in.Err = &d, refusal, res, err
		if d.Poll {
			requeue = min(requeue, time.Minute)
		}
		if d.Rollout != nil && d.Rollout.After > 0 {
			// A bake ends: the next wave starts then.
			requeue = min(requeue, d.Rollout.After+time.Second)
		}
		if d.Rendered != nil {
			log.FromContext(ctx).V(1).Info("reconciled", "clusters", len(d.Selection.Selected()), "eligible", len(d.Rendered.Clusters))
		}
	}
	err = tenantplan.Fold(t, in)
	if in.Desired != nil {
		r.rolloutStopped(t, in.Desired)
	}
	return shell.Outcome{Result: reconcile.Result{RequeueAfter: requeue}}, err
}

// rolloutStopped records, when this reconcile stopped a rollout, a
// Warning event on the Flux object of each cluster that failed — in the
// Cluster's namespace, so that notification-controller, which routes
// events of namespaced objects only, can page on it through an Alert on
// those Kustomizations or HelmReleases (docs/alerts.md) — besides the
// Tenant's own RolledOut transition.
func (r *Reconciler) rolloutStopped(t *tenancyv1alpha1.Tenant, d *tenantplan.Desired) {
	ro := d.Rollout
	if ro == nil || !ro.Stopped || len(ro.Status.Failed) == 0 || r.Recorder == nil {
		return
	}
	failed := ro.Status.Failed[0]
	for _, ref := range failed.Clusters {
		ns, name, ok := strings.Cut(ref, "/")
		if !ok {
			continue
		}
		cluster := types.NamespacedName{Namespace: ns, Name: name}
		meta := metav1.ObjectMeta{Namespace: ns, Name: render.TenantClusterObjectName(t.Name, cluster),
			Labels: map[string]string{tenancyv1alpha1.TenantLabel: t.Name}}
		var obj runtime.Object = &kustomizev1.Kustomization{TypeMeta: metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind}, ObjectMeta: meta}
		if t.Spec.Stack.Chart != nil {
			obj = &helmv2.HelmRelease{TypeMeta: metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind}, ObjectMeta: meta}
		}
		r.Recorder.AnnotatedEventf(obj, revision(failed.Artifact), "Warning", ro.Reason, "Tenant %s: %s", t.Name, ro.Message)
	}
}

// syncer writes the tenant's objects.
func (r *Reconciler) syncer() apply.Syncer {
	return apply.Syncer{Client: r.Client, Reader: r.Reader, Artifacts: r.Artifacts, Cached: isFluxKind}
}

// tenantOwned refuses an existing object that render.CheckTenantObject
// does not recognise as the tenant's: it is never written.
func tenantOwned(existing *unstructured.Unstructured, desired plan.Object) error {
	return render.CheckTenantObject(existing.GetKind(), existing, desired)
}

// pruned records each stale object the sync deleted, and removes the
// stored artifact of a deleted ExternalArtifact: Flux uninstalls the
// stack from clusters that left the selection as their HelmRelease or
// Kustomization goes (and leaves the target namespace: its Kustomization
// orphans it).
func (r *Reconciler) pruned(t *tenancyv1alpha1.Tenant, objs []plan.Object) error {
	for _, o := range objs {
		kind := plan.KindOf(o)
		if err := r.removeArtifact(kind, o); err != nil {
			return err
		}
		r.event(t, "Normal", "Deleted", fmt.Sprintf("deleted %s %s, which Tenant %s no longer needs", kind, plan.ObjectRef(o), t.Name))
	}
	return nil
}

func (r *Reconciler) resyncInterval() time.Duration {
	if r.ResyncInterval > 0 {
		return r.ResyncInterval
	}
	return 10 * time.Minute
}

// event records one event on the tenant about something the controller
// did (a stale object deleted), beside the shell's transition events.
func (r *Reconciler) event(t *tenancyv1alpha1.Tenant, eventType, reason, message string) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.AnnotatedEventf(t, nil, eventType, reason, "%s", message)
}
