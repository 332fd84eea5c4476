package build

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/scheme"
)

// MaxFileSize bounds each file read: a repository's YAML, not an
// archive.
const MaxFileSize = 16 << 20

// Loaded is what a set of files holds.
type Loaded struct {
	// CRs are the custom resources Capwright plans (providers, Tenants,
	// contract objects), in file order.
	CRs []ctrl.Object
	// World are the other objects Capwright reads (Namespaces, Secrets,
	// ConfigMaps, Cluster API Clusters, Flux objects…).
	World []ctrl.Object
	// Unknown are the objects of Capwright's API groups whose kind or
	// version this build does not know, each with where it is and why:
	// skipped.
	Unknown []string
	// Ignored counts the objects of kinds no plan reads (kustomize's own
	// kustomization.yaml files, kinds of other tools), skipped.
	Ignored int
	// Invalid are Capwright's objects the API server would refuse (their
	// CRD's schema or CEL rules), each with where it is and the API
	// server's answer: left out, as they would never reach the cluster.
	Invalid []string
}

// InputError is input that cannot be read as Kubernetes objects (not
// YAML, no kind, a field the kind does not have): nothing is built.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// capwrightGroups are the API groups of Capwright's own kinds.
var capwrightGroups = []string{v1alpha1.GroupVersion.Group, tenancyv1alpha1.GroupVersion.Group, clustersv1alpha1.GroupVersion.Group}

// planned are the kinds a plan exists for.
func planned(obj ctrl.Object) bool {
	switch obj.(type) {
	case v1alpha1.Provider, *tenancyv1alpha1.Tenant, *clustersv1alpha1.CapwrightControlPlane, *clustersv1alpha1.CapwrightCluster:
		return true
	}
	return false
}

// Load reads paths — files, or directories walked for *.yaml, *.yml and
// *.json — as Kubernetes objects. Capwright's kinds are decoded strictly
// (a field the kind does not have is an InputError naming it); asWorld
// puts them into World too (a --cluster-file: what the cluster holds,
// not built).
func Load(paths []string, asWorld bool) (Loaded, error) {
	var out Loaded
	s, err := scheme.New()
	if err != nil {
		return out, err
	}
	for _, p := range paths {
		files, err := filesOf(p)
		if err != nil {
			return out, &InputError{err}
		}
		for _, f := range files {
			if err := loadFile(s, f, asWorld, &out); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// filesOf is path itself, or the YAML and JSON files under a directory,
// sorted.
func filesOf(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != path {
			return filepath.SkipDir // .git and the like
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if d.Type().IsRegular() {
				out = append(out, p)
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func loadFile(s *runtime.Scheme, path string, asWorld bool, out *Loaded) error {
	f, err := os.Open(path)
	if err != nil {
		return &InputError{err}
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return &InputError{fmt.Errorf("reading %s: %w", path, err)}
	}
	if len(data) > MaxFileSize {
		return &InputError{fmt.Errorf("%s is larger than %d MiB; give the repository's YAML files, not archives or generated bundles", path, MaxFileSize>>20)}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return &InputError{fmt.Errorf("%s, document %d, is not YAML or JSON: %v", path, doc, err)}
		}
		if len(raw) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: raw}
		where := fmt.Sprintf("%s, document %d", path, doc)
		if err := add(s, u, where, asWorld, out); err != nil {
			return err
		}
	}
}

func add(s *runtime.Scheme, u *unstructured.Unstructured, where string, asWorld bool, out *Loaded) error {
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || u.GetAPIVersion() == "" {
		return &InputError{fmt.Errorf("%s is not a Kubernetes object: it has no apiVersion and kind", where)}
	}
	if u.IsList() {
		return u.EachListItem(func(item runtime.Object) error {
			return add(s, item.(*unstructured.Unstructured), where, asWorld, out)
		})
	}
	ours := slices.Contains(capwrightGroups, gvk.Group)
	if !s.Recognizes(gvk) {
		if ours {
			out.Unknown = append(out.Unknown, fmt.Sprintf("%s: %s %s is not a kind this capwright knows (its kinds of %s: %s); skipped: check apiVersion and kind, or use the capwright release of the manager",
				where, u.GetAPIVersion(), u.GetKind(), gvk.Group, strings.Join(knownKinds(s, gvk.Group), ", ")))
			return nil
		}
		out.Ignored++
		return nil
	}
	typed, err := s.New(gvk)
	if err != nil {
		return &InputError{fmt.Errorf("%s: %v", where, err)}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, typed, ours); err != nil {
		return &InputError{fmt.Errorf("%s: %s %s: %v; fix the field (kubectl explain %s.spec lists them)", where, u.GetKind(), u.GetName(), err, strings.ToLower(u.GetKind()))}
	}
	obj, ok := typed.(ctrl.Object)
	if !ok {
		out.Ignored++
		return nil
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if u.GetName() == "" {
		return &InputError{fmt.Errorf("%s: %s has no metadata.name", where, u.GetKind())}
	}
	if ours && !asWorld {
		invalid, err := admit(u)
		if err != nil {
			return &InputError{fmt.Errorf("%s: %v", where, err)}
		}
		if invalid != "" {
			out.Invalid = append(out.Invalid, where+": "+invalid)
			return nil
		}
	}
	if ours && planned(obj) && !asWorld {
		out.CRs = append(out.CRs, obj)
		return nil
	}
	if ours && !planned(obj) {
		out.Ignored++ // templates: Cluster API clones them into the kinds planned
		return nil
	}
	out.World = append(out.World, obj)
	return nil
}

// knownKinds are the kinds of group the scheme knows, with their
// versions.
func knownKinds(s *runtime.Scheme, group string) []string {
	var out []string
	for gvk := range s.AllKnownTypes() {
		if gvk.Group == group && !strings.HasSuffix(gvk.Kind, "List") {
			out = append(out, gvk.GroupVersion().String()+" "+gvk.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// DefaultNamespaces puts the namespaced objects of in that name no
// namespace into namespace, as kubectl apply -n or a Flux
// Kustomization's targetNamespace does.
func DefaultNamespaces(in *Loaded, namespace string) error {
	s, err := scheme.New()
	if err != nil {
		return err
	}
	mapper := restMapper(s)
	for _, objs := range [][]ctrl.Object{in.CRs, in.World} {
		for _, obj := range objs {
			if obj.GetNamespace() != "" {
				continue
			}
			gvk := obj.GetObjectKind().GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("the scope of %s %s: %w", gvk.Kind, obj.GetName(), err)
			}
			if m.Scope.Name() == apimeta.RESTScopeNameNamespace {
				obj.SetNamespace(namespace)
			}
		}
	}
	return nil
}
