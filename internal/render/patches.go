package render

import (
	"fmt"

	"github.com/fluxcd/pkg/apis/kustomize"
)

// pruneAnnotation, set to "disabled", keeps an object when Flux prunes
// (kustomize-controller's kustomize.toolkit.fluxcd.io/prune).
const pruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"

// kustomizationPatches are the Kustomization's patches, in the order
// kustomize applies them:
//
//  1. clusterctl's namespace fixes, which rewrite references to the
//     components' own namespace;
//  2. prune protection of CustomResourceDefinitions and of the Namespace:
//     deleting a provider must never delete users' objects, which go with
//     their CRDs, nor the namespace that holds the provider CR and its
//     Secrets;
//  3. spec.manager and spec.deployment, as one strategic merge;
//  4. spec.patches, last, so the user has the final word.
//
// Flux's commonMetadata labels are added after the build (at apply time),
// so no patch may select objects by them.
func kustomizationPatches(in Input) ([]kustomize.Patch, error) {
	var out []kustomize.Patch
	out = appendPatches(out, in.NamespacePatches)
	out = append(out,
		keepOnPrune("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
		keepOnPrune("", "v1", "Namespace"),
	)
	workload, err := workloadPatch(in)
	if err != nil {
		return nil, err
	}
	if workload != nil {
		out = append(out, *workload)
	}
	return appendPatches(out, in.Provider.GetSpec().Patches), nil
}

// keepOnPrune annotates every object of a kind so Flux never prunes it. A
// strategic merge adds the annotation whether or not the object has
// annotations already (a JSON6902 add would fail without them); with a
// target, kustomize ignores the patch's own name.
func keepOnPrune(group, version, kind string) kustomize.Patch {
	apiVersion := version
	if group != "" {
		apiVersion = group + "/" + version
	}
	return kustomize.Patch{
		Patch: fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: not-used\n  annotations:\n    %s: disabled\n",
			apiVersion, kind, pruneAnnotation),
		Target: &kustomize.Selector{Group: group, Version: version, Kind: kind},
	}
}

// appendPatches appends deep copies, so the rendered object never shares a
// selector with the provider's spec.
func appendPatches(out, patches []kustomize.Patch) []kustomize.Patch {
	for i := range patches {
		out = append(out, *patches[i].DeepCopy())
	}
	return out
}
