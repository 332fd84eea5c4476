package dryrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/resource"
)

// maxFilesSize bounds the files Build writes out: the caller's artifact
// is bounded already, this keeps a mistake from filling the disk.
const maxFilesSize = 64 << 20

// Built is what Flux would apply for a Kustomization, in the order
// kustomize built it.
type Built struct {
	Objects []*unstructured.Unstructured
	// masks are the values of the Secrets the substitution read
	// (spec.postBuild.substituteFrom), to hide in every message.
	masks []string
}

// Build is what kustomize-controller would apply for ks over files: it
// writes the files to a private directory, generates kustomization.yaml
// at spec.path with the Kustomization's patches, images, namespace and
// name prefix (Flux's Generator), builds it (SecureBuild: no remote bases,
// nothing outside the directory), substitutes variables as
// spec.postBuild says, and sets the labels and annotations
// kustomize-controller adds when it applies (its owner labels
// kustomize.toolkit.fluxcd.io/name and /namespace, and
// spec.commonMetadata).
//
// files are the source's files as source-controller stores them (the
// OCIRepository's ignore rules already applied), by path relative to the
// source's root: "core-components.yaml", or
// "components/core-components.yaml" for a Kustomization of path
// ./components. secrets reads the substituteFrom ConfigMaps and Secrets;
// Build asks it for nothing else, and only in ks's namespace.
//
// What Build leaves out, as Capwright's Kustomizations do not use it:
// SOPS decryption, remote bases, and kustomize-controller's
// StrictPostBuildSubstitutions feature gate (off by default).
func Build(ctx context.Context, secrets client.Reader, ks *kustomizev1.Kustomization, files map[string][]byte) (*Built, error) {
	// The generator only lists the YAML files that decode, decoding each;
	// the build decodes them again and fails the same way on one that
	// does not. It is given stand-ins that decode, and the build the
	// files: a provider's components (over a megabyte for Cluster API's
	// core) are parsed once, not twice, and Flux's builds, which take
	// one lock for the whole process, hold it half as long.
	dir, err := writeFiles(standIns(files))
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()

	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ks)
	if err != nil {
		return nil, fmt.Errorf("reading Kustomization %s/%s: %w", ks.Namespace, ks.Name, err)
	}
	u := unstructured.Unstructured{Object: obj}
	// kustomize-controller joins spec.path under the source's root the
	// same way: ".." cannot climb out of it.
	dirPath := filepath.Join(dir, filepath.Clean(string(filepath.Separator)+ks.Spec.Path))
	if _, err := os.Stat(dirPath); err != nil {
		return nil, fmt.Errorf("the path %q of Kustomization %s/%s: not found in the source's files", ks.Spec.Path, ks.Namespace, ks.Name)
	}
	if _, err := fluxkustomize.NewGenerator(dir, u).WriteFile(dirPath); err != nil {
		return nil, fmt.Errorf("generating kustomization.yaml: %w", err)
	}
	forBuild, aside := setAside(files, ks)
	if err := overwrite(dir, forBuild); err != nil {
		return nil, err
	}
	resources, err := kustomizeBuild(dir, dirPath, files)
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %w", err)
	}

	source := newSubstitutionSource(secrets, ks.Namespace)
	built := &Built{}
	fail := func(err error) (*Built, error) {
		return nil, maskError(newMasker(source.secretValues()), err)
	}
	always := ks.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
	substitute := func(res *resource.Resource) error {
		if _, err := fluxkustomize.SubstituteVariables(ctx, source, u, res, fluxkustomize.SubstituteWithAlways(always)); err != nil {
			return fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
		}
		return nil
	}
	all := resources.Resources()
	if ks.Spec.PostBuild != nil && len(all) > 0 {
		// Flux reads the variables and checks their names for every
		// object, and fails on the first; one small object fails the
		// same way, named as Flux would name the first.
		if err := substitute(probe()); err != nil {
			return fail(fmt.Errorf("post build failed for '%s/%s': %w", all[0].GetGvk(), all[0].GetName(), errors.Unwrap(err)))
		}
	}
	for _, res := range all {
		// kustomize-controller's check that every object can be applied.
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			return fail(fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", res.String()))
		}
		// Flux prints every object as YAML, substitutes in the text and
		// reads it back. Its envsubst changes text only at a "${" (a
		// variable) or a "$$" (an escaped '$'); an object whose printed
		// text has neither reads back as it was. Most of a provider's
		// bytes are CRD schemas without one: half of a build's time.
		if ks.Spec.PostBuild != nil {
			aside.putBackToSubstitute(&res.RNode)
		}
		if ks.Spec.PostBuild != nil && substitutable(res.YNode()) {
			if err := substitute(res); err != nil {
				return fail(err)
			}
		}
		o, err := asUnstructured(&res.RNode)
		if err != nil {
			return fail(fmt.Errorf("reading %s %s after the build: %w", res.GetKind(), res.GetName(), err))
		}
		if err := aside.putBack(o); err != nil {
			return fail(err)
		}
		built.Objects = append(built.Objects, o)
	}
	built.masks = source.secretValues()

	// At apply time, in this order: the owner labels (ssa.ResourceManager
	// SetOwnerLabels), then spec.commonMetadata (ssautil.SetCommonMetadata),
	// after the build, so no patch can select by them.
	owner := map[string]string{
		kustomizev1.GroupVersion.Group + "/name":      ks.Name,
		kustomizev1.GroupVersion.Group + "/namespace": ks.Namespace,
	}
	var common kustomizev1.CommonMetadata
	if ks.Spec.CommonMetadata != nil {
		common = *ks.Spec.CommonMetadata
	}
	for _, o := range built.Objects {
		o.SetLabels(merged(o.GetLabels(), owner, common.Labels))
		if len(common.Annotations) > 0 {
			o.SetAnnotations(merged(o.GetAnnotations(), common.Annotations))
		}
	}
	return built, nil
}

// probe is a small object to substitute in before the build's objects
// (Build).
func probe() *resource.Resource {
	return &resource.Resource{RNode: *kyaml.NewMapRNode(&map[string]string{})}
}

// substitutable tells whether the YAML printed of n holds "${" or "$$",
// where Flux's envsubst (fluxcd/pkg/envsubst) changes text: in a key, a
// value, a tag, an anchor or a comment. The printer never splits or
// escapes either ('$' and '{' print as they are), nor writes them between
// two nodes. An alias is not followed: its anchor is earlier in the same
// document, walked there.
func substitutable(n *kyaml.Node) bool {
	if n == nil {
		return false
	}
	for _, s := range []string{n.Value, n.Tag, n.Anchor, n.HeadComment, n.LineComment, n.FootComment} {
		if strings.Contains(s, "${") || strings.Contains(s, "$$") {
			return true
		}
	}
	for _, child := range n.Content {
		if substitutable(child) {
			return true
		}
	}
	return false
}

// merged is base with every map of more laid over it in turn.
func merged(base map[string]string, more ...map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for _, m := range more {
		maps.Copy(out, m)
	}
	return out
}

// writeFiles writes files into a new private directory (0700, files
// 0600) and returns it. A path that is absolute or climbs out with ".."
// is refused, as are files of more than maxFilesSize in all.
func writeFiles(files map[string][]byte) (string, error) {
	total := 0
	for name, data := range files {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return "", fmt.Errorf("source file %q: not a path inside the source", name)
		}
		if total += len(data); total > maxFilesSize {
			return "", fmt.Errorf("the source's files hold more than %d MiB", maxFilesSize>>20)
		}
	}
	dir, err := os.MkdirTemp("", "capwright-dryrun-")
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err == nil {
		err = writeUnder(root, files)
		err = errors.Join(err, root.Close())
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// standIn is what the generator reads of every YAML file (Build).
const standIn = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: capwright-dry-run-stand-in\n"

// standIns are files with each YAML file's content replaced by standIn.
func standIns(files map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(files))
	for name, data := range files {
		if ext := path.Ext(name); ext == ".yaml" || ext == ".yml" {
			data = []byte(standIn)
		}
		out[name] = data
	}
	return out
}

// overwrite writes files over their stand-ins in dir.
func overwrite(dir string, files map[string][]byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	return errors.Join(writeUnder(root, files), root.Close())
}

// writeUnder writes files under root, in a stable order, creating their
// directories.
func writeUnder(root *os.Root, files map[string][]byte) error {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.FromSlash(name)
		if err := root.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("source file %q: %w", name, err)
		}
		if err := root.WriteFile(path, files[name], 0o600); err != nil {
			return fmt.Errorf("source file %q: %w", name, err)
		}
	}
	return nil
}

// asUnstructured is the object as kustomize-controller reads its build
// back, through JSON: numbers int64 or float64, which unstructured objects
// hold (a YAML int would panic a DeepCopy). The YAML is decoded once and
// its values converted; kyaml's MarshalJSON prints and parses it again
// first, a third of a large build's time. A value JSON would turn into
// something else (a timestamp) takes that way.
func asUnstructured(rn *kyaml.RNode) (*unstructured.Unstructured, error) {
	m, err := rn.Map()
	if err != nil {
		return nil, err
	}
	if v, ok := jsonValue(m); ok {
		return &unstructured.Unstructured{Object: v.(map[string]any)}, nil
	}
	data, err := rn.MarshalJSON()
	if err != nil {
		return nil, err
	}
	o := &unstructured.Unstructured{}
	return o, o.UnmarshalJSON(data)
}

// jsonValue is v with the values JSON would decode it to; not ok when v
// holds one it does not convert.
func jsonValue(v any) (any, bool) {
	switch v := v.(type) {
	case nil, string, bool, int64, float64:
		return v, true
	case int:
		return int64(v), true
	case map[string]any:
		for k, e := range v {
			c, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			v[k] = c
		}
		return v, true
	case []any:
		for i, e := range v {
			c, ok := jsonValue(e)
			if !ok {
				return nil, false
			}
			v[i] = c
		}
		return v, true
	}
	return nil, false
}
