// Package converttest checks YAML against Capwright's CustomResourceDefinitions
// as the API server would: the OpenAPI schema (types, patterns, enums,
// required fields, unknown fields) and the x-kubernetes-validations CEL
// rules, so a test proves converted CRs would be accepted without a
// cluster.
package converttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"
)

// CRDs are the schemas of one API group's kinds, by apiVersion and kind.
type CRDs struct {
	versions map[string]*apiextensionsv1.JSONSchemaProps
}

// LoadCRDs reads every CRD file matching pattern (e.g.
// manifests/crd/bases/providers.capwright.io_*.yaml).
func LoadCRDs(pattern string) (*CRDs, error) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRD file matches %s (%v)", pattern, err)
	}
	c := &CRDs{versions: map[string]*apiextensionsv1.JSONSchemaProps{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("%s: version %s has no schema", f, v.Name)
			}
			c.versions[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
		}
	}
	return c, nil
}

// Validate checks one YAML object against its kind's schema and CEL rules
// and returns every violation.
func (c *CRDs) Validate(doc []byte) []error {
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return []error{err}
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return []error{err}
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	schema, ok := c.versions[apiVersion+"/"+kind]
	if !ok {
		return []error{fmt.Errorf("no CRD for %s %s", apiVersion, kind)}
	}
	var errs []error
	// The API server validates metadata itself; the CRD's schema says only
	// "type: object".
	withoutMeta := map[string]any{}
	for k, v := range obj {
		if k != "metadata" {
			withoutMeta[k] = v
		}
	}
	s, err := openAPISchema(schema)
	if err != nil {
		return []error{err}
	}
	result := validate.NewSchemaValidator(s, nil, "", strfmt.Default).Validate(withoutMeta)
	errs = append(errs, result.Errors...)
	errs = append(errs, unknownFields("", obj, schema)...)
	errs = append(errs, celRules("", obj, schema)...)
	return errs
}

// openAPISchema converts a CRD schema into kube-openapi's type (the same
// JSON Schema keywords).
func openAPISchema(p *apiextensionsv1.JSONSchemaProps) (*spec.Schema, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	s := &spec.Schema{}
	return s, json.Unmarshal(data, s)
}

// unknownFields reports fields the schema does not declare (the API
// server prunes them, so a CR relying on one would silently lose it).
func unknownFields(path string, v any, s *apiextensionsv1.JSONSchemaProps) []error {
	if s == nil || (s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields) {
		return nil
	}
	var errs []error
	switch t := v.(type) {
	case map[string]any:
		if path == ".metadata" {
			return nil
		}
		for k, child := range t {
			switch {
			case len(s.Properties) > 0:
				ps, ok := s.Properties[k]
				if !ok {
					errs = append(errs, fmt.Errorf("%s.%s: unknown field", path, k))
					continue
				}
				errs = append(errs, unknownFields(path+"."+k, child, &ps)...)
			case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
				errs = append(errs, unknownFields(path+"."+k, child, s.AdditionalProperties.Schema)...)
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for i, child := range t {
				errs = append(errs, unknownFields(fmt.Sprintf("%s[%d]", path, i), child, s.Items.Schema)...)
			}
		}
	}
	return errs
}

// celRules evaluates each x-kubernetes-validations rule with self bound to
// the value at its node, as the API server does on create.
func celRules(path string, v any, s *apiextensionsv1.JSONSchemaProps) []error {
	if s == nil || v == nil {
		return nil
	}
	var errs []error
	for _, rule := range s.XValidations {
		ok, err := evalRule(rule.Rule, v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: rule %q: %w", pathOrRoot(path), rule.Rule, err))
		case !ok:
			errs = append(errs, fmt.Errorf("%s: %s (rule %q)", pathOrRoot(path), rule.Message, rule.Rule))
		}
	}
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if ps, ok := s.Properties[k]; ok {
				errs = append(errs, celRules(path+"."+k, child, &ps)...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				errs = append(errs, celRules(path+"."+k, child, s.AdditionalProperties.Schema)...)
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for i, child := range t {
				errs = append(errs, celRules(fmt.Sprintf("%s[%d]", path, i), child, s.Items.Schema)...)
			}
		}
	}
	return errs
}

func evalRule(rule string, self any) (bool, error) {
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		return false, err
	}
	ast, iss := env.Compile(rule)
	if iss.Err() != nil {
		return false, iss.Err()
	}
	prg, err := env.Program(ast)
	if err != nil {
		return false, err
	}
	out, _, err := prg.Eval(map[string]any{"self": types.DefaultTypeAdapter.NativeToValue(self)})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("rule gave %v, not a bool", out.Value())
	}
	return b, nil
}

func pathOrRoot(p string) string {
	if p == "" {
		return "(object)"
	}
	return strings.TrimPrefix(p, ".")
}
