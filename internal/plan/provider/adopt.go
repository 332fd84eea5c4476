package provider

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/render"
)

// Adoption: a provider's first install over what clusterctl,
// cluster-api-operator or another Capwright provider installed before.
// Flux's server-side apply takes the objects over in place (same UIDs),
// so the install proceeds when the existing installation is in the CR's
// namespace and nothing it would apply is another tool's; otherwise it
// is refused before anything is applied.

// Who installed a provider (Installation.By).
const (
	ByClusterctl = "clusterctl"
	ByOperator   = "cluster-api-operator"
	ByCapwright  = "Capwright"
)

// Installation is an installation of the provider that a tool recorded.
type Installation struct {
	// Namespace is where the provider runs; Version what was installed
	// ("" when the record does not say).
	Namespace, Version string
	// By names the tool: ByClusterctl (clusterctl's inventory, written
	// by clusterctl), ByCapwright (the inventory Capwright writes for an
	// installed provider), ByOperator (a cluster-api-operator provider
	// CR, which writes no inventory).
	By string
	// Record names the object that says so, for people:
	// "clusterctl's inventory Provider capi-system/cluster-api".
	Record string
}

// ExistingObject is a live object the components would apply, found
// before the provider's first install (its metadata only).
type ExistingObject struct {
	metav1.PartialObjectMetadata
	// InKustomization: the Flux Kustomization its labels name exists and
	// lists it in its inventory (labels outlive a Kustomization that no
	// longer applies the object).
	InKustomization bool
	// InHelmRelease: the Helm release its annotations name exists (an
	// uninstalled release leaves its annotations on what it kept).
	InHelmRelease bool
}

// Labels and annotations by which Flux and Helm mark what they apply.
const (
	// KustomizationNameLabel and KustomizationNamespaceLabel are Flux's:
	// the Kustomization that applied an object.
	KustomizationNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	KustomizationNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	// helm-controller's: the HelmRelease that installed an object.
	helmReleaseNameLabel = "helm.toolkit.fluxcd.io/name"
	helmReleaseNSLabel   = "helm.toolkit.fluxcd.io/namespace"
	// HelmReleaseNameAnnotation and HelmReleaseNamespaceAnnotation are
	// Helm's: the release an object belongs to.
	HelmReleaseNameAnnotation      = "meta.helm.sh/release-name"
	HelmReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
	// OperatorGroup is cluster-api-operator's API group: it puts an owner
	// reference to its provider CR on every namespaced object it installs.
	OperatorGroup = "operator.cluster.x-k8s.io"
)

// AdoptingEvent is the reason of the event a first install over another
// tool's installation records.
const AdoptingEvent = "Adopting"

// MigrateGuide is where the steps of an adoption are written.
const MigrateGuide = "docs/migrate.md"

// operatorTakeover is the guide's section on releasing what
// cluster-api-operator holds on to.
const operatorTakeover = MigrateGuide + "#taking-over-from-cluster-api-operator"

// ComponentObjects are the objects of the checked components whose
// owners are checked before a first install: all but the Namespace (the
// provider's own, which holds the CR and is never pruned) and objects
// whose name holds a variable (their name is known only once Flux
// substitutes it).
func ComponentObjects(f Facts) []clusterctl.ObjectRef {
	checked := f.Artifact.Checked
	if checked == nil {
		return nil
	}
	objs, err := checked.Objects()
	if err != nil {
		return nil
	}
	out := make([]clusterctl.ObjectRef, 0, len(objs))
	for _, o := range objs {
		if (o.APIVersion == "v1" && o.Kind == "Namespace") || strings.Contains(o.Name, "${") || o.Name == "" {
			continue
		}
		out = append(out, o)
	}
	return out
}

// installedHere is the installation recorded in the provider's own
// namespace: clusterctl's inventory first (Capwright keeps it too), else
// cluster-api-operator's CR.
func installedHere(f Facts) (Installation, bool) {
	ns := f.Provider.GetNamespace()
	var found Installation
	ok := false
	for _, in := range f.Installations {
		if in.Namespace != ns {
			continue
		}
		if !ok || (found.By == ByOperator && in.By != ByOperator) {
			found, ok = in, true
		}
	}
	return found, ok
}

// Adopting says what a first install takes over: the installation in
// the provider's namespace another tool made, "" when there is none.
func Adopting(f Facts) string {
	in, ok := installedHere(f)
	if !ok || in.By == ByCapwright || f.Provider.GetStatus().InstalledVersion != "" {
		return ""
	}
	return fmt.Sprintf("adopting %s installed by %s (%s): Flux takes its objects over in place", versionOr(in.Version), in.By, in.Record)
}

func versionOr(v string) string {
	if v == "" {
		return "the version"
	}
	return v
}

// checkInstalledElsewhere refuses a first install when the provider is
// installed in another namespace: installing it into the CR's namespace
// too would run two controllers of one provider over the same CRDs and
// webhooks. A Capwright record whose namespace holds a provider of the
// same kind and name is checkUnique's.
func checkInstalledElsewhere(f Facts) error {
	p := f.Provider
	for _, in := range f.Installations {
		if in.Namespace == p.GetNamespace() {
			continue
		}
		if in.By == ByCapwright && managedIn(f, in.Namespace) {
			continue
		}
		version := in.Version
		if version == "" {
			version = "an unrecorded version"
		}
		return incompatible(v1alpha1.InstalledElsewhereReason, fmt.Sprintf(
			"the %s provider %q is installed in namespace %s already (%s, installed by %s: %s); a cluster runs each provider once, and installing it into namespace %s too would run two controllers over the same CRDs and webhooks. To adopt that installation, create %s %s in namespace %s instead of %s (and delete this one); see %s. Nothing was changed",
			p.ProviderType(), p.GetName(), in.Namespace, version, in.By, in.Record, p.GetNamespace(),
			f.Kind, p.GetName(), in.Namespace, p.GetNamespace(), MigrateGuide), 0)
	}
	return nil
}

// managedIn tells whether a provider of the same kind and name exists in
// namespace.
func managedIn(f Facts, namespace string) bool {
	for _, o := range f.Others {
		if o.GetNamespace() == namespace && o.GetName() == f.Provider.GetName() && o.GetUID() != f.Provider.GetUID() {
			return true
		}
	}
	return false
}

// checkOwners refuses a first install when an object the components
// would apply exists and another tool manages it: Flux would take it
// over, and that tool would take it back (or, for owner references,
// Kubernetes' garbage collector delete it with its owner).
func checkOwners(f Facts) error {
	p := f.Provider
	if f.ExistingError != "" {
		return waiting(v1alpha1.CompatibleCondition, v1alpha1.ReconcilingReason,
			fmt.Sprintf("cannot read the objects %s %s would apply, to check that no other tool manages them: %s", p.GetName(), p.GetSpec().Version, f.ExistingError),
			30*time.Second)
	}
	var first string
	more := 0
	for _, o := range f.Existing {
		owner, fix := ownerOf(f, o)
		if owner == "" {
			continue
		}
		if first == "" {
			first = fmt.Sprintf("%s %s %s; %s", o.Kind, objectRef(o), owner, fix)
			continue
		}
		more++
	}
	if first == "" {
		return nil
	}
	msg := fmt.Sprintf("%s %s would take over objects another tool manages: %s", p.GetName(), p.GetSpec().Version, first)
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more of its objects are another tool's)", more)
	}
	return incompatible(v1alpha1.OwnedByAnotherToolReason, msg+". Nothing was applied", 0)
}

func objectRef(o ExistingObject) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// ownerOf says which tool other than this provider's Kustomization
// manages o, and how to hand it over; "" when none does.
func ownerOf(f Facts, o ExistingObject) (owner, fix string) {
	p := f.Provider
	for _, ref := range o.OwnerReferences {
		if group, _, _ := strings.Cut(ref.APIVersion, "/"); group == OperatorGroup {
			return fmt.Sprintf("is owned by cluster-api-operator's %s %s/%s (an owner reference)", ref.Kind, o.Namespace, ref.Name),
				fmt.Sprintf("stop cluster-api-operator and remove its owner references and finalizers from the provider's objects first, as %s says: while the reference is there, deleting that %s makes Kubernetes' garbage collector delete the object", operatorTakeover, ref.Kind)
		}
	}
	if ref := metav1.GetControllerOfNoCopy(&o.ObjectMeta); ref != nil {
		return fmt.Sprintf("is controlled by %s %s (%s, a controller owner reference)", ref.Kind, ref.Name, ref.APIVersion),
			"take it out of what controls it, or remove the owner reference if nothing should control it"
	}
	labels := o.GetLabels()
	if name, ns := labels[KustomizationNameLabel], labels[KustomizationNamespaceLabel]; name != "" && o.InKustomization &&
		(ns != p.GetNamespace() || name != render.ObjectName(p.ProviderType(), p.GetName())) {
		return fmt.Sprintf("is applied by Flux Kustomization %s/%s", ns, name),
			"annotate it kustomize.toolkit.fluxcd.io/prune=disabled and remove it from that Kustomization's source, so that Flux leaves it in place for this provider"
	}
	annotations := o.GetAnnotations()
	if release := annotations[HelmReleaseNameAnnotation]; release != "" && o.InHelmRelease {
		owner = fmt.Sprintf("belongs to Helm release %s/%s", annotations[HelmReleaseNamespaceAnnotation], release)
		if hr := labels[helmReleaseNameLabel]; hr != "" {
			owner += fmt.Sprintf(" (Flux HelmRelease %s/%s)", labels[helmReleaseNSLabel], hr)
		}
		return owner, "take it out of that release without deleting it (annotate it helm.sh/resource-policy=keep, then uninstall the release, or remove it from the chart and its meta.helm.sh/release-name annotation)"
	}
	return "", ""
}
