package build

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sort"
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
	gvk := u.GroupVersionKind()
	v, err := crds.version(gvk)
	if err != nil {
		return "", err
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

// crds are Capwright's CRDs, each read and compiled when an object of its
// kind is first admitted (a build of Tenants compiles only theirs).
var crds = &compiledCRDs{fsys: crd.Bases, versions: map[schema.GroupVersionKind]*admittedVersion{}, read: map[string]bool{}}

type compiledCRDs struct {
	fsys     fs.FS
	mu       sync.Mutex
	versions map[schema.GroupVersionKind]*admittedVersion
	// read are the files compiled.
	read map[string]bool
}

// version is gvk's compiled version: from the file controller-gen names
// bases/<group>_<plural>.yaml, the plural the kind in lower case with an
// s, as Capwright's kinds have it; else from every file.
func (c *compiledCRDs) version(gvk schema.GroupVersionKind) (*admittedVersion, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.versions[gvk]; ok {
		return v, nil
	}
	files, err := fs.Glob(c.fsys, "bases/*_*.yaml")
	if err != nil {
		return nil, err
	}
	likely := "bases/" + gvk.Group + "_" + strings.ToLower(gvk.Kind) + "s.yaml"
	slices.SortStableFunc(files, func(a, b string) int { return cmp.Compare(boolInt(b == likely), boolInt(a == likely)) })
	for _, name := range files {
		if c.read[name] {
			continue
		}
		if err := c.compileFile(name); err != nil {
			return nil, err
		}
		if v, ok := c.versions[gvk]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("no CustomResourceDefinition serves %s in this build", gvk)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compileFile reads one CRD and compiles each served version.
func (c *compiledCRDs) compileFile(name string) error {
	c.read[name] = true
	data, err := fs.ReadFile(c.fsys, name)
	if err != nil {
		return err
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &def); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, ver := range def.Spec.Versions {
		if !ver.Served || ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
			continue
		}
		v, err := compileVersion(ver.Schema.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf("%s, version %s: %w", name, ver.Name, err)
		}
		c.versions[schema.GroupVersionKind{Group: def.Spec.Group, Version: ver.Name, Kind: def.Spec.Names.Kind}] = v
	}
	return nil
}

// admittedVersion is one served version of a CRD, compiled.
type admittedVersion struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	// rules is nil when the version has no CEL rules.
	rules *cel.Validator
}

// errorList is errs as the API server prints them in one message, in
// the order of their fields: the CEL validator walks an object's fields
// in a map's order, so a build would otherwise print them differently
// from run to run.
func errorList(errs field.ErrorList) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
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
