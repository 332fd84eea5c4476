package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Document is one object read from the input.
type Document struct {
	// Source names where it was read: "FILE, document N" (and the item of
	// a List).
	Source     string
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Provider is the decoded operator CR, or nil for any other object.
	Provider *OperatorProvider
	// Inventory is a provider of clusterctl's inventory (read from the
	// cluster with its Deployments), or nil.
	Inventory *InventoryProvider
	// Findings are what decoding found: fields the operator's API does not
	// have, or a provider in an API version the converter does not read.
	Findings []Finding
}

// Label names the object in findings: "Kind namespace/name (source)".
func (d Document) Label() string {
	name := d.Name
	if d.Namespace != "" {
		name = d.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s (%s)", d.Kind, name, d.Source)
}

// Decode reads a multi-document YAML (or JSON) stream. Kubernetes Lists
// (kubectl get -o yaml) are read item by item. Operator provider CRs are
// decoded strictly: every field the operator's v1alpha2 API does not have
// becomes an Attention finding, never silently dropped. Other objects are
// returned without content (the converter never needs a Secret's).
func Decode(source string, data []byte) ([]Document, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Document
	for n := 1; ; n++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading YAML document %d: %w", source, n, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		docs, err := decodeObject(fmt.Sprintf("%s, document %d", source, n), raw)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
}

// decodeObject decodes one YAML document, expanding Lists.
func decodeObject(source string, raw []byte) ([]Document, error) {
	data, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not YAML: %w", source, err)
	}
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: not a Kubernetes object (a mapping with apiVersion and kind): %w", source, err)
	}
	if head.Kind == "" || head.APIVersion == "" {
		return nil, fmt.Errorf("%s: not a Kubernetes object: it has no apiVersion or kind", source)
	}
	if strings.HasSuffix(head.Kind, "List") && head.Items != nil {
		var out []Document
		for i, item := range head.Items {
			docs, err := decodeObject(fmt.Sprintf("%s, item %d", source, i+1), item)
			if err != nil {
				return nil, err
			}
			out = append(out, docs...)
		}
		return out, nil
	}
	doc := Document{
		Source: source, APIVersion: head.APIVersion, Kind: head.Kind,
		Name: head.Metadata.Name, Namespace: head.Metadata.Namespace,
	}
	group, version, _ := strings.Cut(head.APIVersion, "/")
	if group != OperatorGroup || operatorKinds[head.Kind] == "" {
		return []Document{doc}, nil
	}
	fs := &findings{object: doc.Label()}
	if version != "v1alpha2" {
		fs.attention("apiVersion", "%s is not read; convert the operator's v1alpha2 objects: `kubectl get %s -A -o yaml` returns them in v1alpha2 (the operator converts its older versions)", head.APIVersion, strings.ToLower(head.Kind)+"s."+OperatorGroup)
		doc.Findings = fs.list
		return []Document{doc}, nil
	}
	var p OperatorProvider
	strict, err := kjson.UnmarshalStrict(data, &p)
	if err != nil {
		return nil, fmt.Errorf("%s: %s is not a valid %s: %w", source, head.Kind, OperatorAPIVersion, err)
	}
	for _, e := range strict {
		field := ""
		var fe kjson.FieldError
		if errors.As(e, &fe) {
			field = fe.FieldPath()
		}
		fs.attention(field, "not a field of %s %s (cluster-api-operator %s), so not converted: %v; check what it was meant to do", OperatorAPIVersion, head.Kind, OperatorVersion, e)
	}
	doc.Provider = &p
	doc.Findings = fs.list
	return []Document{doc}, nil
}

// stripComments drops comment-only lines, to tell an empty document.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
