package render

import (
	"fmt"
	"maps"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// kustomization applies the components file of a provider-artifact into the
// provider's namespace, health-checks everything it applied (wait) and
// prunes what a new version dropped.
func kustomization(in Input, om objectMeta) (*kustomizev1.Kustomization, error) {
	p := in.Provider
	spec := p.GetSpec()
	postBuild, err := postBuild(in)
	if err != nil {
		return nil, err
	}
	patches, err := kustomizationPatches(in)
	if err != nil {
		return nil, err
	}
	return &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: om.build(),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: om.name},
			Path:            "./",
			Prune:           true,
			Wait:            true,
			Interval:        interval(spec),
			RetryInterval:   retryInterval(spec),
			Timeout:         timeout(spec),
			Suspend:         spec.Suspend,
			TargetNamespace: p.GetNamespace(),
			// Flux's default, spelled out so that Capwright owns it: an
			// Orphan someone set would leave the objects behind on deletion.
			DeletionPolicy: kustomizev1.DeletionPolicyMirrorPrune,
			PostBuild:      postBuild,
			Images:         images(in),
			Patches:        patches,
			DependsOn:      kustomizationDependsOn(in),
			CommonMetadata: &kustomizev1.CommonMetadata{Labels: clusterctlLabels(in.ProviderLabel)},
			// The provider's installer (ProviderInstaller), not the
			// controller's own identity or the namespace's default.
			ServiceAccountName: InstallerServiceAccountName(p.ProviderType(), p.GetName()),
		},
	}, nil
}

// postBuild substitutes clusterctl variables: spec.configSecret, then
// spec.variables, which win (Flux's order for substituteFrom and
// substitute).
//
// It is always set, with strategy Always: clusterctl components default
// their variables inline (${CAPI_DIAGNOSTICS_ADDRESS:=:8443}), and without
// a postBuild, or with one that has no variables under the default
// strategy, Flux skips substitution and those expressions would reach the
// cluster as literal text.
func postBuild(in Input) (*kustomizev1.PostBuild, error) {
	p := in.Provider
	spec := p.GetSpec()
	pb := &kustomizev1.PostBuild{SubstituteStrategy: kustomizev1.SubstituteStrategyAlways}
	if len(spec.Variables) > 0 {
		pb.Substitute = maps.Clone(spec.Variables)
	}
	if ref := spec.ConfigSecret; ref != nil {
		if err := CheckConfigSecret(p); err != nil {
			return nil, err
		}
		pb.SubstituteFrom = []kustomizev1.SubstituteReference{{Kind: "Secret", Name: ref.Name}}
	}
	return pb, nil
}

// CheckConfigSecret refuses a spec.configSecret in another namespace than
// the provider's. Flux reads substitution Secrets only from the
// Kustomization's namespace, and the controller, which may read Secrets
// cluster-wide, must not read one on behalf of a provider that could not
// (a confused deputy): the check comes before any read.
func CheckConfigSecret(p v1alpha1.Provider) error {
	ref := p.GetSpec().ConfigSecret
	if ref == nil || ref.Namespace == "" || ref.Namespace == p.GetNamespace() {
		return nil
	}
	return fmt.Errorf("spec.configSecret: Secret %s/%s is outside the provider's namespace %s, and Flux reads substitution Secrets only from the Kustomization's namespace; copy the Secret into %s and drop spec.configSecret.namespace",
		ref.Namespace, ref.Name, p.GetNamespace(), p.GetNamespace())
}

// images are the registry mirror rewrites followed by spec.images. An
// entry of spec.images replaces the mirror's entry of the same name rather
// than following it, so the user's choice is what kustomize sees, whatever
// the order it merges duplicates in.
func images(in Input) []kustomize.Image {
	user := in.Provider.GetSpec().Images
	overridden := make(map[string]bool, len(user))
	for _, img := range user {
		overridden[img.Name] = true
	}
	var out []kustomize.Image
	for _, img := range in.MirrorImages {
		if !overridden[img.Name] {
			out = append(out, img)
		}
	}
	return append(out, user...)
}

// kustomizationDependsOn makes Flux wait for the core provider's
// Kustomization and for the user's Kustomization dependencies. Flux
// Kustomizations can depend on Kustomizations only: HelmRelease entries
// of spec.dependsOn (e.g. cert-manager) are left out here; the controller
// waits for them before it writes the Flux objects at all.
func kustomizationDependsOn(in Input) []kustomizev1.DependencyReference {
	var out []kustomizev1.DependencyReference
	if dep := in.CoreDependency; dep != nil {
		out = append(out, kustomizev1.DependencyReference{Name: dep.Name, Namespace: dep.Namespace})
	}
	for _, d := range in.Provider.GetSpec().DependsOn {
		if d.Kind != "" && d.Kind != kustomizev1.KustomizationKind {
			continue
		}
		out = append(out, kustomizev1.DependencyReference{Name: d.Name, Namespace: namespaceOr(d.Namespace, in.Provider)})
	}
	return out
}

// namespaceOr defaults a reference's namespace to the provider's.
func namespaceOr(namespace string, p v1alpha1.Provider) string {
	if namespace == "" {
		return p.GetNamespace()
	}
	return namespace
}
