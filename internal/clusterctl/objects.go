package clusterctl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// object is one decoded YAML document of a components file.
type object struct {
	unstructured.Unstructured
	// document is the 1-based position of the document in the file.
	document int
}

// String names the object for error messages.
func (o object) String() string {
	name := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s (document %d)", o.GetKind(), name, o.document)
}

// decodeObjects splits a multi-document YAML file into objects, skipping
// empty documents. Variables are left as they are: `${VAR:=x}` is a valid
// YAML string, and the structure Flux's kustomize build sees is the raw one
// (Flux substitutes variables after the build).
//
// Splitting is cheap and sequential; the documents are then decoded on
// every CPU, which is most of the time for a large provider (a 5 MiB
// components file: about 100 ms of CPU). Errors name the first failing
// document, as a sequential decode would.
func decodeObjects(components []byte) ([]object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(components)))
	var docs [][]byte
	// readErr, when set, comes after the documents read before it.
	var readErr error
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("reading YAML document %d: %w", doc, err)
			break
		}
		docs = append(docs, data)
	}
	decoded := make([]map[string]any, len(docs))
	errs := make([]error, len(docs))
	workers := min(runtime.GOMAXPROCS(0), len(docs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(docs); i = int(next.Add(1) - 1) {
				decoded[i], errs[i] = decodeDocument(docs[i])
			}
		})
	}
	wg.Wait()
	var objs []object
	for i, content := range decoded {
		doc := i + 1
		if errs[i] != nil {
			return nil, fmt.Errorf("decoding YAML document %d: %w", doc, errs[i])
		}
		if len(content) == 0 {
			continue
		}
		o := object{Unstructured: unstructured.Unstructured{Object: content}, document: doc}
		if o.GetKind() == "" || o.GetAPIVersion() == "" {
			return nil, fmt.Errorf("YAML document %d is not a Kubernetes object: it has no apiVersion or kind", doc)
		}
		objs = append(objs, o)
	}
	if readErr != nil {
		return nil, readErr
	}
	return objs, nil
}

// decodeDocument decodes one YAML document into the JSON-like values an
// unstructured object holds (maps with string keys, []any, string, bool,
// int64, float64, nil), as k8s.io/apimachinery's YAML decoding does, but
// with yaml.v3, the parser kustomize (and so Flux) reads the components
// with, from its node tree straight into those values: sigs.k8s.io/yaml's
// route through yaml.v2 and JSON took a third longer, and decoding
// is most of a provider's preflight. Where the two differ, Flux's parser
// is followed: an unquoted yes, no, on or off is a string (YAML 1.2), not a
// bool (YAML 1.1), and a key defined twice in one mapping is an error.
// Nothing clusterctl asks of the components depends on those.
func decodeDocument(data []byte) (map[string]any, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if root.Kind == 0 {
		return nil, nil // comments only
	}
	// Aliases may expand a document many times over its size (a billion
	// laughs); the values built are bounded by a multiple of it.
	c := converter{budget: 10*len(data) + 10000}
	v, err := c.value(&root)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		what := "a scalar"
		if _, list := v.([]any); list {
			what = "a list"
		}
		return nil, fmt.Errorf("the document is %s, not a mapping (an object)", what)
	}
	return m, nil
}

// converter turns a yaml.v3 node tree into unstructured values.
type converter struct {
	budget int // nodes left to convert
}

func (c *converter) value(n *yaml.Node) (any, error) {
	if c.budget--; c.budget < 0 {
		return nil, errors.New("the document contains excessive aliasing")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.AliasNode:
		return c.value(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: unknown YAML node kind %d", n.Line, n.Kind)
}

// mapping converts a mapping; merge keys (<<) add the keys of the mappings
// they name that it does not set itself, the first named winning.
func (c *converter) mapping(n *yaml.Node) (any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		kv, err := scalarKey(k)
		if err != nil {
			return nil, err
		}
		if _, dup := out[kv]; dup {
			return nil, fmt.Errorf("line %d: mapping key %q already defined", k.Line, kv)
		}
		val, err := c.value(v)
		if err != nil {
			return nil, err
		}
		out[kv] = val
	}
	for _, m := range merges {
		if m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, src := range sources {
			v, err := c.value(src)
			if err != nil {
				return nil, err
			}
			sm, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("line %d: a merge key (<<) takes a mapping or a list of mappings", m.Line)
			}
			for k, e := range sm {
				if _, set := out[k]; !set {
					out[k] = e
				}
			}
		}
	}
	return out, nil
}

// scalar converts a scalar: strings (most of a components file) and
// timestamps as they are written, other tags as yaml.v3 resolves them.
func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		return n.Value, nil
	case "!!null":
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	switch t := v.(type) {
	case int:
		return int64(t), nil
	case int64, bool, string:
		return t, nil
	case uint64:
		return float64(t), nil // beyond int64, as JSON decoding gives it
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, fmt.Errorf("line %d: %s is not a number JSON can hold", n.Line, n.Value)
		}
		return t, nil
	case []byte:
		return string(t), nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML value %q (%s)", n.Line, n.Value, n.ShortTag())
}

// scalarKey is a mapping key as a string.
func scalarKey(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: a mapping key must be a scalar", k.Line)
	}
	v, err := scalar(k)
	if err != nil {
		return "", err
	}
	switch t := v.(type) {
	case string:
		return t, nil
	case nil:
		return "null", nil
	default:
		return fmt.Sprint(t), nil
	}
}

// ObjectsInGroups names the objects whose API group is one of groups,
// e.g. a ClusterClass a provider ships, which can only be applied once the
// core provider's CRDs are served.
func (c *Components) ObjectsInGroups(groups map[string]bool) []string {
	var names []string
	for _, o := range c.objs {
		if groups[o.GroupVersionKind().Group] {
			names = append(names, o.String())
		}
	}
	return names
}

// Components is a components file decoded once, for the questions
// preflight and render ask of it: decoding over a megabyte of YAML is most
// of the cost of each.
type Components struct {
	objs []object
}

// Decode decodes a components file.
func Decode(components []byte) (*Components, error) {
	objs, err := decodeObjects(components)
	if err != nil {
		return nil, err
	}
	return &Components{objs: objs}, nil
}

// ManagerDeployment finds the Deployment that runs the provider's
// controller manager (the one with a container named "manager") and that
// container's args; "" when there is none.
func (c *Components) ManagerDeployment() (name string, args []string) {
	for _, o := range c.Deployments() {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, ct := range containers {
			m, ok := ct.(map[string]any)
			if !ok || m["name"] != "manager" {
				continue
			}
			list, _, _ := unstructured.NestedStringSlice(m, "args")
			return o.GetName(), list
		}
	}
	return "", nil
}

// Deployments are the components' Deployments, in the file's order, as
// the file holds them (variables not substituted).
func (c *Components) Deployments() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := range c.objs {
		if c.objs[i].GetKind() == "Deployment" {
			out = append(out, &c.objs[i].Unstructured)
		}
	}
	return out
}

// CustomResourceDefinitions are the components' CRDs, in the file's
// order, as the file holds them.
func (c *Components) CustomResourceDefinitions() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := range c.objs {
		if isCRD(c.objs[i]) {
			out = append(out, &c.objs[i].Unstructured)
		}
	}
	return out
}

// ObjectRef names an object of the components as the file holds it.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
}

// Objects names every object of the components, in the file's order.
func (c *Components) Objects() []ObjectRef {
	refs := make([]ObjectRef, 0, len(c.objs))
	for _, o := range c.objs {
		refs = append(refs, ObjectRef{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return refs
}
