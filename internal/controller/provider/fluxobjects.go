package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/controller/apply"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/render"
)

// specHashAnnotation records what the controller last applied, so a resync
// with nothing changed writes nothing, and a field it stopped setting is
// still removed by the next apply.
const specHashAnnotation = "providers.capwright.io/applied-hash"

func objectName(obj v1alpha1.Provider) string {
	return render.ObjectName(obj.ProviderType(), obj.GetName())
}

func isChart(obj v1alpha1.Provider) bool { return render.IsChart(obj) }

// writeFluxObjects renders the Flux objects and applies those that changed.
func (r *Reconciler) writeFluxObjects(ctx context.Context, obj v1alpha1.Provider, pre *PreflightResult) error {
	in := r.renderInput(obj, pre)
	rendered, err := render.Provider(in)
	if err != nil {
		return &renderError{fmt.Errorf("rendering the Flux objects of %s %s/%s: %w", r.Kind.Name, obj.GetNamespace(), obj.GetName(), err)}
	}
	if err := r.writeInstaller(ctx, in); err != nil {
		return err
	}
	objects := []ctrl.Object{rendered.OCIRepository}
	if rendered.Kustomization != nil {
		objects = append(objects, rendered.Kustomization)
	}
	if rendered.HelmRelease != nil {
		objects = append(objects, rendered.HelmRelease)
	}
	for _, o := range objects {
		if err := r.applyIfChanged(ctx, o); err != nil {
			return err
		}
	}
	return r.writeAdditional(ctx, obj, rendered, pre.AdditionalManifests)
}

// renderInput is what render is given for the provider and what
// preflight established (so far) about it.
func (r *Reconciler) renderInput(obj v1alpha1.Provider, pre *PreflightResult) render.Input {
	componentsFile := ""
	if pre.Artifact != nil {
		componentsFile = pre.Artifact.ComponentsFile
	}
	in := render.Input{
		Provider:          obj,
		Kind:              r.Kind.Name,
		Insecure:          r.insecureRegistry(pre.URL),
		ArtifactURL:       pre.URL,
		Tag:               pre.Tag,
		Digest:            pre.Digest,
		ComponentsFile:    componentsFile,
		ProviderLabel:     clusterctl.ProviderLabelValue(obj.ProviderType(), obj.GetName()),
		NamespacePatches:  pre.NamespacePatches,
		MirrorImages:      r.mirrorImages(pre),
		ManagerDeployment: pre.ManagerDeployment,
		ManagerArgs:       pre.ManagerArgs,

		SkipCRDSubstitution: pre.CRDsSubstitutionFree,
	}
	if pre.CoreDependency != nil {
		in.CoreDependency = &meta.NamespacedObjectReference{Name: pre.CoreDependency.Name, Namespace: pre.CoreDependency.Namespace}
	}
	return in
}

// fetchAhead writes the OCIRepository of a provider that nothing has been
// applied from yet as soon as its artifact is resolved and its contract
// read, so that source-controller fetches the artifact while the slower
// part of preflight runs (decoding the components, waiting for the core
// provider's contract, for spec.dependsOn): the Kustomization, written
// when preflight passes, then finds its source Ready instead of waiting
// for it.
//
// An OCIRepository only fetches; nothing is applied from it until a
// Kustomization or HelmRelease refers to it, and those are written only
// once every check passed. So it is written ahead only while neither
// exists, read without the cache, which may not have seen this
// controller's own last write yet: an upgrade, whose applier exists,
// moves its source only after the checks, as before. The object is the
// one writeFluxObjects applies later (render.Source), so that write finds
// it unchanged. It refuses nothing: a failure is only logged, and the
// write after the checks reports it.
func (r *Reconciler) fetchAhead(ctx context.Context, obj v1alpha1.Provider, pre *PreflightResult) *preflightError {
	if pre.Keep || (pre.Artifact == nil && !isChart(obj)) {
		return nil
	}
	key := ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: objectName(obj)}
	if err := r.Client.Get(ctx, key, &sourcev1.OCIRepository{}); !apierrors.IsNotFound(err) {
		return nil // written already (after the checks, or ahead)
	}
	var applier ctrl.Object = &kustomizev1.Kustomization{}
	if isChart(obj) {
		applier = &helmv2.HelmRelease{}
	}
	if err := r.Reader.Get(ctx, key, applier); !apierrors.IsNotFound(err) {
		return nil
	}
	repo, err := render.Source(r.renderInput(obj, pre))
	if err == nil {
		err = r.applyIfChanged(ctx, repo)
	}
	if err != nil {
		log.FromContext(ctx).V(1).Info("cannot have Flux fetch the artifact ahead of the checks", "error", err.Error())
	}
	return nil
}

// renderError is a spec the Flux objects cannot be rendered from: it
// stalls until the spec changes.
type renderError struct{ err error }

func (e *renderError) Error() string { return e.err.Error() }
func (e *renderError) Unwrap() error { return e.err }

// requestFluxReconcile passes a reconcile.fluxcd.io/requestedAt request on
// to the provider's OCIRepository and Kustomization or HelmRelease, so
// `flux reconcile`-style requests on the provider reach source-,
// kustomize- and helm-controller. The additional manifests' Kustomization
// is left to its interval: it depends on the provider's, and asked at the
// same time it would report DependencyNotReady while that one re-runs.
func (r *Reconciler) requestFluxReconcile(ctx context.Context, obj v1alpha1.Provider, request string) error {
	name := objectName(obj)
	key := func(o ctrl.Object) ctrl.Object { o.SetNamespace(obj.GetNamespace()); o.SetName(name); return o }
	objects := []ctrl.Object{key(&sourcev1.OCIRepository{})}
	if isChart(obj) {
		objects = append(objects, key(&helmv2.HelmRelease{}))
	} else {
		objects = append(objects, key(&kustomizev1.Kustomization{}))
	}
	for _, o := range objects {
		if err := apply.RequestReconcile(ctx, r.Client, o, request, FieldOwner); err != nil {
			return err
		}
	}
	return nil
}

// writeAdditional writes the ExternalArtifact of the additional manifests,
// stores their artifact, and only then writes the Kustomization that
// applies it; without spec.additionalManifests it removes what an earlier
// spec asked for.
func (r *Reconciler) writeAdditional(ctx context.Context, obj v1alpha1.Provider, rendered *render.RenderedObjects, packed []byte) error {
	if rendered.AdditionalArtifact == nil {
		_, err := r.removeAdditional(ctx, obj)
		return err
	}
	if packed == nil {
		return fmt.Errorf("the additional manifests of %s %s/%s were not packed; preflight must read them first", r.Kind.Name, obj.GetNamespace(), obj.GetName())
	}
	if err := r.applyIfChanged(ctx, rendered.AdditionalArtifact); err != nil {
		return err
	}
	if err := r.storeAdditionalArtifact(ctx, obj, rendered.AdditionalArtifact, packed); err != nil {
		return err
	}
	return r.applyIfChanged(ctx, rendered.AdditionalKustomization)
}

// mirrorImages rewrites every container image of the components through the
// registry mirror rules, so a mirrored site pulls nothing from the
// original registries.
func (r *Reconciler) mirrorImages(pre *PreflightResult) []kustomize.Image {
	if len(r.Mirrors) == 0 || pre.Artifact == nil {
		return nil
	}
	images, err := pre.Artifact.Images()
	if err != nil {
		return nil
	}
	var out []kustomize.Image
	seen := map[string]bool{}
	for _, image := range images {
		name := imageName(image)
		if seen[name] {
			continue
		}
		seen[name] = true
		if to, ok := r.Mirrors.Rewrite(name); ok {
			out = append(out, kustomize.Image{Name: name, NewName: to})
		}
	}
	return out
}

// imageName strips the tag and digest of an image reference.
func imageName(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// applyIfChanged applies desired with server-side apply unless the object
// already holds exactly what was last applied and nobody changed those
// fields since; it reads the object through the cache the controller
// watches it with.
func (r *Reconciler) applyIfChanged(ctx context.Context, desired ctrl.Object) error {
	err := apply.IfChanged(ctx, r.Client, r.Client, desired, specHashAnnotation, FieldOwner, func(existing *unstructured.Unstructured) error {
		if !render.ControlledBy(existing, render.ControllerUID(desired)) {
			return fmt.Errorf("%s %s exists and was not created by Capwright for this provider; rename or delete it", existing.GetKind(), apply.ObjectRef(existing))
		}
		return nil
	})
	if apimeta.IsNoMatchError(err) {
		return fmt.Errorf("the Flux API %s is not installed on this cluster; install Flux (source, kustomize and helm controllers): %w", desired.GetObjectKind().GroupVersionKind(), err)
	}
	return err
}

// suspendFluxObjects carries spec.suspend to the existing Flux objects.
func (r *Reconciler) suspendFluxObjects(ctx context.Context, obj v1alpha1.Provider) error {
	// An ExternalArtifact has no suspend: suspended() skips it.
	for _, o := range append(componentObjects(obj), additionalObjects(obj)...) {
		if err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(o), o); err != nil {
			continue
		}
		if suspended(o) {
			continue
		}
		patch := ctrl.MergeFrom(o.DeepCopyObject().(ctrl.Object))
		setSuspend(o)
		if err := r.Client.Patch(ctx, o, patch, ctrl.FieldOwner(FieldOwner)); err != nil {
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

// dependencyReady tells whether a Flux object of spec.dependsOn is Ready
// for its current generation.
func (r *Reconciler) dependencyReady(ctx context.Context, kind string, key ctrl.ObjectKey) (bool, string) {
	ready, msg, _ := r.dependencyReadySince(ctx, kind, key)
	return ready, msg
}

// dependencyReadySince is dependencyReady, with the time the object last
// turned Ready.
func (r *Reconciler) dependencyReadySince(ctx context.Context, kind string, key ctrl.ObjectKey) (bool, string, metav1.Time) {
	var obs health.Observation
	switch kind {
	case helmv2.HelmReleaseKind:
		var hr helmv2.HelmRelease
		if err := r.Client.Get(ctx, key, &hr); err != nil {
			return false, err.Error(), metav1.Time{}
		}
		obs = health.ObserveHelmRelease(&hr)
	default:
		var ks kustomizev1.Kustomization
		if err := r.Client.Get(ctx, key, &ks); err != nil {
			return false, err.Error(), metav1.Time{}
		}
		obs = health.ObserveKustomization(&ks)
	}
	ready := apimeta.FindStatusCondition(obs.Conditions, meta.ReadyCondition)
	if obs.ObservedGeneration == obs.Generation && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == obs.Generation {
		return true, "", ready.LastTransitionTime
	}
	if ready != nil {
		return false, ready.Message, metav1.Time{}
	}
	return false, "not Ready yet", metav1.Time{}
}

// nudgeWaiting asks kustomize-controller to retry one of the provider's
// Kustomizations at once when it waits for dependencies that are all
// Ready now. kustomize-controller does not watch dependencies; it looks
// again every --requeue-dependency (30s by default), which would add up to
// that much to the install of every non-core provider and of additional
// manifests. The request names the dependencies' latest Ready transition,
// so it is written once per transition and a resync writes nothing.
func (r *Reconciler) nudgeWaiting(ctx context.Context, obj v1alpha1.Provider, key ctrl.ObjectKey) error {
	var ks kustomizev1.Kustomization
	if err := r.Client.Get(ctx, key, &ks); err != nil {
		return ctrl.IgnoreNotFound(err)
	}
	if !render.ControlledBy(&ks, obj.GetUID()) {
		return nil
	}
	waiting := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ks.Spec.Suspend || len(ks.Spec.DependsOn) == 0 || waiting == nil ||
		waiting.Reason != meta.DependencyNotReadyReason || waiting.ObservedGeneration != ks.Generation {
		return nil
	}
	var latest metav1.Time
	for _, d := range ks.Spec.DependsOn {
		ready, _, since := r.dependencyReadySince(ctx, kustomizev1.KustomizationKind, ctrl.ObjectKey{Namespace: namespaceOr(d.Namespace, ks.Namespace), Name: d.Name})
		if !ready {
			return nil
		}
		if latest.Before(&since) {
			latest = since
		}
	}
	return apply.RequestReconcile(ctx, r.Client, &ks, latest.UTC().Format(time.RFC3339Nano), FieldOwner)
}

func namespaceOr(namespace, fallback string) string {
	if namespace == "" {
		return fallback
	}
	return namespace
}

func (r *Reconciler) observeHelmRelease(ctx context.Context, namespace, name string) health.Observation {
	var hr helmv2.HelmRelease
	return observe(ctx, r.Client, namespace, name, &hr, func() health.Observation { return health.ObserveHelmRelease(&hr) }, helmv2.HelmReleaseKind)
}
