package convert

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// managerContainer is the container both tools pass manager flags to.
const managerContainer = "manager"

// typedManagerFlags are the flags Capwright's typed ManagerSpec fields
// write (internal/render's managerFlags); additionalArgs must not repeat
// them.
var typedManagerFlags = map[string]string{
	"feature-gates":       "featureGates",
	"v":                   "verbosity",
	"sync-period":         "syncPeriod",
	"diagnostics-address": "metricsBindAddress",
	"health-addr":         "healthProbeBindAddress",
}

// convertManager maps spec.manager to the flags the operator passes the
// manager container (its component_customizer), as Capwright's
// ManagerSpec fields where they write the same flag, else as
// additionalArgs with the operator's flag name and value.
func convertManager(m *OperatorManager, field string, spec *v1alpha1.ProviderSpec, fs *findings) {
	if m == nil {
		return
	}
	out := &v1alpha1.ManagerSpec{}
	args := map[string]string{}
	from := map[string]string{}
	arg := func(sub, flag, value string) {
		args[flag], from[flag] = value, field+"."+sub
	}

	if c := m.Controller; c != nil {
		for _, kind := range slices.Sorted(maps.Keys(c.GroupKindConcurrency)) {
			arg("controller.groupKindConcurrency", strings.ToLower(kind)+"-concurrency", strconv.Itoa(c.GroupKindConcurrency[kind]))
		}
		if c.CacheSyncTimeout != nil {
			fs.note(field+".controller.cacheSyncTimeout", "dropped: the operator passes it to no flag either")
		}
		if c.RecoverPanic != nil {
			fs.note(field+".controller.recoverPanic", "dropped: the operator passes it to no flag either")
		}
	}
	if m.MaxConcurrentReconciles != 0 {
		arg("maxConcurrentReconciles", "max-concurrent-reconciles", strconv.Itoa(m.MaxConcurrentReconciles))
		fs.attention(field+".maxConcurrentReconciles", "kept as additionalArgs max-concurrent-reconciles, the flag the operator passed; Cluster API's own managers take no such flag (they take one per controller, e.g. cluster-concurrency, machine-concurrency), and fail to start with it. Keep it only if this provider's manager takes it")
	}
	if m.CacheNamespace != "" {
		arg("cacheNamespace", "namespace", m.CacheNamespace)
		fs.note(field+".cacheNamespace", "kept as additionalArgs namespace (the operator's --namespace): the manager watches only namespace %s", m.CacheNamespace)
	}
	if a := m.Health.HealthProbeBindAddress; a != "" {
		out.HealthProbeBindAddress = a
	}
	if a := m.Metrics.BindAddress; a != "" {
		arg("metrics.bindAddress", "metrics-bind-addr", a)
		fs.attention(field+".metrics.bindAddress", "kept as additionalArgs metrics-bind-addr, the flag the operator passed; Cluster API deprecated --metrics-bind-addr in v1.6 and removed it in v1.9 (its managers serve metrics on --diagnostics-address and fail to start with the old flag). If this provider does too, move the address to spec.manager.metricsBindAddress (--diagnostics-address)")
	}
	if a := m.Metrics.DiagnosticsAddress; a != "" {
		out.MetricsBindAddress = a
	}
	if m.Webhook.Host != "" {
		arg("webhook.host", "webhook-host", m.Webhook.Host)
	}
	if m.Webhook.CertDir != "" {
		arg("webhook.certDir", "webhook-cert-dir", m.Webhook.CertDir)
	}
	if m.ProfilerAddress != "" {
		arg("profilerAddress", "profiler-address", m.ProfilerAddress)
	}
	for sub, name := range map[string]string{"health.livenessEndpointName": m.Health.LivenessEndpointName, "health.readinessEndpointName": m.Health.ReadinessEndpointName} {
		if name == "" {
			continue
		}
		probe := "livenessProbe"
		if strings.HasPrefix(sub, "health.readiness") {
			probe = "readinessProbe"
		}
		fs.attention(field+"."+sub, "no Capwright field: the operator set the manager container's %s path to /%s. Add a strategic merge patch to spec.patches (target kind Deployment and the provider's controller Deployment name): spec.template.spec.containers: [{name: manager, %s: {httpGet: {path: /%s}}}]", probe, name, probe, name)
	}
	if le := m.LeaderElection; le != nil && le.LeaderElect != nil {
		arg("leaderElection.leaderElect", "leader-elect", strconv.FormatBool(*le.LeaderElect))
		if *le.LeaderElect {
			if le.ResourceName != "" && le.ResourceNamespace != "" {
				arg("leaderElection.resourceName", "leader-election-id", le.ResourceNamespace+"/"+le.ResourceName)
			}
			for sub, d := range map[string]metav1.Duration{"leaseDuration": le.LeaseDuration, "renewDeadline": le.RenewDeadline, "retryPeriod": le.RetryPeriod} {
				if s := seconds(d.Duration); s > 0 {
					arg("leaderElection."+sub, map[string]string{"leaseDuration": "leader-elect-lease-duration", "renewDeadline": "leader-elect-renew-deadline", "retryPeriod": "leader-elect-retry-period"}[sub], fmt.Sprintf("%ds", s))
				}
			}
		}
		if le.ResourceLock != "" {
			fs.note(field+".leaderElection.resourceLock", "dropped: the operator passes it to no flag either")
		}
	} else if le != nil {
		fs.note(field+".leaderElection", "dropped: without leaderElect the operator passes none of it")
	}
	if m.Metrics.InsecureDiagnostics {
		arg("metrics.insecureDiagnostics", "insecure-diagnostics", "true")
	}
	if m.Webhook.Port != nil {
		arg("webhook.port", "webhook-port", strconv.Itoa(*m.Webhook.Port))
		fs.note(field+".webhook.port", "kept as additionalArgs webhook-port; as with the operator, the container port and the webhook Service keep the components' port")
	}
	if m.GracefulShutdownTimeout != nil {
		fs.note(field+".gracefulShutDown", "dropped: the operator passes it to no flag either")
	}
	if m.SyncPeriod != nil {
		if s := seconds(m.SyncPeriod.Duration); s > 0 {
			out.SyncPeriod = &metav1.Duration{Duration: time.Duration(s) * time.Second}
			if out.SyncPeriod.Duration < time.Minute {
				fs.note(field+".syncPeriod", "raised from %ds to 1m, the shortest manager.syncPeriod Capwright takes (every object the provider watches is reconciled again at that period)", s)
				out.SyncPeriod.Duration = time.Minute
			}
		}
	}
	if m.Verbosity != nil && *m.Verbosity != 1 {
		// 1 is the operator's default, for which it passes no --v.
		v := int32(*m.Verbosity) //nolint:gosec // the operator's CRD bounds it (minimum 0); a log level
		out.Verbosity = &v
	}
	if len(m.FeatureGates) > 0 {
		out.FeatureGates = maps.Clone(m.FeatureGates)
	}
	for _, key := range slices.Sorted(maps.Keys(m.AdditionalArgs)) {
		sub := fmt.Sprintf("additionalArgs[%s]", key)
		name := strings.TrimLeft(key, "-")
		switch {
		case !strings.HasPrefix(key, "-"):
			fs.attention(field+"."+sub, "the operator passed %s=%s as a bare argument (not a flag: no leading --), which the manager ignores or refuses; left out. If the manager takes --%s, add it to spec.manager.additionalArgs", key, m.AdditionalArgs[key], name)
		case managerSets(out, name) || from[name] != "":
			fs.attention(field+"."+sub, "sets --%s, which %s sets too: the operator refused to install with both; left out", name, cmpOr(from[name], field+"."+typedManagerFlags[name]))
		default:
			arg(sub, name, m.AdditionalArgs[key])
		}
	}
	if len(args) > 0 {
		out.AdditionalArgs = args
	}
	spec.Manager = out
}

// convertDeployment maps spec.deployment to Capwright's, which patches the
// same manager Deployment. The operator replaces nodeSelector, affinity and
// resources as a whole; Capwright merges them into the components' values
// key by key.
func convertDeployment(d *OperatorDeployment, field string, spec *v1alpha1.ProviderSpec, fs *findings) {
	if d == nil {
		return
	}
	out := &v1alpha1.DeploymentSpec{
		NodeSelector:       maps.Clone(d.NodeSelector),
		Affinity:           d.Affinity,
		ServiceAccountName: d.ServiceAccountName,
		ImagePullSecrets:   d.ImagePullSecrets,
	}
	if d.Replicas != nil {
		r := int32(*d.Replicas) //nolint:gosec // the operator's CRD bounds it (minimum 0); a replica count
		out.Replicas = &r
	}
	if len(d.NodeSelector) > 0 {
		fs.note(field+".nodeSelector", "kept; the operator replaced the components' nodeSelector, Capwright merges into it (Cluster API's components set none)")
	}
	if d.Affinity != nil {
		fs.note(field+".affinity", "kept; the operator replaced the components' affinity, Capwright merges into it: check the components set none the provider should lose")
	}
	if d.Tolerations != nil {
		if len(*d.Tolerations) == 0 {
			fs.attention(field+".tolerations", "an empty list, with which the operator removed the components' tolerations; Capwright keeps them unless a patch removes them: add a JSON 6902 patch to spec.patches (op remove, path /spec/template/spec/tolerations, target the controller Deployment)")
		} else {
			out.Tolerations = *d.Tolerations
		}
	}
	for i, c := range d.Containers {
		out.Containers = append(out.Containers, convertContainer(c, fmt.Sprintf("%s.containers[%d]", field, i), fs))
	}
	spec.Deployment = out
}

func convertContainer(c OperatorContainer, field string, fs *findings) v1alpha1.ContainerSpec {
	out := v1alpha1.ContainerSpec{Name: c.Name, Env: c.Env, Resources: c.Resources, Command: c.Command}
	if c.ImageURL != nil {
		out.ImageURL = *c.ImageURL
	}
	if c.Resources != nil {
		fs.note(field+".resources", "kept; the operator replaced the container's resources as a whole, Capwright merges them key by key (a limit the components set and this does not name stays)")
	}
	for _, key := range slices.Sorted(maps.Keys(c.Args)) {
		sub := fmt.Sprintf("%s.args[%s]", field, key)
		name := strings.TrimLeft(key, "-")
		switch {
		case c.Name != managerContainer:
			fs.attention(sub, "Capwright sets args of the %q container only (it reads them from the components); left out. Set --%s=%s on container %q with a JSON 6902 patch in spec.patches (op add, path /spec/template/spec/containers/INDEX/args/-)", managerContainer, name, c.Args[key], c.Name)
		case !strings.HasPrefix(key, "-"):
			fs.attention(sub, "the operator passed %s=%s as a bare argument (not a flag: no leading --), which the manager ignores or refuses; left out. If the manager takes --%s, add it to args", key, c.Args[key], name)
		default:
			if out.Args == nil {
				out.Args = map[string]string{}
			}
			out.Args[name] = c.Args[key]
		}
	}
	return out
}

// resolveManagerArgConflicts: the operator applies spec.manager after
// spec.deployment, so a flag both set takes spec.manager's value (feature
// gates are merged, gate by gate). Capwright refuses a flag set twice, so
// the manager container's copy is dropped or merged.
func resolveManagerArgConflicts(spec *v1alpha1.ProviderSpec, fs *findings) {
	if spec.Manager == nil || spec.Deployment == nil {
		return
	}
	for i := range spec.Deployment.Containers {
		c := &spec.Deployment.Containers[i]
		if c.Name != managerContainer {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(c.Args)) {
			sub := fmt.Sprintf("spec.deployment.containers[%d].args[%s]", i, name)
			switch {
			case name == "feature-gates" && len(spec.Manager.FeatureGates) > 0:
				for gate, on := range parseGates(c.Args[name]) {
					if _, set := spec.Manager.FeatureGates[gate]; !set {
						spec.Manager.FeatureGates[gate] = on
					}
				}
				delete(c.Args, name)
				fs.note(sub, "merged into spec.manager.featureGates, whose gates win, as the operator merged them")
			case typedManagerFlags[name] != "" && managerSets(spec.Manager, name):
				delete(c.Args, name)
				fs.note(sub, "dropped: spec.manager.%s sets --%s too, and the operator applied spec.manager last", typedManagerFlags[name], name)
			case spec.Manager.AdditionalArgs[name] != "":
				delete(c.Args, name)
				fs.note(sub, "dropped: spec.manager sets --%s too, and the operator applied spec.manager last", name)
			}
		}
		if len(c.Args) == 0 {
			c.Args = nil
		}
	}
}

// managerSets tells whether a typed ManagerSpec field writes flag.
func managerSets(m *v1alpha1.ManagerSpec, flag string) bool {
	switch flag {
	case "feature-gates":
		return len(m.FeatureGates) > 0
	case "v":
		return m.Verbosity != nil
	case "sync-period":
		return m.SyncPeriod != nil
	case "diagnostics-address":
		return m.MetricsBindAddress != ""
	case "health-addr":
		return m.HealthProbeBindAddress != ""
	}
	return false
}

// parseGates reads a --feature-gates value, A=true,B=false.
func parseGates(value string) map[string]bool {
	out := map[string]bool{}
	for _, gate := range strings.Split(value, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(gate), "=")
		if ok && name != "" {
			out[name] = v == "true"
		}
	}
	return out
}

// convertAdditionalDeployments: Capwright customises the manager
// Deployment only.
func convertAdditionalDeployments(in *OperatorProvider, fs *findings) {
	for _, name := range slices.Sorted(maps.Keys(in.Spec.AdditionalDeployments)) {
		fs.attention(fmt.Sprintf("spec.additionalDeployments[%s]", name), "no Capwright field: Capwright customises the provider's controller manager Deployment only. Write what this entry sets as patches of Deployment %s in spec.patches (a strategic merge for replicas, nodeSelector, tolerations, affinity, image, env, resources; a JSON 6902 add for each argument)", name)
	}
}

// seconds rounds a duration to whole seconds, as the operator does.
func seconds(d time.Duration) int { return int(d.Round(time.Second).Seconds()) }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
