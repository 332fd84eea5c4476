package docs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/provider"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// The monitoring the guides ship — docs/monitoring.md's queries, the
// Grafana dashboard, the alerting rules, the chart's and the kustomize
// install's ServiceMonitors — checked against the metrics the manager
// registers, derived from the code, not listed here.

const (
	monitoringGuide = "docs/monitoring.md"
	dashboardFile   = "docs/monitoring/capwright-dashboard.json"
	alertsFile      = "docs/monitoring/capwright-alerts.yaml"
)

var (
	metricsOnce sync.Once
	managerSet  metricSet
	managerErr  error
)

// managerMetrics is every metric the manager exports that the checks
// know: Capwright's, from the collectors the manager registers, and
// controller-runtime's, gathered from a controller run for a moment.
func managerMetrics(t *testing.T) metricSet {
	t.Helper()
	metricsOnce.Do(func() { managerSet, managerErr = loadManagerMetrics() })
	if managerErr != nil {
		t.Fatal(managerErr)
	}
	return managerSet
}

// capturingRegisterer keeps the collectors registered with it.
type capturingRegisterer struct{ collectors []prometheus.Collector }

func (c *capturingRegisterer) Register(col prometheus.Collector) error {
	c.collectors = append(c.collectors, col)
	return nil
}

func (c *capturingRegisterer) MustRegister(cols ...prometheus.Collector) {
	for _, col := range cols {
		_ = c.Register(col)
	}
}

func (c *capturingRegisterer) Unregister(prometheus.Collector) bool { return false }

func (c *capturingRegisterer) Gather() ([]*dto.MetricFamily, error) { return nil, nil }

func loadManagerMetrics() (metricSet, error) {
	ms := metricSet{}
	// What cmd/manager registers: metrics.NewRecorder(ctrlmetrics.Registry)
	// and provider.NewTimelines() (into ctrlmetrics.Registry), taken by
	// their descriptions, so that metrics nothing was recorded in yet count.
	recorder := &capturingRegisterer{}
	metrics.NewRecorder(recorder)
	timelines := &capturingRegisterer{}
	saved := ctrlmetrics.Registry
	ctrlmetrics.Registry = timelines
	provider.NewTimelines()
	ctrlmetrics.Registry = saved
	if len(recorder.collectors) == 0 || len(timelines.collectors) == 0 {
		return nil, fmt.Errorf("captured %d collectors of metrics.NewRecorder and %d of provider.NewTimelines: the test no longer sees what the manager registers", len(recorder.collectors), len(timelines.collectors))
	}
	for _, c := range append(recorder.collectors, timelines.collectors...) {
		defs, err := describe(c)
		if err != nil {
			return nil, err
		}
		for name, def := range defs {
			ms[name] = def
		}
	}
	if err := crossCheckRecorder(ms); err != nil {
		return nil, err
	}

	// The label values the code produces, for labels with a closed set.
	var kinds, providerKinds []string
	for _, k := range provider.Kinds() {
		providerKinds = append(providerKinds, k.Name)
	}
	kinds = append(slices.Clone(providerKinds), tenancyv1alpha1.TenantKind)
	steps, err := stringConstants(filepath.Join(repoRoot, "internal/controller/provider/timeline.go"), "step")
	if err != nil {
		return nil, err
	}
	if len(steps) < 5 {
		return nil, fmt.Errorf("found only the install steps %v in timeline.go", steps)
	}
	enums := map[string][]string{
		"kind":      kinds,
		"ready":     {string(metav1.ConditionTrue), string(metav1.ConditionFalse), string(metav1.ConditionUnknown)},
		"suspended": {strconv.FormatBool(true), strconv.FormatBool(false)},
		"phase":     metrics.TenantPhases,
		"step":      steps,
	}
	for name, def := range ms {
		for label := range def.labels {
			if values, ok := enums[label]; ok {
				def.values[label] = values
			}
		}
		ms[name] = def
	}

	fams, err := controllerRuntimeFamilies()
	if err != nil {
		return nil, err
	}
	for _, fam := range fams {
		def := metricDef{typ: strings.ToLower(fam.GetType().String()), labels: map[string]bool{}, values: map[string][]string{}}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				def.labels[l.GetName()] = true
				// controller-runtime sets every result at start-up.
				if l.GetName() == "result" && !slices.Contains(def.values["result"], l.GetValue()) {
					def.values["result"] = append(def.values["result"], l.GetValue())
				}
			}
		}
		if def.labels["controller"] {
			// The manager names each controller after its kind
			// (internal/controller/*/setup.go).
			def.values["controller"] = kinds
		}
		if _, ok := ms[fam.GetName()]; !ok {
			ms[fam.GetName()] = def
		}
	}
	return ms, nil
}

// describe reads a collector's metrics from its descriptions.
func describe(c prometheus.Collector) (metricSet, error) {
	var typ string
	switch c.(type) {
	case *prometheus.HistogramVec, prometheus.Histogram:
		typ = "histogram"
	case *prometheus.GaugeVec, prometheus.Gauge:
		typ = "gauge"
	case *prometheus.CounterVec, prometheus.Counter:
		typ = "counter"
	case *prometheus.SummaryVec: // a lone Summary has the method set of a Histogram
		typ = "summary"
	default:
		return nil, fmt.Errorf("a collector of type %T: teach describe its metric type", c)
	}
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	// Desc{fqName: "…", help: "…", constLabels: {…}, variableLabels: {a,b}}
	re := regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: .*, constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)
	out := metricSet{}
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			return nil, fmt.Errorf("cannot read the description %s", d)
		}
		def := metricDef{typ: typ, labels: map[string]bool{}, values: map[string][]string{}}
		for _, l := range strings.Split(m[3], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				def.labels[l] = true
			}
		}
		for _, pair := range strings.Split(m[2], ",") {
			if name, _, ok := strings.Cut(pair, "="); ok {
				def.labels[name] = true
			}
		}
		out[m[1]] = def
	}
	return out, nil
}

// crossCheckRecorder records one series of each of the recorder's metrics
// and gathers them, so describe's reading of descriptions is checked
// against what Prometheus scrapes.
func crossCheckRecorder(ms metricSet) error {
	reg := prometheus.NewRegistry()
	r := metrics.NewRecorder(reg)
	r.ReconcileDone("CoreProvider", "ns", "name", time.Millisecond)
	r.ObjectState(metrics.ObjectState{Kind: "CoreProvider", Namespace: "ns", Name: "name", Ready: metav1.ConditionTrue})
	r.TenantClusters("ns", "tenant", nil)
	fams, err := reg.Gather()
	if err != nil {
		return err
	}
	if len(fams) == 0 {
		return errors.New("the recorder's metrics gathered nothing")
	}
	for _, fam := range fams {
		def, ok := ms[fam.GetName()]
		if !ok {
			return fmt.Errorf("gathered %s, which describe did not find", fam.GetName())
		}
		if typ := strings.ToLower(fam.GetType().String()); typ != def.typ {
			return fmt.Errorf("%s is a %s, describe read a %s", fam.GetName(), typ, def.typ)
		}
		gathered := map[string]bool{}
		for _, l := range fam.GetMetric()[0].GetLabel() {
			gathered[l.GetName()] = true
		}
		if keys(gathered) != keys(def.labels) {
			return fmt.Errorf("%s has labels %s, describe read %s", fam.GetName(), keys(gathered), keys(def.labels))
		}
	}
	return nil
}

// controllerRuntimeFamilies runs a controller with one failing reconcile
// and gathers controller-runtime's registry, as the manager serves it.
func controllerRuntimeFamilies() ([]*dto.MetricFamily, error) {
	ctrllog.SetLogger(logr.Discard())
	c, err := controller.NewUnmanaged("capwright-docs-test", controller.Options{
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, errors.New("an error, to count")
		}),
		SkipNameValidation: ptr.To(true),
		Logger:             logr.Discard(),
	})
	if err != nil {
		return nil, err
	}
	ch := make(chan event.GenericEvent, 1)
	ch <- event.GenericEvent{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "one"}}}
	if err := c.Watch(source.Channel[client.Object](ch, &handler.EnqueueRequestForObject{})); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Only the controller stopping matters here: its error after the
	// cancel says nothing about the metrics.
	done := make(chan struct{})
	go func() { _ = c.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for {
		fams, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return nil, err
		}
		found := 0
		for _, fam := range fams {
			// Each appears at its own moment of the first reconcile; on a
			// loaded machine a gather can fall between them.
			switch fam.GetName() {
			case "controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_time_seconds", "controller_runtime_active_workers":
				found++
			}
		}
		if found == 3 {
			return fams, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("controller-runtime's reconcile metrics did not appear")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stringConstants returns the values of the string constants in file
// whose names start with prefix.
func stringConstants(file, prefix string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					out = append(out, v)
				}
			}
		}
	}
	return out, nil
}

// TestMonitoringGuideQueries checks every expression of the guide's
// ```promql blocks (expressions are separated by # comment lines).
func TestMonitoringGuideQueries(t *testing.T) {
	ms := managerMetrics(t)
	guide := readFile(t, monitoringGuide)
	n := 0
	for _, block := range regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(guide, -1) {
		for _, expr := range promqlExpressions(block[1]) {
			n++
			if _, errs := checkPromQL(expr, ms); len(errs) > 0 {
				t.Errorf("%s: %s: %v", monitoringGuide, expr, errors.Join(errs...))
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d PromQL expressions in %s", n, monitoringGuide)
	}
}

// promqlExpressions splits a block at comment and blank lines.
func promqlExpressions(block string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// TestMonitoringGuideListsEveryMetric: each of Capwright's metrics has a
// row in the guide's table with its type and every label, and every
// metric the guide names in backticks exists.
func TestMonitoringGuideListsEveryMetric(t *testing.T) {
	ms := managerMetrics(t)
	guide := readFile(t, monitoringGuide)
	rows := map[string][]string{}
	for _, line := range strings.Split(guide, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 3 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[2:]
		}
	}
	capwright := 0
	for name, def := range ms {
		if !strings.HasPrefix(name, "capwright_") {
			continue
		}
		capwright++
		row, ok := rows[name]
		if !ok {
			t.Errorf("%s: no table row for %s (%s with labels %s)", monitoringGuide, name, def.typ, keys(def.labels))
			continue
		}
		if !strings.HasPrefix(strings.TrimSpace(row[0]), def.typ) {
			t.Errorf("%s: %s is a %s, the guide says %q", monitoringGuide, name, def.typ, strings.TrimSpace(row[0]))
		}
		for l := range def.labels {
			if !strings.Contains(row[1], "`"+l+"`") {
				t.Errorf("%s: the row of %s does not list its label %s", monitoringGuide, name, l)
			}
		}
		for l, values := range def.values {
			for _, v := range values {
				// The kinds are listed once, above the table.
				if text := row[2]; l == "kind" && !strings.Contains(guide, "`"+v+"`") || l != "kind" && !strings.Contains(text, "`"+v+"`") {
					t.Errorf("%s: the guide does not name %s=%q of %s, which the manager sets", monitoringGuide, l, v, name)
				}
			}
		}
	}
	if capwright < 4 {
		t.Fatalf("the manager registers only %d capwright_* metrics", capwright)
	}
	named := regexp.MustCompile("`((?:capwright|controller_runtime|workqueue)_[a-z_]+)`")
	for _, m := range named.FindAllStringSubmatch(guide, -1) {
		if _, ok := ms[m[1]]; ok {
			continue
		}
		if _, _, err := ms.series(m[1]); err != nil {
			t.Errorf("%s names %s: %v", monitoringGuide, m[1], err)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`).FindAllStringSubmatch(guide, -1) {
		if _, err := os.Stat(filepath.Join(repoRoot, "docs", m[1])); err != nil {
			t.Errorf("%s links %s, which does not exist", monitoringGuide, m[1])
		}
	}
}

type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	AllValue   string          `json:"allValue"`
	Datasource json.RawMessage `json:"datasource"`
}

type grafanaPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		RefID        string          `json:"refId"`
		Expr         string          `json:"expr"`
		LegendFormat string          `json:"legendFormat"`
		Datasource   json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels          []grafanaPanel `json:"panels"`
	Transformations []struct {
		ID      string `json:"id"`
		Options struct {
			IndexByName  map[string]int    `json:"indexByName"`
			RenameByName map[string]string `json:"renameByName"`
		} `json:"options"`
	} `json:"transformations"`
	FieldConfig struct {
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options any    `json:"options"`
			} `json:"matcher"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
}

var (
	legendLabel   = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	grafanaVarRef = regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)\}?`)
	labelValues   = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
)

// TestGrafanaDashboard checks the dashboard's queries, legends, table
// columns and variables against the manager's metrics; variables are
// replaced by their "All" value, so that value is checked where it is used.
func TestGrafanaDashboard(t *testing.T) {
	ms := managerMetrics(t)
	var dash grafanaDashboard
	data := []byte(readFile(t, dashboardFile))
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("%s has no uid or title", dashboardFile)
	}

	datasource := ""
	vars := map[string]string{} // name → the value substituted in queries
	for _, v := range dash.Templating.List {
		switch v.Type {
		case "datasource":
			var q string
			if err := json.Unmarshal(v.Query, &q); err != nil || q != "prometheus" {
				t.Errorf("%s: data source variable %s is not of Prometheus (%s)", dashboardFile, v.Name, v.Query)
			}
			datasource = v.Name
		case "query":
			vars[v.Name] = v.AllValue
			if v.AllValue == "" {
				vars[v.Name] = ".*"
			}
		default:
			t.Errorf("%s: variable %s of type %s: teach the test", dashboardFile, v.Name, v.Type)
		}
	}
	if datasource == "" {
		t.Fatalf("%s has no data source variable", dashboardFile)
	}
	substitute := func(where, expr string) string {
		return grafanaVarRef.ReplaceAllStringFunc(expr, func(ref string) string {
			name := grafanaVarRef.FindStringSubmatch(ref)[1]
			if strings.HasPrefix(name, "__") {
				return ref
			}
			value, ok := vars[name]
			if !ok {
				t.Errorf("%s: %s uses undefined variable $%s", dashboardFile, where, name)
			}
			return value
		})
	}
	checkDatasource := func(where string, raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		var ds struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		}
		if err := json.Unmarshal(raw, &ds); err != nil {
			_ = json.Unmarshal(raw, &ds.UID)
			ds.Type = "prometheus"
		}
		if ds.Type != "prometheus" || (ds.UID != "${"+datasource+"}" && ds.UID != "$"+datasource) {
			t.Errorf("%s: %s uses data source %s, not the variable $%s", dashboardFile, where, raw, datasource)
		}
	}

	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		checkDatasource("variable "+v.Name, v.Datasource)
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			_ = json.Unmarshal(v.Query, &q.Query)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", dashboardFile, v.Name, q.Query)
			continue
		}
		labels, errs := checkPromQL(substitute("variable "+v.Name, m[1]), ms)
		if len(errs) > 0 {
			t.Errorf("%s: variable %s: %v", dashboardFile, v.Name, errors.Join(errs...))
		} else if !labels[m[2]] {
			t.Errorf("%s: variable %s: %s has no label %s", dashboardFile, v.Name, m[1], m[2])
		}
	}

	ids := map[int]bool{}
	used := map[string]bool{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			where := fmt.Sprintf("panel %q", p.Title)
			if ids[p.ID] {
				t.Errorf("%s: panel id %d is used twice", dashboardFile, p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			checkDatasource(where, p.Datasource)
			if len(p.Targets) == 0 {
				t.Errorf("%s: %s has no query", dashboardFile, where)
			}
			columns := setOf("Time", "Value", "__name__")
			for _, target := range p.Targets {
				where := fmt.Sprintf("%s, query %s", where, target.RefID)
				checkDatasource(where, target.Datasource)
				out, errs := checkPromQL(substitute(where, target.Expr), ms)
				if len(errs) > 0 {
					t.Errorf("%s: %s: %s: %v", dashboardFile, where, target.Expr, errors.Join(errs...))
					continue
				}
				if parsed, err := parsePromQL(substitute(where, target.Expr)); err == nil {
					for _, sel := range parsed.selectors {
						used[sel.name] = true
					}
				}
				for _, m := range legendLabel.FindAllStringSubmatch(target.LegendFormat, -1) {
					if !out[m[1]] {
						t.Errorf("%s: %s: the legend names %s, which the query's result lacks (it has %s)", dashboardFile, where, m[1], keys(out))
					}
				}
				for l := range out {
					columns[l] = true
				}
			}
			if p.Type != "table" {
				continue
			}
			for _, tr := range p.Transformations {
				for name := range tr.Options.IndexByName {
					if !columns[name] {
						t.Errorf("%s: %s orders column %s, which its queries do not return", dashboardFile, where, name)
					}
				}
				for name := range tr.Options.RenameByName {
					if !columns[name] {
						t.Errorf("%s: %s renames column %s, which its queries do not return", dashboardFile, where, name)
					}
				}
			}
			for _, o := range p.FieldConfig.Overrides {
				if name, ok := o.Matcher.Options.(string); ok && o.Matcher.ID == "byName" && !columns[name] {
					t.Errorf("%s: %s overrides column %s, which its queries do not return", dashboardFile, where, name)
				}
			}
		}
	}
	walk(dash.Panels)
	for name := range ms {
		if !strings.HasPrefix(name, "capwright_") {
			continue
		}
		if !slices.ContainsFunc(keysOf(used), func(s string) bool { return s == name || strings.HasPrefix(s, name+"_") }) {
			t.Errorf("%s shows nothing of %s", dashboardFile, name)
		}
	}
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval,omitempty"`
			Rules    []struct {
				Alert         string            `json:"alert,omitempty"`
				Record        string            `json:"record,omitempty"`
				Expr          string            `json:"expr"`
				For           string            `json:"for,omitempty"`
				KeepFiringFor string            `json:"keep_firing_for,omitempty"`
				Labels        map[string]string `json:"labels,omitempty"`
				Annotations   map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

var promRuleDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

// TestPrometheusRules checks the alerting rules: their shape, queries,
// the labels their annotations use, the durations, and that the provider
// and tenant alerts select what their names say.
func TestPrometheusRules(t *testing.T) {
	ms := managerMetrics(t)
	docs := yamlDocuments(t, []byte(readFile(t, alertsFile)))
	if len(docs) != 1 {
		t.Fatalf("%s holds %d documents, want one PrometheusRule", alertsFile, len(docs))
	}
	var rule prometheusRule
	if err := yaml.UnmarshalStrict(docs[0], &rule); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" || rule.Metadata.Name == "" {
		t.Errorf("%s is a %s %s named %q, want a monitoring.coreos.com/v1 PrometheusRule", alertsFile, rule.APIVersion, rule.Kind, rule.Metadata.Name)
	}
	annotationLabel := regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	alerts := map[string]string{} // name → for
	exprs := map[string]*promExpr{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if (r.Alert == "") == (r.Record == "") {
				t.Errorf("%s: a rule of group %s needs alert or record, not both: %q %q", alertsFile, g.Name, r.Alert, r.Record)
			}
			if _, dup := alerts[name]; dup {
				t.Errorf("%s: %s is defined twice", alertsFile, name)
			}
			alerts[name] = r.For
			for _, d := range []string{r.For, r.KeepFiringFor} {
				if d != "" && !promRuleDuration.MatchString(d) {
					t.Errorf("%s: %s: %q is not a duration", alertsFile, name, d)
				}
			}
			out, errs := checkPromQL(r.Expr, ms)
			if len(errs) > 0 {
				t.Errorf("%s: %s: %v", alertsFile, name, errors.Join(errs...))
				continue
			}
			exprs[name], _ = parsePromQL(r.Expr)
			if r.Alert != "" {
				checkNewCounterSeries(t, name, r.Expr, exprs[name], ms)
			}
			for key, text := range r.Annotations {
				if _, err := alertTemplate(text); err != nil {
					t.Errorf("%s: %s: annotation %s: %v", alertsFile, name, key, err)
				}
				for _, m := range annotationLabel.FindAllStringSubmatch(text, -1) {
					if !out[m[1]] {
						t.Errorf("%s: %s: annotation %s uses $labels.%s, which the alert's series lack (they have %s)", alertsFile, name, key, m[1], keys(out))
					}
				}
			}
			if r.Alert != "" && r.Labels["severity"] == "" {
				t.Errorf("%s: %s has no severity label", alertsFile, name)
			}
		}
	}

	kinds := ms["capwright_resource_info"].values["kind"]
	var providerKinds []string
	for _, k := range provider.Kinds() {
		providerKinds = append(providerKinds, k.Name)
	}
	for _, want := range []struct {
		alert, metric, forDuration string
		selects                    map[string][]string
	}{
		{"CapwrightProviderNotReady", "capwright_resource_info", "15m", map[string][]string{
			"kind": providerKinds, "ready": {string(metav1.ConditionFalse), string(metav1.ConditionUnknown)}, "suspended": {"false"}}},
		{"CapwrightTenantNotReady", "capwright_resource_info", "15m", map[string][]string{
			"kind": {tenancyv1alpha1.TenantKind}, "ready": {string(metav1.ConditionFalse), string(metav1.ConditionUnknown)}, "suspended": {"false"}}},
		{"CapwrightTenantClusterFailed", "capwright_tenant_clusters", "", map[string][]string{"phase": {string(tenancyv1alpha1.ClusterPhaseFailed)}}},
		{"CapwrightTenantRolloutStopped", "capwright_tenant_rollbacks_total", "", nil},
		{"CapwrightProviderRolledBack", "capwright_provider_rollbacks_total", "", nil},
	} {
		forDuration, ok := alerts[want.alert]
		if !ok {
			t.Errorf("%s has no alert %s", alertsFile, want.alert)
			continue
		}
		if want.forDuration != "" && forDuration != want.forDuration {
			t.Errorf("%s: %s fires after %q, want %s", alertsFile, want.alert, forDuration, want.forDuration)
		}
		p := exprs[want.alert]
		if p == nil {
			continue
		}
		idx := slices.IndexFunc(p.selectors, func(s promSelector) bool { return s.name == want.metric })
		if idx < 0 {
			t.Errorf("%s: %s does not query %s", alertsFile, want.alert, want.metric)
			continue
		}
		for label, values := range want.selects {
			all := ms[want.metric].values[label]
			if label == "kind" {
				all = kinds
			}
			if got := selectedValues(all, p.selectors[idx].matchers, label); !slices.Equal(got, values) {
				t.Errorf("%s: %s selects %s %v, want %v", alertsFile, want.alert, label, got, values)
			}
		}
	}

	// The guide's table of alerts says what the rules do.
	guide := readFile(t, monitoringGuide)
	for name, forDuration := range alerts {
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(name) + "` \\|.*\\| ([^|]*) \\|$").FindStringSubmatch(guide)
		if row == nil {
			t.Errorf("%s does not list the alert %s", monitoringGuide, name)
		} else if strings.TrimSpace(row[1]) != forDuration {
			t.Errorf("%s says %s fires after %q, the rule after %q", monitoringGuide, name, strings.TrimSpace(row[1]), forDuration)
		}
	}
}

// checkNewCounterSeries: Capwright's counters are vectors whose series
// the manager creates at their first increment, so a series is first
// scraped at 1 and increase() or rate() over it stays 0. An alert on one
// must also catch a series that is new in its window:
// `m unless m offset <window>`.
func checkNewCounterSeries(t *testing.T, alert, expr string, p *promExpr, ms metricSet) {
	t.Helper()
	if p == nil {
		return
	}
	for _, sel := range p.selectors {
		if !strings.HasPrefix(sel.name, "capwright_") || ms[sel.name].typ != "counter" {
			continue
		}
		name := regexp.QuoteMeta(sel.name)
		if !regexp.MustCompile(`\bunless\s+` + name + `(\{[^}]*\})?\s+offset\s+[0-9]`).MatchString(expr) {
			t.Errorf("%s: %s counts %s, whose series appear at 1 with the first event, which increase() misses; add `or (%s unless %s offset <window>)`",
				alertsFile, alert, sel.name, sel.name, sel.name)
		}
	}
}

// alertTemplate parses an annotation as Prometheus does: a Go template
// with $labels and $value and Prometheus' template functions.
func alertTemplate(text string) (*template.Template, error) {
	funcs := template.FuncMap{}
	for _, name := range []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp",
		"query", "first", "label", "value", "strvalue", "title", "toUpper", "toLower", "match", "reReplaceAll",
		"safeHtml", "args", "tmpl", "sortByLabel", "graphLink", "tableLink", "pathPrefix", "externalURL",
		"stripPort", "stripDomain", "parseDuration", "toTime", "toDuration", "now"} {
		funcs[name] = func(...any) any { return nil }
	}
	return template.New("annotation").Funcs(funcs).Parse("{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$value := .Value}}" + text)
}

// selectedValues are the values of label the matchers on it let through.
func selectedValues(values []string, matchers []promMatcher, label string) []string {
	var out []string
	for _, v := range values {
		ok := true
		for _, m := range matchers {
			if m.label != label {
				continue
			}
			re := regexp.MustCompile("^(?:" + m.value + ")$")
			switch m.op {
			case "=":
				ok = ok && v == m.value
			case "!=":
				ok = ok && v != m.value
			case "=~":
				ok = ok && re.MatchString(v)
			case "!~":
				ok = ok && !re.MatchString(v)
			}
		}
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// TestKustomizeServiceMonitor: manifests/prometheus scrapes the metrics
// Service of manifests/default, alone or in an overlay with it, and the
// guide shows the same ServiceMonitor.
func TestKustomizeServiceMonitor(t *testing.T) {
	install := kustomizeBuild(t, filepath.Join(repoRoot, "manifests", "default"))
	if len(framework.OfKind(install, "ServiceMonitor")) != 0 {
		t.Error("manifests/default holds a ServiceMonitor: it is opt-in (manifests/prometheus), clusters without the Prometheus Operator cannot apply it")
	}
	monitoring := kustomizeBuild(t, filepath.Join(repoRoot, "manifests", "prometheus"))
	sms := framework.OfKind(monitoring, "ServiceMonitor")
	if len(sms) != 1 || len(monitoring) != 1 {
		t.Fatalf("manifests/prometheus builds %d objects, %d ServiceMonitors; want one ServiceMonitor", len(monitoring), len(sms))
	}
	framework.CheckServiceMonitor(t, "manifests/prometheus", sms[0], install, framework.ManagerMetricsPort(t, repoRoot))

	// As the kustomization's comment shows it: an overlay of both.
	root, err := filepath.Abs(filepath.Join(repoRoot, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, root) // kustomize takes no absolute paths
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf("resources:\n- %s\n- %s\n", filepath.Join(rel, "default"), filepath.Join(rel, "prometheus"))
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	both := kustomizeBuild(t, overlay)
	if sms := framework.OfKind(both, "ServiceMonitor"); len(sms) != 1 {
		t.Errorf("the overlay of manifests/default and manifests/prometheus holds %d ServiceMonitors", len(sms))
	} else {
		framework.CheckServiceMonitor(t, "the overlay", sms[0], both, framework.ManagerMetricsPort(t, repoRoot))
	}

	m := regexp.MustCompile("(?s)```yaml\n(apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n.*?)```").FindStringSubmatch(readFile(t, monitoringGuide))
	if m == nil {
		t.Fatalf("%s shows no ServiceMonitor", monitoringGuide)
	}
	shipped := readFile(t, "manifests/prometheus/servicemonitor.yaml")
	if got, want := objects(t, []byte(m[1])), objects(t, []byte(shipped)); !slices.EqualFunc(got, want, func(a, b map[string]any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Errorf("%s shows\n%v\nbut manifests/prometheus/servicemonitor.yaml is\n%v", monitoringGuide, got, want)
	}
}

// TestChartValuesAreDescribed: every value in values.yaml is in the
// schema and the README's table, and every .Values the templates read is
// in values.yaml.
func TestChartValuesAreDescribed(t *testing.T) {
	chart := filepath.Join(repoRoot, "charts", "capwright")
	values := map[string]any{}
	readYAML(t, filepath.Join(chart, "values.yaml"), &values)
	schema := map[string]any{}
	readYAML(t, filepath.Join(chart, "values.schema.json"), &schema)
	readme := readFile(t, "charts/capwright/README.md")
	var walk func(prefix string, values map[string]any, schema map[string]any)
	walk = func(prefix string, values map[string]any, schema map[string]any) {
		props, _ := schema["properties"].(map[string]any)
		for k, v := range values {
			path := prefix + k
			sub, ok := props[k].(map[string]any)
			if !ok {
				t.Errorf("values.schema.json does not describe %s", path)
				continue
			}
			if vm, isMap := v.(map[string]any); isMap && sub["properties"] != nil {
				walk(path+".", vm, sub)
				continue
			}
			if !strings.Contains(readme, "| `"+path+"` |") {
				t.Errorf("charts/capwright/README.md's table has no row for %s", path)
			}
		}
	}
	walk("", values, schema)

	files, err := filepath.Glob(filepath.Join(chart, "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`\.Values((?:\.[a-zA-Z_][a-zA-Z0-9_]*)+)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllStringSubmatch(string(data), -1) {
			var cur any = values
			for _, part := range strings.Split(strings.TrimPrefix(m[1], "."), ".") {
				mv, ok := cur.(map[string]any)
				if !ok {
					t.Errorf("%s reads .Values%s, which values.yaml does not have", filepath.Base(f), m[1])
					break
				}
				if cur, ok = mv[part]; !ok {
					t.Errorf("%s reads .Values%s, which values.yaml does not have", filepath.Base(f), m[1])
					break
				}
			}
		}
	}
}

func kustomizeBuild(t *testing.T, dir string) []map[string]any {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	data, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, data)
}

func readYAML(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
