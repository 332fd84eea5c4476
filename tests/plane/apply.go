package plane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// fieldManager is the server-side apply field manager of everything the
// harness applies.
const fieldManager = "capwright-plane"

// Applier applies YAML documents to an API server with server-side apply, as
// kubectl apply --server-side would.
type Applier struct {
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// applyYAML decodes the YAML documents of r and applies them as the
// plane's admin, returning the objects.
func (p *Plane) applyYAML(ctx context.Context, r io.Reader) ([]*unstructured.Unstructured, error) {
	objs, err := DecodeYAML(r)
	if err != nil {
		return nil, err
	}
	applier, err := NewApplier(p.Config)
	if err != nil {
		return nil, err
	}
	return objs, applier.Apply(ctx, objs...)
}

// NewApplier returns an Applier for the API server behind cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// DecodeYAML splits a multi-document YAML stream into objects, skipping
// empty documents.
func DecodeYAML(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(raw) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: raw})
	}
}

// Apply applies objs in order.
func (a *Applier) Apply(ctx context.Context, objs ...*unstructured.Unstructured) error {
	for _, obj := range objs {
		if err := a.applyOne(ctx, obj); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), objectKey(obj), err)
		}
	}
	return nil
}

func (a *Applier) applyOne(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	// A kind whose CRD was applied a moment ago may not be discoverable yet.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			a.mapper.Reset()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("no API for %s: %w", gvk, err)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = a.dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		ri = a.dynamic.Resource(mapping.Resource).Namespace(ns)
	}
	force := true
	_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	return err
}

// ApplyFiles applies every *.yaml file in dir, in name order.
func (a *Applier) ApplyFiles(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no YAML files in %s; build them with `make tools`", dir)
	}
	sort.Strings(files)
	// A kustomize kustomization.yaml beside the manifests is not an object.
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	var all []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeYAML(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		if err := a.Apply(ctx, objs...); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		all = append(all, objs...)
	}
	return all, nil
}

// waitCRDsEstablished waits until every CRD among objs is Established, so
// objects of their kinds can be created right away.
func waitCRDsEstablished(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		name := obj.GetName()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := fromUnstructured(got, &crd); err != nil {
				return false, err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

func objectKey(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// ApplyCRDs applies objs and waits until the CRDs among them are
// Established, so objects of their kinds can be created right away.
func (p *Plane) ApplyCRDs(ctx context.Context, objs []*unstructured.Unstructured) error {
	applier, err := NewApplier(p.Config)
	if err != nil {
		return err
	}
	if err := applier.Apply(ctx, objs...); err != nil {
		return err
	}
	return waitCRDsEstablished(ctx, p.Config, objs)
}
