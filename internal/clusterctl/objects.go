package clusterctl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

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
func decodeObjects(components []byte) ([]object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(components)))
	var objs []object
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML document %d: %w", doc, err)
		}
		var content map[string]any
		if err := utilyaml.Unmarshal(data, &content); err != nil {
			return nil, fmt.Errorf("decoding YAML document %d: %w", doc, err)
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
	for _, o := range c.objs {
		if o.GetKind() != "Deployment" {
			continue
		}
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
