package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/apis/kustomize"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// managerContainer is the container Cluster API providers run their
// controller manager in.
const managerContainer = "manager"

// patches are, in order: clusterctl's namespace fixes, prune protection of
// CRDs and of the Namespace (deleting a provider must never delete users'
// objects: their custom resources, or the namespace that holds the provider
// CR and its Secrets), the manager/deployment settings, and the user's
// patches (last, so they win).
func patches(in Input) ([]kustomize.Patch, error) {
	out := append([]kustomize.Patch(nil), in.NamespacePatches...)
	out = append(out, keepOnPrune("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), keepOnPrune("", "v1", "Namespace"))
	dep, err := deploymentPatch(in)
	if err != nil {
		return nil, err
	}
	if dep != nil {
		out = append(out, *dep)
	}
	return append(out, in.Provider.GetSpec().Patches...), nil
}

// keepOnPrune annotates every object of a kind so Flux never prunes it.
func keepOnPrune(group, version, kind string) kustomize.Patch {
	apiVersion := version
	if group != "" {
		apiVersion = group + "/" + version
	}
	return kustomize.Patch{
		Patch:  fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: any\n  annotations:\n    %s: disabled\n", apiVersion, kind, pruneAnnotation),
		Target: &kustomize.Selector{Group: group, Kind: kind},
	}
}

// deploymentPatch turns spec.manager and spec.deployment into a strategic
// merge patch of the provider's controller Deployment(s), selected by
// clusterctl's provider label. Container args are lists a strategic merge
// replaces whole, so the manager's args are computed: the components' args
// with the same --flag replaced and new flags appended.
func deploymentPatch(in Input) (*kustomize.Patch, error) {
	spec := in.Provider.GetSpec()
	if spec.Manager == nil && spec.Deployment == nil {
		return nil, nil
	}
	podSpec := corev1.PodSpec{}
	containers := map[string]*corev1.Container{}
	container := func(name string) *corev1.Container {
		if c, ok := containers[name]; ok {
			return c
		}
		c := &corev1.Container{Name: name}
		containers[name] = c
		return c
	}
	var replicas *int32
	if d := spec.Deployment; d != nil {
		replicas = d.Replicas
		podSpec.NodeSelector = d.NodeSelector
		podSpec.Tolerations = d.Tolerations
		podSpec.Affinity = d.Affinity
		podSpec.ServiceAccountName = d.ServiceAccountName
		podSpec.ImagePullSecrets = d.ImagePullSecrets
		for _, cs := range d.Containers {
			c := container(cs.Name)
			c.Image = cs.ImageURL
			c.Env = cs.Env
			c.Command = cs.Command
			if cs.Resources != nil {
				c.Resources = *cs.Resources
			}
			if len(cs.Args) > 0 {
				base := []string(nil)
				if cs.Name == managerContainer {
					base = in.ManagerArgs
				}
				c.Args = mergeArgs(base, cs.Args)
			}
		}
	}
	if m := spec.Manager; m != nil {
		c := container(managerContainer)
		base := c.Args
		if base == nil {
			base = in.ManagerArgs
		}
		c.Args = mergeArgs(base, managerFlags(m))
	}
	names := make([]string, 0, len(containers))
	for name := range containers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		podSpec.Containers = append(podSpec.Containers, *containers[name])
	}
	dep := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "any"},
		Spec:       appsv1.DeploymentSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{Spec: podSpec}},
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&dep)
	if err != nil {
		return nil, err
	}
	pruned, _ := pruneEmpty(raw)
	data, err := yaml.Marshal(pruned)
	if err != nil {
		return nil, err
	}
	return &kustomize.Patch{
		Patch:  string(data),
		Target: &kustomize.Selector{Group: "apps", Version: "v1", Kind: "Deployment", LabelSelector: labelProvider + "=" + in.ProviderLabel},
	}, nil
}

// pruneEmpty drops the empty fields a typed marshal leaves (null
// creationTimestamp, empty resources, status), which a strategic merge
// would otherwise write.
func pruneEmpty(v any) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if pruned, keep := pruneEmpty(child); keep {
				t[k] = pruned
			} else {
				delete(t, k)
			}
		}
		return t, len(t) > 0
	case []any:
		return t, len(t) > 0
	case nil:
		return nil, false
	case string:
		return t, t != ""
	default:
		return t, true
	}
}

// managerFlags maps spec.manager to the flags of Cluster API managers.
func managerFlags(m *v1alpha1.ManagerSpec) map[string]string {
	flags := map[string]string{}
	if len(m.FeatureGates) > 0 {
		gates := make([]string, 0, len(m.FeatureGates))
		for g, on := range m.FeatureGates {
			gates = append(gates, g+"="+strconv.FormatBool(on))
		}
		sort.Strings(gates)
		flags["feature-gates"] = strings.Join(gates, ",")
	}
	if m.Verbosity != nil {
		flags["v"] = strconv.Itoa(int(*m.Verbosity))
	}
	if m.SyncPeriod != nil {
		flags["sync-period"] = m.SyncPeriod.Duration.String()
	}
	if m.MetricsBindAddress != "" {
		flags["diagnostics-address"] = m.MetricsBindAddress
	}
	if m.HealthProbeBindAddress != "" {
		flags["health-addr"] = m.HealthProbeBindAddress
	}
	for k, v := range m.AdditionalArgs {
		flags[strings.TrimLeft(k, "-")] = v
	}
	return flags
}

// mergeArgs replaces --key=… arguments of base whose key is in flags and
// appends the others, in key order; flags keys may carry leading dashes.
func mergeArgs(base []string, flags map[string]string) []string {
	want := map[string]string{}
	for k, v := range flags {
		want[strings.TrimLeft(k, "-")] = v
	}
	out := make([]string, 0, len(base)+len(want))
	done := map[string]bool{}
	for _, arg := range base {
		key, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if v, ok := want[key]; ok && strings.HasPrefix(arg, "-") {
			if !done[key] {
				out = append(out, "--"+key+"="+v)
				done[key] = true
			}
			continue
		}
		out = append(out, arg)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		if !done[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, "--"+k+"="+want[k])
	}
	return out
}
