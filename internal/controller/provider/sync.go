package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

// The sync stage: what the plan wants, written (apply.Syncer: in order,
// each object only if it changed, someone else's never), and the Flux
// objects read back once, for the fold, and last clusterctl's inventory
// recorded. It needs nothing of the provider but its Desired, which names
// what to write, keep and record. It is the only stage that writes;
// after it only the shell writes the provider's status.

// synced is what the sync observed, for the fold.
type synced struct {
	// in is the health of the Flux objects as read after the writes; nil
	// when a write failed, and the fold then leaves their health as it
	// was.
	in  *health.ProviderInput
	now time.Time
	// passed and written are when the preflight passed and the writes
	// were made in this reconcile, for the install timeline and the
	// inventory; zero when they were not.
	passed, written time.Time
}

// sync writes what the plan wants, given its refusal (err), then reads
// the Flux objects back once:
//   - suspended: spec.suspend is carried to the existing Flux objects;
//   - refused, or kept (the registry is down and the checked artifact is
//     not at hand): nothing new is written; what Flux installed before
//     stays, and so do the additional manifests it was given, served
//     again if the artifact storage lost them (restoreServed);
//   - otherwise the writes, in order (write), and last clusterctl's
//     inventory (inventory.go).
func (r *Reconciler) sync(ctx context.Context, d providerplan.Desired, request string, err error) (synced, error) {
	syncer := apply.Syncer{Client: r.Client, Reader: r.Reader, Artifacts: r.Artifacts}
	refusal, refused := plan.AsRefusal(err)
	var observed plan.Observed
	var refusedErr error
	var passed, written time.Time
	switch {
	case d.Suspend:
		if err := r.suspend(ctx, d.Objects); err != nil {
			return synced{}, err
		}
		observed = syncer.Observe(ctx, d.Sync.Observe)
	case refused && refusal.Condition != v1alpha1.InstalledCondition:
		log.FromContext(ctx).Info("preflight refused the provider", "reason", refusal.Reason, "message", refusal.Message)
		r.restoreServed(ctx, d)
		observed, refusedErr = syncer.Observe(ctx, d.Sync.Observe), err
	case d.Keep:
		passed = time.Now()
		// The Flux objects stay as they are, pinned to what was checked.
		r.restoreServed(ctx, d)
		observed = syncer.Observe(ctx, d.Sync.Observe)
	case err != nil:
		return synced{passed: time.Now()}, err // the Flux objects cannot be rendered
	default:
		passed = time.Now()
		if observed, err = r.write(ctx, d, request, syncer); err != nil {
			return synced{passed: passed}, err
		}
		written = time.Now()
	}
	s := r.readBack(ctx, d, observed)
	s.passed, s.written = passed, written
	if !written.IsZero() && !s.finishing() {
		if err := r.recordInventory(ctx, d.Inventory, d.Owner.UID, health.FoldProvider(*s.in).InstalledVersion, d.Resync); err != nil {
			log.FromContext(ctx).Error(err, "recording the clusterctl inventory")
		}
	}
	return s, refusedErr
}

// write makes the writes of the plan, in order: the installer (unless
// checked recently), the Flux objects (passing a reconcile request on) and
// the additional manifests, what is no longer wanted pruned, Flux nudged
// where it waits for dependencies Ready now, the stored artifacts no
// longer served removed, and the release copy kept; it returns the Flux
// objects as read back.
func (r *Reconciler) write(ctx context.Context, d providerplan.Desired, request string, syncer apply.Syncer) (plan.Observed, error) {
	want := d.Sync
	want.Owned, want.Request = r.owned(d.Owner), request
	installer, fresh := r.installerFresh(d.Owner.UID, want.Writes, d.Resync)
	if fresh {
		// Checked within half a resync interval: not read again.
		want.Writes = slices.DeleteFunc(slices.Clone(want.Writes), isInstallerWrite)
	}
	res, err := syncer.Sync(ctx, want)
	var nudge *apply.NudgeError
	switch {
	case errors.As(err, &nudge):
		// Only asking Flux to look again failed (the objects were
		// written and read back): the next change asks again.
		log.FromContext(ctx).Error(err, "nudging a Kustomization whose dependencies are Ready")
	case err != nil:
		return nil, err
	}
	if len(res.Conflicts) > 0 {
		// The first object in the way: nothing after it was written.
		return nil, fmt.Errorf("%s", res.Conflicts[slices.Sorted(maps.Keys(res.Conflicts))[0]])
	}
	if r.Artifacts != nil {
		for _, name := range d.Unserved {
			if err := r.Artifacts.Remove(sourcev1.ExternalArtifactKind, d.Owner.Namespace, name); err != nil {
				return nil, err
			}
		}
	}
	if !d.Release {
		if err := r.Source.Copies.Prune(ctx, d.Owner, 0); err != nil {
			return nil, err
		}
	}
	if d.ReleaseCopy != nil {
		// Kept in the cluster for a manager that starts with empty
		// storage while the release host is down (restore).
		if err := r.Source.Copies.Keep(ctx, d.Owner.Kind, d.Owner, fluxartifact.Digest(d.ReleaseCopy), d.ReleaseCopy); err != nil {
			return nil, fmt.Errorf("keeping a copy of the release in namespace %s: %w", r.Source.Copies.Namespace, err)
		}
	}
	if !fresh {
		r.installers.done(d.Owner.UID, installer)
	}
	return res.Observed, nil
}

// owned refuses an existing object Capwright did not create for the
// provider: a Flux object or ServiceAccount not under its controller
// reference, a ClusterRoleBinding without its labels.
func (r *Reconciler) owned(owner providerplan.Owner) func(*unstructured.Unstructured, plan.Object) error {
	return func(existing *unstructured.Unstructured, desired plan.Object) error {
		ours := render.ControlledBy(existing, render.ControllerUID(desired))
		if existing.GetKind() == "ClusterRoleBinding" {
			ours = isInstallerBindingOf(existing, owner)
		}
		if ours {
			return nil
		}
		return fmt.Errorf("%s %s exists and was not created by Capwright for this provider; rename or delete it", existing.GetKind(), plan.ObjectRef(existing))
	}
}

// The installer's permissions: the controller writes each provider's
// ServiceAccount (the core group's serviceaccounts, see the tenant
// controller's markers) and its ClusterRoleBinding, and may bind the
// installer role and no other (bind by name: it does not hold what the
// role grants). The admission policy of manifests/rbac holds the
// bindings it writes to that role and to providers' ServiceAccounts.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get;create;patch;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=capwright-provider-installer

// installerFresh tells whether the installer's identity (the uncached
// writes: render.ProviderInstaller) was found or applied as it is wanted
// less than half a resync interval ago, and its key. Both objects are
// read uncached (the controller keeps no informer of ServiceAccounts or
// ClusterRoleBindings for this), so what was found or applied is
// remembered and read again only each half resync interval, when it
// changes, or after Flux failed to install (someone may have removed it).
func (r *Reconciler) installerFresh(uid types.UID, writes []plan.Write, resync time.Duration) (string, bool) {
	var hashes []string
	for _, w := range writes {
		if !isInstallerWrite(w) {
			continue
		}
		u, err := plan.AsApplied(w.Object, plan.HashAnnotation)
		if err != nil {
			return "", false // the write reports it
		}
		hashes = append(hashes, u.GetAnnotations()[plan.HashAnnotation])
	}
	key := strings.Join(hashes, "/")
	return key, r.installers.fresh(uid, key, resync/2)
}

func isInstallerWrite(w plan.Write) bool { return w.Batch == providerplan.InstallerBatch }

// isInstallerBindingOf tells whether a ClusterRoleBinding is the one
// Capwright wrote for the provider: it carries the provider's kind, name
// and namespace.
func isInstallerBindingOf(o ctrl.Object, owner providerplan.Owner) bool {
	l := o.GetLabels()
	return l[v1alpha1.ProviderKindLabel] == owner.Kind && l[v1alpha1.ProviderNameLabel] == owner.Name &&
		l[v1alpha1.ProviderNamespaceLabel] == owner.Namespace
}

// finishing tells whether an applier is between the two writes that end
// Flux's reconcile (health.Observation.Finishing): what the fold makes of
// it is then a moment already past.
func (s synced) finishing() bool {
	return s.in != nil && (s.in.Apply.Finishing(s.now) || s.in.AdditionalApply.Finishing(s.now))
}

// suspend carries spec.suspend to the existing Flux objects.
func (r *Reconciler) suspend(ctx context.Context, objects []plan.Object) error {
	// An ExternalArtifact has no suspend: suspended() skips it.
	for _, po := range objects {
		o := po.DeepCopyObject().(ctrl.Object)
		if err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o); err != nil {
			continue
		}
		if suspended(o) {
			continue
		}
		patch := ctrl.MergeFrom(o.DeepCopyObject().(ctrl.Object))
		setSuspend(o)
		if err := r.Client.Patch(ctx, o, patch, ctrl.FieldOwner(plan.FieldOwner)); err != nil {
			return fmt.Errorf("suspending %s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

func suspended(o ctrl.Object) bool {
	switch v := o.(type) {
	case *sourcev1.OCIRepository:
		return v.Spec.Suspend
	case *kustomizev1.Kustomization:
		return v.Spec.Suspend
	case *helmv2.HelmRelease:
		return v.Spec.Suspend
	}
	return true
}

func setSuspend(o ctrl.Object) {
	switch v := o.(type) {
	case *sourcev1.OCIRepository:
		v.Spec.Suspend = true
	case *kustomizev1.Kustomization:
		v.Spec.Suspend = true
	case *helmv2.HelmRelease:
		v.Spec.Suspend = true
	}
}

// restoreServed has the artifact storage serve again what the
// provider's ExternalArtifacts point kustomize-controller at, if it lost
// it (a new manager pod starts with an empty volume), while nothing is
// written: the storage's own Restore, which also answers a fetch of a
// file it does not hold (restore.go).
func (r *Reconciler) restoreServed(ctx context.Context, d providerplan.Desired) {
	for _, name := range d.Served {
		if err := r.Artifacts.Recover(ctx, strings.ToLower(sourcev1.ExternalArtifactKind), d.Owner.Namespace, name); ctrl.IgnoreNotFound(err) != nil {
			log.FromContext(ctx).V(1).Info("cannot serve an artifact again", "externalArtifact", name, "error", err.Error())
		}
	}
}

// recentChecks remembers, per provider, what an object outside the
// manager's cache (the clusterctl inventory, the installer's
// ServiceAccount and ClusterRoleBinding) was last found or written to
// hold, and when. A provider reconciles on every status change of its
// Flux objects, a dozen times or more per install; each would otherwise
// be a read from the API server.
type recentChecks struct {
	m sync.Map // types.UID → recentCheck
}

type recentCheck struct {
	key string
	at  time.Time
}

// fresh tells whether the provider's object was found holding key less
// than maxAge ago.
func (c *recentChecks) fresh(uid types.UID, key string, maxAge time.Duration) bool {
	v, ok := c.m.Load(uid)
	if !ok {
		return false
	}
	rec := v.(recentCheck)
	return rec.key == key && time.Since(rec.at) < maxAge
}

// done records that the provider's object holds key now.
func (c *recentChecks) done(uid types.UID, key string) {
	c.m.Store(uid, recentCheck{key: key, at: time.Now()})
}

// forget makes the next check read the object again.
func (c *recentChecks) forget(uid types.UID) { c.m.Delete(uid) }
