package convert

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/kustomize"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// convertPatches maps spec.manifestPatches and spec.patches to
// spec.patches, which Flux applies as kustomize patches (before it moves
// the objects into the provider's namespace, and before it adds the
// clusterctl labels).
//
// The operator applies every non-RFC 6902 patch as a JSON merge patch
// (RFC 7396), which replaces lists; kustomize applies it as a strategic
// merge, which merges lists of Kubernetes types by key. Patches holding a
// list are converted but reported.
func convertPatches(in *OperatorProvider, spec *v1alpha1.ProviderSpec, fs *findings) {
	if len(in.Spec.ManifestPatches) > 0 && len(in.Spec.Patches) > 0 {
		fs.attention("spec.patches", "set together with spec.manifestPatches, which the operator refuses (it applied neither); both are converted: check the provider's patches are what you want")
	}
	for i, raw := range in.Spec.ManifestPatches {
		convertManifestPatch(fmt.Sprintf("spec.manifestPatches[%d]", i), raw, spec, fs)
	}
	for i, p := range in.Spec.Patches {
		if p == nil {
			continue
		}
		convertGenericPatch(fmt.Sprintf("spec.patches[%d]", i), in.Namespace, p, spec, fs)
	}
}

// convertManifestPatch maps a legacy manifest patch: a JSON merge patch
// that the operator applies to the objects of its kind (and name, when it
// has one), and only when it names an apiVersion (any: it is not compared).
func convertManifestPatch(field, raw string, spec *v1alpha1.ProviderSpec, fs *findings) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(raw), &head); err != nil {
		fs.attention(field, "not a YAML object (%v), so the operator could not apply it either: left out", err)
		return
	}
	if head.Kind == "" || head.APIVersion == "" {
		fs.attention(field, "names no kind or no apiVersion, so the operator matched it to no object and never applied it: left out. To apply it now, add it to spec.patches with a target")
		return
	}
	target := &kustomize.Selector{Kind: head.Kind, Name: head.Metadata.Name}
	spec.Patches = append(spec.Patches, kustomize.Patch{Patch: raw, Target: target})
	what := "every " + head.Kind
	if head.Metadata.Name != "" {
		what = head.Kind + " " + head.Metadata.Name
	}
	fs.note(field, "converted to a patch of %s (the operator compared kind and name only, not apiVersion or namespace)", what)
	checkMergeLists(field, raw, fs)
}

// convertGenericPatch maps an entry of the operator's spec.patches: the
// same target fields as kustomize's.
func convertGenericPatch(field, namespace string, p *OperatorPatch, spec *v1alpha1.ProviderSpec, fs *findings) {
	out := kustomize.Patch{Patch: p.Patch}
	rfc6902 := isJSONPatch(p.Patch)
	if t := p.Target; t != nil {
		out.Target = &kustomize.Selector{
			Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name,
			Namespace: t.Namespace, LabelSelector: t.LabelSelector,
		}
		if t.Namespace != "" && t.Namespace == namespace {
			// Flux patches before it moves objects to the provider's
			// namespace: the components' own namespace may differ.
			out.Target.Namespace = ""
			fs.note(field+".target.namespace", "dropped: Flux applies patches before it moves the components into the provider's namespace (%s), so the namespace the components name may differ; every namespaced object of the provider ends up in %s anyway", namespace, namespace)
		} else if t.Namespace != "" {
			fs.attention(field+".target.namespace", "%s is not the provider's namespace (%s): the operator, which moves every object there first, matched nothing with it; Flux patches before moving objects, so it matches objects the components put in %s. Check the patch is wanted", t.Namespace, namespace, t.Namespace)
		}
		if strings.Contains(t.LabelSelector, "cluster.x-k8s.io/provider") || strings.Contains(t.LabelSelector, "clusterctl.cluster.x-k8s.io") {
			fs.attention(field+".target.labelSelector", "selects by a clusterctl label, which Flux adds after the patches (the operator added it before): the patch may match nothing. Select by kind and name instead")
		}
	}
	if out.Target == nil {
		head := patchHead(p.Patch)
		switch {
		case rfc6902:
			out.Target = &kustomize.Selector{}
			fs.attention(field+".target", "none: the operator applied this RFC 6902 patch to every object of the provider; kustomize needs a target, so it gets an empty one (every object). Narrow it to the objects meant")
		case head.Kind != "":
			out.Target = &kustomize.Selector{Kind: head.Kind, Name: head.Name}
			fs.attention(field+".target", "none: the operator merged this patch into every object of the provider (setting kind %s on all of them); it is converted to a patch of the objects the patch names (kind %s%s). Check that was the intent", head.Kind, head.Kind, nameSuffix(head.Name))
		default:
			out.Target = &kustomize.Selector{}
			fs.attention(field+".target", "none: the operator merged this patch into every object of the provider; it gets an empty target (every object). Narrow it to the objects meant")
		}
	}
	spec.Patches = append(spec.Patches, out)
	if !rfc6902 {
		checkMergeLists(field+".patch", p.Patch, fs)
	}
}

// checkMergeLists reports a merge patch holding a list: the operator's
// JSON merge replaced it, a strategic merge may merge it.
func checkMergeLists(field, raw string, fs *findings) {
	var v any
	if yaml.Unmarshal([]byte(raw), &v) != nil || !holdsList(v) {
		return
	}
	fs.attention(field, "holds a list: the operator applied the patch as a JSON merge patch, which replaces a list as a whole; Flux applies it as a strategic merge, which merges lists of Kubernetes types (containers, env, ports…) by their key. Check the result, or write a JSON 6902 patch (op replace) for the list")
}

func holdsList(v any) bool {
	switch t := v.(type) {
	case []any:
		return true
	case map[string]any:
		for _, c := range t {
			if holdsList(c) {
				return true
			}
		}
	}
	return false
}

// isJSONPatch tells an RFC 6902 patch (a list of operations), as the
// operator does: it tries that first.
func isJSONPatch(raw string) bool {
	data, err := yaml.YAMLToJSON([]byte(raw))
	if err != nil {
		return false
	}
	var ops []map[string]any
	return json.Unmarshal(data, &ops) == nil
}

type objectHead struct{ Kind, Name string }

func patchHead(raw string) objectHead {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = yaml.Unmarshal([]byte(raw), &head)
	return objectHead{Kind: head.Kind, Name: head.Metadata.Name}
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	return ", name " + name
}
