package render

import (
	"fmt"

	"github.com/fluxcd/pkg/apis/kustomize"
)

// pruneAnnotation, set to "disabled", keeps an object when Flux prunes
// (kustomize-controller's kustomize.toolkit.fluxcd.io/prune).
const pruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"

// substituteAnnotation, set to "disabled", makes kustomize-controller skip
// its post-build substitution for an object.
const substituteAnnotation = "kustomize.toolkit.fluxcd.io/substitute"

// kustomizationPatches are the Kustomization's patches, in the order
// kustomize applies them:
//
//  1. clusterctl's namespace fixes, which rewrite references to the
//     components' own namespace;
//  2. prune protection of CustomResourceDefinitions and of the Namespace:
//     deleting a provider must never delete users' objects, which go with
//     their CRDs, nor the namespace that holds the provider CR and its
//     Secrets; with Input.SkipCRDSubstitution the same patch also turns
//     off substitution for the CRDs;
//  3. spec.manager and spec.deployment, as one strategic merge;
//  4. spec.patches, so the user has the final word;
//  5. with Input.Rollback, every CustomResourceDefinition
//     taken out of the build: the version rolled back to applies none,
//     and the newer ones in the cluster stay as they are (they are kept
//     on prune).
//
// Flux's commonMetadata labels are added after the build (at apply time),
// so no patch may select objects by them.
func kustomizationPatches(in Input) ([]kustomize.Patch, error) {
	var out []kustomize.Patch
	out = appendPatches(out, in.NamespacePatches)
	out = append(out,
		crdPatch(in),
		keepOnPrune("", "v1", "Namespace"),
	)
	workload, err := workloadPatch(in)
	if err != nil {
		return nil, err
	}
	if workload != nil {
		out = append(out, *workload)
	}
	out = appendPatches(out, in.Provider.GetSpec().Patches)
	if in.Rollback {
		out = append(out, kustomize.Patch{
			Patch:  "$patch: delete\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: not-used\n",
			Target: &kustomize.Selector{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		})
	}
	return out, nil
}

// crdPatch keeps every CustomResourceDefinition on prune and, when no CRD
// has anything to substitute, also off Flux's post-build substitution: a
// CRD is most of a provider's YAML, and kustomize-controller otherwise
// turns each one into YAML, substitutes it and parses it back on every
// build (a fifth of the core provider's build, measured in
// BenchmarkFluxBuildOfTheCoreProvider). One patch, so kustomize merges
// into each CRD once.
func crdPatch(in Input) kustomize.Patch {
	annotations := []string{pruneAnnotation}
	if in.SkipCRDSubstitution {
		annotations = append(annotations, substituteAnnotation)
	}
	return disableAnnotations("apiextensions.k8s.io", "v1", "CustomResourceDefinition", annotations...)
}

// keepOnPrune annotates every object of a kind so Flux never prunes it.
func keepOnPrune(group, version, kind string) kustomize.Patch {
	return disableAnnotations(group, version, kind, pruneAnnotation)
}

// disableAnnotations sets each annotation to "disabled" on every object of
// a kind. A strategic merge adds them whether or not the object has
// annotations already (a JSON6902 add would fail without them); with a
// target, kustomize ignores the patch's own name.
func disableAnnotations(group, version, kind string, annotations ...string) kustomize.Patch {
	apiVersion := version
	if group != "" {
		apiVersion = group + "/" + version
	}
	patch := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: not-used\n  annotations:\n", apiVersion, kind)
	for _, a := range annotations {
		patch += fmt.Sprintf("    %s: disabled\n", a)
	}
	return kustomize.Patch{Patch: patch, Target: &kustomize.Selector{Group: group, Version: version, Kind: kind}}
}

// appendPatches appends deep copies, so the rendered object never shares a
// selector with the provider's spec.
func appendPatches(out, patches []kustomize.Patch) []kustomize.Patch {
	for i := range patches {
		out = append(out, *patches[i].DeepCopy())
	}
	return out
}
