package framework

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceMonitor is the part of a Prometheus Operator ServiceMonitor the
// installs set (decoded strictly: a field the check does not know fails).
type ServiceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port              string           `json:"port"`
			Path              string           `json:"path"`
			Interval          string           `json:"interval,omitempty"`
			ScrapeTimeout     string           `json:"scrapeTimeout,omitempty"`
			HonorLabels       bool             `json:"honorLabels"`
			Relabelings       []map[string]any `json:"relabelings,omitempty"`
			MetricRelabelings []map[string]any `json:"metricRelabelings,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// CheckServiceMonitor: the ServiceMonitor o selects exactly one Service of
// objects, whose port it names and which forwards to the manager's metrics
// port (--metrics-addr, metricsPort when the manager's args do not set
// it), keeps the metrics' namespace label and reads /metrics. objects are
// what an install holds: rendered manifests, or read back from the API
// server.
func CheckServiceMonitor(t testing.TB, where string, o map[string]any, objects []map[string]any, metricsPort int) ServiceMonitor {
	t.Helper()
	var sm ServiceMonitor
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sm); err != nil {
		t.Fatalf("%s: the ServiceMonitor: %v", where, err)
	}
	if sm.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("%s: the ServiceMonitor is %s", where, sm.APIVersion)
	}
	namespaces := []string{sm.Metadata.Namespace}
	if s := sm.Spec.NamespaceSelector; s != nil && len(s.MatchNames) > 0 {
		namespaces = s.MatchNames
	}
	var selected []corev1.Service
	for _, so := range OfKind(objects, "Service") {
		var svc corev1.Service
		fromObject(t, so, &svc)
		if !slices.Contains(namespaces, svc.Namespace) || len(sm.Spec.Selector.MatchLabels) == 0 {
			continue
		}
		matches := true
		for k, v := range sm.Spec.Selector.MatchLabels {
			matches = matches && svc.Labels[k] == v
		}
		if matches {
			selected = append(selected, svc)
		}
	}
	if len(selected) != 1 {
		t.Fatalf("%s: the ServiceMonitor selects %d Services, want the metrics Service", where, len(selected))
	}
	svc := selected[0]
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%s: the ServiceMonitor has %d endpoints", where, len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Path != "/metrics" || !ep.HonorLabels {
		t.Errorf("%s: the ServiceMonitor scrapes path %q, honorLabels %v; want /metrics and true (the metrics' namespace label is the object's, docs/monitoring.md)", where, ep.Path, ep.HonorLabels)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port })
	if i < 0 {
		t.Fatalf("%s: the ServiceMonitor scrapes port %q, which Service %s lacks", where, ep.Port, svc.Name)
	}
	target := svc.Spec.Ports[i].TargetPort.String()

	want := metricsPort
	found := false
	for _, do := range OfKind(objects, "Deployment") {
		var dep appsv1.Deployment
		fromObject(t, do, &dep)
		if dep.Namespace != svc.Namespace || !selects(svc.Spec.Selector, dep.Spec.Template.Labels) {
			continue
		}
		for _, c := range dep.Spec.Template.Spec.Containers {
			port := want
			for _, arg := range c.Args {
				if addr, ok := strings.CutPrefix(arg, "--metrics-addr="); ok {
					port = PortOf(t, addr)
				}
			}
			for _, p := range c.Ports {
				if p.Name == target || strconv.Itoa(int(p.ContainerPort)) == target {
					found = true
					if int(p.ContainerPort) != port {
						t.Errorf("%s: Service %s forwards to container port %d, the manager serves metrics on %d", where, svc.Name, p.ContainerPort, port)
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("%s: Service %s forwards to port %q, which no container of the manager's pods has", where, svc.Name, target)
	}
	return sm
}

// ManagerMetricsPort is the port of the manager's --metrics-addr default
// (cmd/manager/flags.go under repoRoot): where an install that does not
// set the flag serves its metrics.
func ManagerMetricsPort(t testing.TB, repoRoot string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "manager", "flags.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"metrics-addr", "([^"]*)"`).FindSubmatch(data)
	if m == nil {
		t.Fatal("cmd/manager/flags.go: no --metrics-addr default")
	}
	return PortOf(t, string(m[1]))
}

// PortOf is the port of a listen address such as :8080.
func PortOf(t testing.TB, addr string) int {
	_, port, _ := strings.Cut(addr, ":")
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("metrics address %q: %v", addr, err)
	}
	return n
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// OfKind returns the objects of kind.
func OfKind(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func fromObject(t testing.TB, o map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, into); err != nil {
		t.Fatalf("%s: %v", o["kind"], err)
	}
}
