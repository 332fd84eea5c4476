package clusterctl

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/envsubst/parse"
	"sigs.k8s.io/yaml"
)

// substituteDisabledKey is the label or annotation with which an object opts
// out of Flux's post-build substitution (value "disabled").
const substituteDisabledKey = "kustomize.toolkit.fluxcd.io/substitute"

// Variable is a clusterctl variable used in a components file.
type Variable struct {
	Name string
	// Default is the value used when the variable is not provided, from its
	// first occurrence (objects in file order, keys sorted). Meaningful only
	// with HasDefault.
	Default string
	// HasDefault is true when every occurrence of the variable supplies a
	// value of its own when the variable is unset, so the variable may be
	// left out. A single bare ${VAR} makes it required.
	HasDefault bool
}

// ParseVariables lists the variables of a components file, sorted by name.
//
// It reads the file the way Flux's post-build substitution does, with the
// same parser (github.com/fluxcd/pkg/envsubst, clusterctl uses its drone
// ancestor): object by object, skipping objects labelled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled, in keys and string
// values (YAML comments are not substituted). $${VAR} is an escape for a
// literal ${VAR}, not a variable.
//
// Defaulting forms are ${VAR:=d}, ${VAR=d}, ${VAR:-d} and ${VAR:+alt} (empty
// when unset). ${VAR:?msg}, ${VAR} and the string operations (${VAR,,},
// ${VAR/a/b}, ${VAR:1:2}, ${#VAR}…) need a value. A variable inside a default,
// ${A:=${B}}, is an occurrence of its own: Flux evaluates it in any case.
//
// The envsubst version Flux v2.9 runs (v1.7.1) cannot parse ${VAR-d},
// ${VAR+x} or ${VAR?x}: the substitution of the whole Kustomization would
// fail, so they are reported here as errors with the form to use instead.
func ParseVariables(components []byte) ([]Variable, error) {
	c, err := Decode(components)
	if err != nil {
		return nil, err
	}
	return c.Variables()
}

// Variables is ParseVariables of decoded components.
func (c *Components) Variables() ([]Variable, error) {
	found := map[string]*Variable{}
	for _, o := range c.objs {
		if substitutionDisabled(o) {
			continue
		}
		own := map[string]*Variable{}
		err := visitStrings(o.Object, func(s string) error {
			tree, err := parseTemplate(s)
			if err != nil {
				return err
			}
			collectVariables(tree, own)
			return nil
		})
		if err != nil {
			// Flux substitutes an object's YAML as a whole, so one
			// expression may span a key and its value: Cluster API
			// Provider AWS writes the annotation
			// ${AWS_CONTROLLER_IAM_ROLE/#arn/eks.amazonaws.com/role-arn: arn}.
			// What parses as a whole is what Flux substitutes.
			text, merr := yaml.Marshal(o.Object)
			tree, perr := parse.Parse(string(text))
			if merr != nil || perr != nil {
				return nil, fmt.Errorf("%s: %w", o, err)
			}
			own = map[string]*Variable{}
			collectVariables(tree.Root, own)
		}
		mergeVariables(found, own)
	}
	vars := make([]Variable, 0, len(found))
	for _, v := range found {
		vars = append(vars, *v)
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].Name < vars[j].Name })
	return vars, nil
}

// MissingVariables returns, sorted, the names of the variables that have
// neither a default nor a value (provided(name) false). clusterctl refuses
// to install such components; Flux would silently substitute "".
func MissingVariables(vars []Variable, provided func(name string) bool) []string {
	var missing []string
	for _, v := range vars {
		if !v.HasDefault && (provided == nil || !provided(v.Name)) {
			missing = append(missing, v.Name)
		}
	}
	slices.Sort(missing)
	return missing
}

// substitutionDisabled tells whether Flux skips substitution for o.
func substitutionDisabled(o object) bool {
	return o.GetLabels()[substituteDisabledKey] == "disabled" ||
		o.GetAnnotations()[substituteDisabledKey] == "disabled"
}

// unsupportedForm matches the POSIX forms envsubst v1.7.1 cannot parse.
var unsupportedForm = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*[-+?]`)

// parseTemplate parses one string with Flux's envsubst parser; nil when the
// string holds no ${…} at all.
func parseTemplate(s string) (parse.Node, error) {
	if !strings.Contains(s, "${") {
		return nil, nil
	}
	tree, err := parse.Parse(s)
	if err != nil {
		if form := unsupportedForm.FindString(s); form != "" {
			return nil, fmt.Errorf("%q: the form %s…} is not supported by Flux's variable substitution; use %s:%s…} instead: %w",
				shorten(s), form, form[:len(form)-1], form[len(form)-1:], err)
		}
		return nil, fmt.Errorf("cannot parse the variables in %q (escape a literal ${ as $${): %w", shorten(s), err)
	}
	return tree.Root, nil
}

// collectVariables records every variable occurrence under node.
func collectVariables(node parse.Node, found map[string]*Variable) {
	switch n := node.(type) {
	case *parse.ListNode:
		for _, child := range n.Nodes {
			collectVariables(child, found)
		}
	case *parse.FuncNode:
		hasDefault := isDefaulting(n.Name)
		v, seen := found[n.Param]
		switch {
		case !seen:
			v = &Variable{Name: n.Param, HasDefault: hasDefault}
			if hasDefault {
				v.Default = defaultText(n)
			}
			found[n.Param] = v
		case !hasDefault:
			v.HasDefault, v.Default = false, ""
		}
		for _, arg := range n.Args {
			collectVariables(arg, found)
		}
	}
}

// mergeVariables adds the variables of one object to found: a variable
// seen before keeps its first default, and is required once any
// occurrence is.
func mergeVariables(found, own map[string]*Variable) {
	for _, name := range slices.Sorted(maps.Keys(own)) {
		v := own[name]
		prev, seen := found[name]
		switch {
		case !seen:
			found[name] = v
		case !v.HasDefault:
			prev.HasDefault, prev.Default = false, ""
		}
	}
}

// isDefaulting tells whether the envsubst operator supplies a value when
// the variable is unset.
func isDefaulting(op string) bool {
	switch op {
	case "=", ":=", ":-", ":+":
		return true
	}
	return false
}

// defaultText is the value a defaulting occurrence yields when the variable
// is unset: its argument text, with nested variables written as ${NAME}
// as clusterctl shows them. ${VAR:+alt} yields "".
func defaultText(n *parse.FuncNode) string {
	if n.Name == ":+" {
		return ""
	}
	var b strings.Builder
	for _, arg := range n.Args {
		switch a := arg.(type) {
		case *parse.TextNode:
			b.WriteString(a.Value)
		case *parse.FuncNode:
			fmt.Fprintf(&b, "${%s}", a.Param)
		}
	}
	return b.String()
}

// visitStrings calls fn on every map key and string value under v, keys in
// sorted order so that results and errors do not depend on map order.
func visitStrings(v any, fn func(string) error) error {
	switch t := v.(type) {
	case string:
		return fn(t)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if err := fn(k); err != nil {
				return err
			}
			if err := visitStrings(t[k], fn); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range t {
			if err := visitStrings(child, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// shorten keeps error messages readable when a long string (a CRD
// description, a script) holds the problem.
func shorten(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// CRDsSubstitutionFree tells whether no CustomResourceDefinition of the
// components has anything for Flux's post-build substitution to do: no
// key or string of theirs holds "${" (a variable, or the escape $${).
// Such CRDs can be annotated kustomize.toolkit.fluxcd.io/substitute:
// disabled, and kustomize-controller skips the round trip substitution
// costs it per object, which for CRDs, most of a provider's YAML, is most
// of its post-build time.
//
// A "$$" elsewhere is left as the release wrote it: substituted, it would
// become "$" (the escape's other half), which in real CRDs only garbles
// descriptions copied from Kubernetes' EnvVar ("Double $$ are reduced to a
// single $"). False when the components have no CRD.
func (c *Components) CRDsSubstitutionFree() bool {
	crds := 0
	for _, o := range c.objs {
		if !isCRD(o) {
			continue
		}
		crds++
		if visitStrings(o.Object, func(s string) error {
			if strings.Contains(s, "${") {
				return errVariable
			}
			return nil
		}) != nil {
			return false
		}
	}
	return crds > 0
}

// errVariable stops a walk at the first string that holds a variable.
var errVariable = errors.New("holds a variable")
