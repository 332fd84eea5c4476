package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/apis/kustomize"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// managerContainer is the container Cluster API providers run their
// controller manager in (kubebuilder's layout).
const managerContainer = "manager"

// workloadPatch turns spec.manager and spec.deployment into one strategic
// merge patch of the provider's controller Deployment, or nil when neither
// is set. Semantics are those of a strategic merge, per field:
//
//   - replicas, serviceAccountName and a container's image replace the
//     components' values;
//   - nodeSelector, affinity and a container's resources merge key by key
//     (setting limits.memory keeps the components' cpu limit);
//   - tolerations and a container's command replace the whole list;
//   - imagePullSecrets and env merge by name; an env entry replaces the
//     variable of the same name as a whole (see envPatch);
//   - args: a strategic merge replaces a container's args as a whole, so
//     the manager's are computed from Input.ManagerArgs (see mergeArgs).
//     Render knows no other container's args, so it refuses args for them.
//
// A container name the Deployment does not have would be added as a new,
// incomplete container; Flux then reports the invalid Deployment.
func workloadPatch(in Input) (*kustomize.Patch, error) {
	spec := in.Provider.GetSpec()
	if spec.Manager == nil && spec.Deployment == nil {
		return nil, nil
	}
	containers, err := containerPatches(in)
	if err != nil {
		return nil, err
	}
	pod := map[string]any{}
	deploy := map[string]any{}
	if d := spec.Deployment; d != nil {
		if d.Replicas != nil {
			deploy["replicas"] = *d.Replicas
		}
		setIf(pod, "nodeSelector", d.NodeSelector, len(d.NodeSelector) > 0)
		setIf(pod, "tolerations", d.Tolerations, len(d.Tolerations) > 0)
		setIf(pod, "affinity", d.Affinity, d.Affinity != nil)
		setIf(pod, "serviceAccountName", d.ServiceAccountName, d.ServiceAccountName != "")
		setIf(pod, "imagePullSecrets", d.ImagePullSecrets, len(d.ImagePullSecrets) > 0)
	}
	setIf(pod, "containers", containers, len(containers) > 0)
	if len(pod) > 0 {
		deploy["template"] = map[string]any{"spec": pod}
	}
	if len(deploy) == 0 {
		return nil, nil
	}
	target := &kustomize.Selector{Group: "apps", Version: "v1", Kind: "Deployment", Name: in.ManagerDeployment}
	if in.ManagerDeployment == "" {
		target.LabelSelector = labelClusterctlProvider + "=" + in.ProviderLabel
	}
	patch, err := yaml.Marshal(map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "not-used"},
		"spec":       deploy,
	})
	if err != nil {
		return nil, fmt.Errorf("render: encoding the Deployment patch: %w", err)
	}
	return &kustomize.Patch{Patch: string(patch), Target: target}, nil
}

// containerPatches are the container entries of the patch, by name: those
// of spec.deployment.containers, and the manager whenever its args change.
func containerPatches(in Input) ([]map[string]any, error) {
	spec := in.Provider.GetSpec()
	byName := map[string]map[string]any{}
	flags := newFlagSet()
	if d := spec.Deployment; d != nil {
		for i, c := range d.Containers {
			field := fmt.Sprintf("spec.deployment.containers[%d]", i)
			if _, dup := byName[c.Name]; dup {
				return nil, fmt.Errorf("%s: container %q is listed twice; merge the two entries", field, c.Name)
			}
			entry, err := containerPatch(c)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			byName[c.Name] = entry
			if len(c.Args) == 0 {
				continue
			}
			if c.Name != managerContainer {
				return nil, fmt.Errorf("%s.args: Capwright merges args only into the %q container, whose args it reads from the components; change container %q's args with a JSON6902 patch in spec.patches", field, managerContainer, c.Name)
			}
			for _, name := range slices.Sorted(maps.Keys(c.Args)) {
				if err := flags.set(field+".args", name, c.Args[name]); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := managerFlags(flags, spec.Manager, in.ManagerArgs); err != nil {
		return nil, err
	}
	if len(flags.values) > 0 {
		entry := byName[managerContainer]
		if entry == nil {
			entry = map[string]any{"name": managerContainer}
			byName[managerContainer] = entry
		}
		entry["args"] = mergeArgs(in.ManagerArgs, flags.values)
	}
	var out []map[string]any
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if len(byName[name]) > 1 { // more than its name
			out = append(out, byName[name])
		}
	}
	return out, nil
}

// containerPatch is one container's entry, without args.
func containerPatch(c v1alpha1.ContainerSpec) (map[string]any, error) {
	entry := map[string]any{"name": c.Name}
	setIf(entry, "image", c.ImageURL, c.ImageURL != "")
	setIf(entry, "command", c.Command, len(c.Command) > 0)
	if c.Resources != nil {
		resources, err := jsonObject(c.Resources)
		if err != nil {
			return nil, fmt.Errorf("resources: %w", err)
		}
		setIf(entry, "resources", resources, len(resources) > 0)
	}
	if len(c.Env) > 0 {
		env := make([]any, 0, len(c.Env))
		for _, e := range c.Env {
			v, err := envPatch(e)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			env = append(env, v)
		}
		entry["env"] = env
	}
	return entry, nil
}

// envPatch is an env entry that replaces the components' variable of the
// same name rather than merging into it: merged, a value next to the
// components' valueFrom (or a secretKeyRef next to their fieldRef) would
// make the Deployment invalid. Every value source the entry does not set
// is nulled, which a strategic merge reads as "delete". ($patch: replace
// on a list element is not honoured by kustomize's merge.)
func envPatch(e corev1.EnvVar) (map[string]any, error) {
	v, err := jsonObject(e)
	if err != nil {
		return nil, err
	}
	if e.ValueFrom == nil {
		v["valueFrom"] = nil
		return v, nil
	}
	v["value"] = nil
	from, ok := v["valueFrom"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("valueFrom does not encode as an object")
	}
	for _, name := range jsonFieldNames(reflect.TypeFor[corev1.EnvVarSource]()) {
		if _, set := from[name]; !set {
			from[name] = nil
		}
	}
	return v, nil
}

// jsonFieldNames are the JSON names of a struct's fields, read from the
// type so that sources added by newer Kubernetes versions are covered.
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// setIf sets m[key] = value when cond holds.
func setIf(m map[string]any, key string, value any, cond bool) {
	if cond {
		m[key] = value
	}
}

// jsonObject is an API struct as a generic JSON object — its API
// serialization, empty fields omitted — so patch directives can be added.
func jsonObject(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(data, &out)
}
