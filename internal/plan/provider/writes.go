package provider

import (
	"fmt"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// renderInput is what render is given for the provider and what the
// checks established about it.
func renderInput(f Facts, coreDependency *meta.NamespacedObjectReference) render.Input {
	p, a := f.Provider, f.Artifact
	componentsFile := ""
	if a.Checked != nil {
		componentsFile = a.Checked.ComponentsFile
	}
	return render.Input{
		Provider:       p,
		Kind:           f.Kind,
		Insecure:       slices.Contains(f.InsecureRegistries, RegistryHost(a.URL)),
		ArtifactURL:    a.URL,
		Tag:            a.Tag,
		Digest:         a.Digest,
		ComponentsFile: componentsFile,
		Release:        a.Release != nil,
		ProviderLabel:  clusterctl.ProviderLabelValue(p.ProviderType(), p.GetName()),
		MirrorImages:   mirrorImages(f),
		CoreDependency: coreDependency,
		Rollback:       f.RollingBack,
	}
}

// RegistryHost is the host[:port] of an oci:// URL.
func RegistryHost(url string) string {
	return strings.SplitN(strings.TrimPrefix(url, "oci://"), "/", 2)[0]
}

// mirrorImages rewrites every container image of the components through
// the registry mirror rules, so a mirrored site pulls nothing from the
// original registries.
func mirrorImages(f Facts) []kustomize.Image {
	checked := f.Artifact.Checked
	if len(f.Mirrors) == 0 || checked == nil {
		return nil
	}
	images, err := checked.Images()
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
		if to, ok := f.Mirrors.Rewrite(name); ok {
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

// writes renders the installer and the Flux objects into d.Sync, in the
// order they are written: the installer's identity before the Flux
// objects that name it, so Flux's first attempt already has its
// permissions; an ExternalArtifact before the Kustomization that applies
// it. A spec the objects cannot be rendered from stalls Installed until
// it changes.
func writes(f Facts, in render.Input, d *Desired) error {
	p := f.Provider
	rendered, err := render.Provider(in)
	if err != nil {
		return plan.Stalling(v1alpha1.InstalledCondition, v1alpha1.InstallFailedReason,
			fmt.Sprintf("rendering the Flux objects of %s %s/%s: %v", f.Kind, p.GetNamespace(), p.GetName(), err), f.Resync)
	}
	inst, err := render.ProviderInstaller(in)
	if err != nil {
		return plan.Stalling(v1alpha1.InstalledCondition, v1alpha1.InstallFailedReason,
			fmt.Sprintf("rendering the installer of %s %s/%s: %v", f.Kind, p.GetNamespace(), p.GetName(), err), f.Resync)
	}
	// The installer's objects are read uncached: the manager keeps no
	// informer of ServiceAccounts or ClusterRoleBindings.
	w := []plan.Write{
		{Object: inst.ServiceAccount, Uncached: true, Group: Group, Batch: InstallerBatch},
		{Object: inst.ClusterRoleBinding, Uncached: true, Group: Group, Batch: InstallerBatch},
		// The reconcile request reaches source-, kustomize- and
		// helm-controller through these; the additional manifests'
		// Kustomization is left to its interval: it depends on the
		// provider's, and asked at the same time it would report
		// DependencyNotReady while that one re-runs.
	}
	if rendered.OCIRepository != nil {
		w = append(w, plan.Write{Object: rendered.OCIRepository, Group: Group, Request: true})
	}
	if ea := rendered.ComponentsArtifact; ea != nil {
		if f.Artifact.Release == nil || f.Artifact.Release.Packed == nil {
			return fmt.Errorf("the release of %s %s/%s was not packed; preflight must fetch it first", f.Kind, p.GetNamespace(), p.GetName())
		}
		w = append(w, plan.Write{Object: ea, Group: Group, Artifact: &plan.Artifact{Data: f.Artifact.Release.Packed,
			Of: fmt.Sprintf("release %s of %s", f.Artifact.Tag, f.Artifact.URL)}})
		d.ReleaseCopy = f.Artifact.Release.Packed
	}
	if rendered.Kustomization != nil {
		w = append(w, plan.Write{Object: rendered.Kustomization, Group: Group, Request: true})
	}
	if rendered.HelmRelease != nil {
		w = append(w, plan.Write{Object: rendered.HelmRelease, Group: Group, Request: true})
	}
	// The sources the Kustomization no longer reads from (one of the
	// other kind: an OCIRepository for a provider now installed from a
	// release, or the other way round; the failed version's while a
	// rollback reads from its own, or that one once it is over) go once
	// the Kustomization reads from the new one.
	for _, o := range f.SourceLeft {
		d.Sync.Prune = append(d.Sync.Prune, o)
	}
	// An object in the way stops the sync before anything is pruned.
	d.Sync.PruneNeeds = []string{Group}
	if rendered.AdditionalArtifact == nil {
		// What an earlier spec asked for goes; Flux prunes what its
		// Kustomization applied.
		for _, o := range f.AdditionalLeft {
			d.Sync.Prune = append(d.Sync.Prune, o)
		}
	} else {
		if f.AdditionalManifests == nil {
			return fmt.Errorf("the additional manifests of %s %s/%s were not packed; preflight must read them first", f.Kind, p.GetNamespace(), p.GetName())
		}
		d.Additional = true
		ref := p.GetSpec().AdditionalManifests
		w = append(w,
			plan.Write{Object: rendered.AdditionalArtifact, Group: Group, Artifact: &plan.Artifact{Data: f.AdditionalManifests,
				Of: fmt.Sprintf("ConfigMap %s/%s", p.GetNamespace(), ref.Name)}},
			plan.Write{Object: rendered.AdditionalKustomization, Group: Group})
	}
	d.Sync.Writes = w
	// The Kustomizations the provider's depend on are observed too, so
	// Flux is nudged as soon as they are Ready (Nudges).
	for _, ks := range []*kustomizev1.Kustomization{rendered.Kustomization, rendered.AdditionalKustomization} {
		if ks == nil {
			continue
		}
		for _, dep := range ks.Spec.DependsOn {
			addObserved(&d.Sync, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: namespaceOr(dep.Namespace, ks.Namespace), Name: dep.Name}})
		}
	}
	d.Sync.Nudges = nudges(p)
	return nil
}

// observe is what the fold reads of the provider's Flux objects: its
// OCIRepository, its Kustomization or HelmRelease, and the ExternalArtifact
// and Kustomization of its additional manifests.
func observe(p v1alpha1.Provider, release, rollback bool) plan.Desired {
	var d plan.Desired
	m := metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: render.ObjectName(p.ProviderType(), p.GetName())}
	src := m
	if rollback {
		src.Name = render.RollbackSourceName(p.ProviderType(), p.GetName())
	}
	if release {
		d.Observe = append(d.Observe, &sourcev1.ExternalArtifact{ObjectMeta: src})
	} else {
		d.Observe = append(d.Observe, &sourcev1.OCIRepository{ObjectMeta: src})
	}
	if render.IsChart(p) {
		d.Observe = append(d.Observe, &helmv2.HelmRelease{ObjectMeta: m})
		return d
	}
	d.Observe = append(d.Observe, &kustomizev1.Kustomization{ObjectMeta: m})
	if p.GetSpec().AdditionalManifests != nil {
		a := metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: render.AdditionalObjectName(p.ProviderType(), p.GetName())}
		d.Observe = append(d.Observe, &sourcev1.ExternalArtifact{ObjectMeta: a}, &kustomizev1.Kustomization{ObjectMeta: a})
	}
	return d
}

// addObserved observes a Kustomization unless it is observed already.
func addObserved(d *plan.Desired, ks *kustomizev1.Kustomization) {
	for _, o := range d.Observe {
		if _, ok := o.(*kustomizev1.Kustomization); ok && o.GetNamespace() == ks.Namespace && o.GetName() == ks.Name {
			return
		}
	}
	d.Observe = append(d.Observe, ks)
}

// nudges asks kustomize-controller to retry one of the provider's
// Kustomizations at once when it waits for dependencies that are all
// Ready now. kustomize-controller does not watch dependencies; it looks
// again every --requeue-dependency (30s by default), which would add up to
// that much to the install of every non-core provider and of additional
// manifests. The request names the dependencies' latest Ready transition,
// so it is written once per transition and a resync writes nothing.
func nudges(p v1alpha1.Provider) func(plan.Observed) []plan.Nudge {
	names := []string{render.ObjectName(p.ProviderType(), p.GetName()), render.AdditionalObjectName(p.ProviderType(), p.GetName())}
	return func(observed plan.Observed) []plan.Nudge {
		var out []plan.Nudge
		for _, name := range names {
			if n, ok := nudge(p, observed, name); ok {
				out = append(out, n)
			}
		}
		return out
	}
}

func nudge(p v1alpha1.Provider, observed plan.Observed, name string) (plan.Nudge, bool) {
	ks, ok := observed.Get(kustomizev1.KustomizationKind, p.GetNamespace(), name).(*kustomizev1.Kustomization)
	if !ok || !render.ControlledBy(ks, p.GetUID()) {
		return plan.Nudge{}, false
	}
	waiting := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ks.Spec.Suspend || len(ks.Spec.DependsOn) == 0 || waiting == nil ||
		waiting.Reason != meta.DependencyNotReadyReason || waiting.ObservedGeneration != ks.Generation {
		return plan.Nudge{}, false
	}
	var latest metav1.Time
	var versions []string
	for _, d := range ks.Spec.DependsOn {
		dep, ok := observed.Get(kustomizev1.KustomizationKind, namespaceOr(d.Namespace, ks.Namespace), d.Name).(*kustomizev1.Kustomization)
		if !ok {
			return plan.Nudge{}, false
		}
		ready, _, since := DependencyReady(health.ObserveKustomization(dep))
		if !ready {
			return plan.Nudge{}, false
		}
		if latest.Before(&since) {
			latest = since
		}
		versions = append(versions, dep.ResourceVersion)
	}
	token := latest.UTC().Format(time.RFC3339Nano)
	if handled := ks.Status.LastHandledReconcileAt; handled == token || strings.HasPrefix(handled, token+"/") {
		// Flux handled the request and still found a dependency not
		// Ready: it ran once more right after turning Ready (a
		// transition within the same second, so the same token). Ask
		// again for the dependencies as they are now.
		token += "/" + strings.Join(versions, ",")
	}
	return plan.Nudge{Object: ks.DeepCopy(), Token: token, Needs: []string{Group}}, true
}

func namespaceOr(namespace, fallback string) string {
	if namespace == "" {
		return fallback
	}
	return namespace
}
