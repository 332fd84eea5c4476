package refdocs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// crdDir holds the CRDs make manifests generates from the API types.
const crdDir = "manifests/crd/bases"

// crdPages renders one page per API group: its kinds, their printer
// columns and validation rules, and every field with its type, default,
// limits and description as the CRD states them.
func crdPages(root string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(root, crdDir, "*.capwright.io_*.yaml"))
	if err != nil {
		return nil, err
	}
	byGroup := map[string][]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := sigsyaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		byGroup[crd.Spec.Group] = append(byGroup[crd.Spec.Group], crd)
	}
	if len(byGroup) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", crdDir)
	}
	pages := map[string]string{}
	for group, crds := range byGroup {
		sort.Slice(crds, func(i, j int) bool { return kindOrder(crds[i]) < kindOrder(crds[j]) })
		page, err := groupPage(group, crds)
		if err != nil {
			return nil, err
		}
		pages[strings.TrimSuffix(group, ".capwright.io")+".md"] = page
	}
	return pages, nil
}

// kindOrder puts the core provider first, then the kinds by name.
func kindOrder(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd.Spec.Names.Kind == "CoreProvider" {
		return ""
	}
	return crd.Spec.Names.Kind
}

func groupPage(group string, crds []*apiextensionsv1.CustomResourceDefinition) (string, error) {
	var b strings.Builder
	version := served(crds[0]).Name
	header(&b, fmt.Sprintf("%s/%s", group, version), crdDir+" (make manifests, from the API types' doc comments)")
	b.WriteString("| Kind | Short names | Scope | `kubectl get` categories |\n|---|---|---|---|\n")
	for _, crd := range crds {
		n := crd.Spec.Names
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | %s |\n", n.Kind, anchor(n.Kind), code(n.ShortNames), crd.Spec.Scope, code(n.Categories))
	}
	b.WriteString("\n")

	// Kinds whose schemas are equal but for their own description and
	// rules (the seven provider kinds) share one field table.
	shared := true
	first, err := fieldsKey(crds[0])
	if err != nil {
		return "", err
	}
	for _, crd := range crds[1:] {
		key, err := fieldsKey(crd)
		if err != nil {
			return "", err
		}
		shared = shared && key == first
	}
	for _, crd := range crds {
		v := served(crd)
		s := v.Schema.OpenAPIV3Schema
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", crd.Spec.Names.Kind, text(s.Description))
		if len(s.XValidations) > 0 {
			b.WriteString("Rules:\n\n")
			for _, r := range s.XValidations {
				fmt.Fprintf(&b, "- %s (`%s`)\n", text(r.Message), r.Rule)
			}
			b.WriteString("\n")
		}
		if !shared || len(crds) == 1 {
			columns(&b, v.AdditionalPrinterColumns)
			b.WriteString("### Fields\n\n")
			fieldTable(&b, s)
		}
	}
	if shared && len(crds) > 1 {
		b.WriteString("## Fields\n\nEvery kind above has these columns and fields.\n\n")
		columns(&b, served(crds[0]).AdditionalPrinterColumns)
		fieldTable(&b, served(crds[0]).Schema.OpenAPIV3Schema)
	}
	return b.String(), nil
}

func columns(b *strings.Builder, cols []apiextensionsv1.CustomResourceColumnDefinition) {
	if len(cols) == 0 {
		return
	}
	b.WriteString("`kubectl get` columns (`-o wide` adds those of priority 1):\n\n| Column | JSONPath | Priority |\n|---|---|---|\n")
	for _, c := range cols {
		fmt.Fprintf(b, "| %s | `%s` | %d |\n", c.Name, strings.ReplaceAll(c.JSONPath, "|", `\|`), c.Priority)
	}
	b.WriteString("\n")
}

// served is the CRD's storage version (Capwright serves one).
func served(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionVersion {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v
		}
	}
	return crd.Spec.Versions[0]
}

// fieldsKey is the schema without the root's description and rules,
// with the printer columns.
func fieldsKey(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	v := served(crd)
	s := v.Schema.OpenAPIV3Schema.DeepCopy()
	s.Description, s.XValidations = "", nil
	data, err := json.Marshal(struct {
		Schema  *apiextensionsv1.JSONSchemaProps
		Columns []apiextensionsv1.CustomResourceColumnDefinition
	}{s, v.AdditionalPrinterColumns})
	return string(data), err
}

func fieldTable(b *strings.Builder, s *apiextensionsv1.JSONSchemaProps) {
	b.WriteString("| Field | Type | Description |\n|---|---|---|\n")
	for _, name := range []string{"spec", "status"} {
		if p, ok := s.Properties[name]; ok {
			fields(b, name, &p, required(s, name))
		}
	}
	b.WriteString("\n")
}

func required(parent *apiextensionsv1.JSONSchemaProps, name string) bool {
	for _, r := range parent.Required {
		if r == name {
			return true
		}
	}
	return false
}

// fields writes one row for the field at path and rows for what it
// holds: properties, list items' properties (path[]) and map values'
// properties (path.*).
func fields(b *strings.Builder, path string, s *apiextensionsv1.JSONSchemaProps, req bool) {
	typ := typeOf(s)
	if req {
		typ += ", required"
	}
	fmt.Fprintf(b, "| `%s` | %s | %s |\n", path, typ, cell(describe(s)))
	inner, innerPath := s, path
	switch {
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		inner, innerPath = s.Items.Schema, path+"[]"
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && len(s.Properties) == 0:
		inner, innerPath = s.AdditionalProperties.Schema, path+".*"
	}
	names := make([]string, 0, len(inner.Properties))
	for n := range inner.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := inner.Properties[n]
		fields(b, innerPath+"."+n, &p, required(inner, n))
	}
}

func typeOf(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + typeOf(s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && len(s.Properties) == 0:
		return "map[string]" + typeOf(s.AdditionalProperties.Schema)
	case s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "any"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	}
	return s.Type
}

// describe is a field's description with what the schema adds to it:
// default, allowed values, limits, rules.
func describe(s *apiextensionsv1.JSONSchemaProps) string {
	parts := []string{text(s.Description)}
	if s.Default != nil {
		parts = append(parts, "Default: `"+string(s.Default.Raw)+"`.")
	}
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, string(e.Raw))
		}
		parts = append(parts, "One of: `"+strings.Join(vals, "`, `")+"`.")
	}
	var limits []string
	if s.Minimum != nil {
		limits = append(limits, fmt.Sprintf("minimum %g", *s.Minimum))
	}
	if s.Maximum != nil {
		limits = append(limits, fmt.Sprintf("maximum %g", *s.Maximum))
	}
	if s.MinLength != nil {
		limits = append(limits, fmt.Sprintf("at least %d characters", *s.MinLength))
	}
	if s.MaxLength != nil {
		limits = append(limits, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.MinItems != nil {
		limits = append(limits, fmt.Sprintf("at least %d items", *s.MinItems))
	}
	if s.MaxItems != nil {
		limits = append(limits, fmt.Sprintf("at most %d items", *s.MaxItems))
	}
	if s.Pattern != "" {
		limits = append(limits, "matches `"+s.Pattern+"`")
	}
	if len(limits) > 0 {
		parts = append(parts, "Limits: "+strings.Join(limits, ", ")+".")
	}
	for _, r := range s.XValidations {
		msg := r.Message
		if msg == "" {
			msg = "`" + r.Rule + "`"
		}
		parts = append(parts, "Rule: "+strings.TrimSuffix(text(msg), ".")+".")
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// text joins a description's wrapped lines.
func text(s string) string { return escapeAngles(strings.Join(strings.Fields(s), " ")) }

func code(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return "`" + strings.Join(list, "`, `") + "`"
}
