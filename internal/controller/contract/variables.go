package contract

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// clusterFacts is what a contract object needs of its owning Cluster.
type clusterFacts struct {
	Namespace, Name string
	UID             string
	Paused          bool
	// TopologyVersion is spec.topology.version ("" without a topology).
	TopologyVersion string
	// Variables are spec.topology.variables, each value as a string (JSON
	// for non-strings).
	Variables map[string]string
	// ControlPlaneInitialized is status.initialization.controlPlaneInitialized.
	ControlPlaneInitialized bool
}

// clusterFactsFrom reads a v1beta2 Cluster.
func clusterFactsFrom(u *unstructured.Unstructured) clusterFacts {
	f := clusterFacts{Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), Variables: map[string]string{}}
	f.Paused, _, _ = unstructured.NestedBool(u.Object, "spec", "paused")
	f.TopologyVersion, _, _ = unstructured.NestedString(u.Object, "spec", "topology", "version")
	f.ControlPlaneInitialized, _, _ = unstructured.NestedBool(u.Object, "status", "initialization", "controlPlaneInitialized")
	vars, _, _ := unstructured.NestedSlice(u.Object, "spec", "topology", "variables")
	for _, v := range vars {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if name == "" {
			continue
		}
		switch val := m["value"].(type) {
		case string:
			f.Variables[name] = val
		default:
			data, err := json.Marshal(val)
			if err == nil {
				f.Variables[name] = string(data)
			}
		}
	}
	return f
}

// variables are the backend variables for an object of the Cluster, at
// Kubernetes version version.
func (f clusterFacts) variables(version string) map[string]string {
	vars := map[string]string{
		"CLUSTER_NAME":       f.Name,
		"CLUSTER_NAMESPACE":  f.Namespace,
		"KUBERNETES_VERSION": version,
	}
	for name, value := range f.Variables {
		vars["TOPOLOGY_"+identifier(name)] = value
	}
	return vars
}

var notIdentifier = regexp.MustCompile(`[^A-Za-z0-9_]`)

// identifier makes a ClusterClass variable name a substitution variable
// name: characters other than letters, digits and _ become _.
func identifier(name string) string { return notIdentifier.ReplaceAllString(name, "_") }

// substitute replaces ${VAR} in s from vars, with the operators of Flux's
// post-build substitution (${VAR:=default} and the like); a variable used
// bare that is not defined is an error naming it and field. As in Flux,
// $$ stands for one $ in a string that uses variables.
func substitute(field, s string, vars map[string]string) (string, error) {
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

// substituteValues replaces variables in every string of a JSON value
// (chart values), map keys excepted.
func substituteValues(field string, v any, vars map[string]string) (any, error) {
	switch t := v.(type) {
	case string:
		return substitute(field, t, vars)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, item := range t {
			s, err := substituteValues(field+"."+k, item, vars)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, item := range t {
			s, err := substituteValues(fmt.Sprintf("%s[%d]", field, i), item, vars)
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
