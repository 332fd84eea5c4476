package contract

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/render"
)

// Variables are the backend variables for an object of the Cluster c, at
// Kubernetes version version: ${CLUSTER_NAME}, ${CLUSTER_NAMESPACE},
// ${KUBERNETES_VERSION} and ${TOPOLOGY_<variable>} for each of the
// Cluster's topology variables.
func Variables(c clusterapi.Facts, version string) map[string]string {
	vars := map[string]string{
		"CLUSTER_NAME":       c.Name,
		"CLUSTER_NAMESPACE":  c.Namespace,
		"KUBERNETES_VERSION": version,
	}
	for name, value := range c.Variables {
		vars["TOPOLOGY_"+Identifier(name)] = value
	}
	return vars
}

var notIdentifier = regexp.MustCompile(`[^A-Za-z0-9_]`)

// Identifier makes a ClusterClass variable name a substitution variable
// name: characters other than letters, digits and _ become _.
func Identifier(name string) string { return notIdentifier.ReplaceAllString(name, "_") }

// Substitute replaces ${VAR} in s from vars, with the operators of Flux's
// post-build substitution (${VAR:=default} and the like); a variable used
// bare that is not defined is an error naming it and field. As in Flux,
// $$ stands for one $ in a string that uses variables.
func Substitute(field, s string, vars map[string]string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var asked []string
	out, err := envsubst.Eval(s, func(name string) (string, bool) {
		v, ok := vars[name]
		if !ok {
			asked = append(asked, name)
		}
		return v, ok
	})
	if err != nil && len(asked) > 0 {
		known := make([]string, 0, len(vars))
		for k := range vars {
			known = append(known, "${"+k+"}")
		}
		slices.Sort(known)
		// The last variable asked for is the one that failed.
		return "", fmt.Errorf("%s uses ${%s}, which is not defined: the variables are %s", field, asked[len(asked)-1], strings.Join(known, ", "))
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return out, nil
}

// SubstituteValues replaces variables in every string of a JSON value
// (chart values), map keys excepted.
func SubstituteValues(field string, v any, vars map[string]string) (any, error) {
	switch t := v.(type) {
	case string:
		return Substitute(field, t, vars)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, item := range t {
			s, err := SubstituteValues(field+"."+k, item, vars)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, item := range t {
			s, err := SubstituteValues(fmt.Sprintf("%s[%d]", field, i), item, vars)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	default:
		return v, nil
	}
}

// SubstituteBackend is the backend with every variable substituted: in
// a chart's values, and in a kustomization's own substitutions, to which
// the variables are added for Flux's post-build substitution.
func SubstituteBackend(b clustersv1alpha1.Backend, vars map[string]string) (clustersv1alpha1.Backend, error) {
	out := *b.DeepCopy()
	if c := out.Chart; c != nil && c.Values != nil && len(c.Values.Raw) > 0 {
		var values any
		if err := json.Unmarshal(c.Values.Raw, &values); err != nil {
			return out, fmt.Errorf("spec.backend.chart.values: %w", err)
		}
		values, err := SubstituteValues("spec.backend.chart.values", values, vars)
		if err != nil {
			return out, err
		}
		if c.Values, err = render.ContractValues(values); err != nil {
			return out, err
		}
	}
	if k := out.Kustomize; k != nil {
		subst := map[string]string{}
		for name, value := range k.Substitute {
			v, err := Substitute("spec.backend.kustomize.substitute."+name, value, vars)
			if err != nil {
				return out, err
			}
			subst[name] = v
		}
		for name, value := range vars {
			subst[name] = value
		}
		k.Substitute = subst
	}
	return out, nil
}

func backendURL(b clustersv1alpha1.Backend) string {
	switch {
	case b.Chart != nil:
		return b.Chart.URL
	case b.Kustomize != nil:
		return b.Kustomize.URL
	}
	// Neither: render refuses it, naming spec.backend.
	return ""
}
