package build

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/capwright/capwright/manifests/crd"
)

// admit answers, for one of Capwright's objects as a repository holds
// it, what the API server would answer when it is applied: defaulted,
// then validated against its CustomResourceDefinition's OpenAPI schema
// and CEL rules (x-kubernetes-validations). It is "" when the API server
// would take it, else the API server's message. The CRDs are those this
// build was made with (manifests/crd).
func admit(u *unstructured.Unstructured) (string, error) {
	crds.once.Do(func() { crds.versions, crds.err = compileCRDs(crd.Bases) })
	if crds.err != nil {
		return "", crds.err
	}
	gvk := u.GroupVersionKind()
	v, ok := crds.versions[gvk]
	if !ok {
		return "", fmt.Errorf("no CustomResourceDefinition serves %s in this build", gvk)
	}
	obj := runtime.DeepCopyJSON(u.Object)
	delete(obj, "status")
	structuraldefaulting.Default(obj, v.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, v.schema)
	if v.rules != nil {
		ruleErrs, _ := v.rules.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, ruleErrs...)
	}
	if len(errs) == 0 {
		return "", nil
	}
	// The API server's own words: `<Kind> "<name>" is invalid: …`.
	return fmt.Sprintf("the API server would refuse %s %q: it is invalid: %s", gvk.Kind, u.GetName(), errorList(errs)), nil
}

// crds are Capwright's CRDs, compiled once, on first use.
var crds struct {
	once     sync.Once
	err      error
	versions map[schema.GroupVersionKind]*admittedVersion
}

// admittedVersion is one served version of a CRD, compiled.
type admittedVersion struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	// rules is nil when the version has no CEL rules.
	rules *cel.Validator
}

// errorList is errs as the API server prints them in one message.
func errorList(errs field.ErrorList) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// compileCRDs reads every CRD of fsys and compiles each served version.
func compileCRDs(fsys fs.FS) (map[schema.GroupVersionKind]*admittedVersion, error) {
	files, err := fs.Glob(fsys, "bases/*_*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionKind]*admittedVersion{}
	for _, name := range files {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var def apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &def); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, ver := range def.Spec.Versions {
			if !ver.Served || ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
				continue
			}
			v, err := compileVersion(ver.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s, version %s: %w", name, ver.Name, err)
			}
			out[schema.GroupVersionKind{Group: def.Spec.Group, Version: ver.Name, Kind: def.Spec.Names.Kind}] = v
		}
	}
	return out, nil
}

func compileVersion(s *apiextensionsv1.JSONSchemaProps) (*admittedVersion, error) {
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, err
	}
	v := &admittedVersion{structural: structural, schema: validator}
	if rules := cel.NewValidator(structural, true, celconfig.PerCallLimit); rules != nil {
		v.rules = rules
	}
	return v, nil
}
