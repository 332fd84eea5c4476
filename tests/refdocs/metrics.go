package refdocs

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/capwright/capwright/internal/metrics"
)

// collectors records what metrics.NewRecorder registers.
type collectors struct{ list []prometheus.Collector }

func (c *collectors) Register(col prometheus.Collector) error {
	c.list = append(c.list, col)
	return nil
}

func (c *collectors) MustRegister(cols ...prometheus.Collector) { c.list = append(c.list, cols...) }

func (c *collectors) Unregister(prometheus.Collector) bool { return false }

// descFields reads a Desc's String(): prometheus exposes no accessors.
var descFields = regexp.MustCompile(`fqName: "([^"]+)", help: "((?:[^"\\]|\\.)*)", constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}`)

type metric struct {
	name, typ, help string
	labels          []string
}

// metricsPage lists the metrics the manager's recorder registers, from
// the collectors themselves.
func metricsPage() (string, error) {
	reg := &collectors{}
	metrics.NewRecorder(reg)
	var all []metric
	for _, col := range reg.list {
		typ := "gauge"
		switch col.(type) {
		case *prometheus.HistogramVec:
			typ = "histogram"
		case *prometheus.CounterVec:
			typ = "counter"
		case *prometheus.SummaryVec:
			typ = "summary"
		}
		ch := make(chan *prometheus.Desc, 8)
		go func() { col.Describe(ch); close(ch) }()
		for d := range ch {
			m := descFields.FindStringSubmatch(d.String())
			if m == nil {
				return "", fmt.Errorf("cannot read the metric description %s", d)
			}
			var labels []string
			for _, l := range strings.Split(m[3], ",") {
				if l = strings.TrimSpace(l); l != "" {
					labels = append(labels, "`"+l+"`")
				}
			}
			all = append(all, metric{name: m[1], typ: typ, help: strings.ReplaceAll(m[2], `\"`, `"`), labels: labels})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	var b strings.Builder
	header(&b, "Metrics", "the collectors of internal/metrics")
	b.WriteString("The manager serves these on `--metrics-addr` (`/metrics`, port 8080 by\n" +
		"default) beside controller-runtime's and Go's own. Queries, alerts and the\n" +
		"dashboard: [monitoring.md](../monitoring.md), [alerts.md](../alerts.md).\n\n")
	b.WriteString("| Metric | Type | Labels | Description |\n|---|---|---|---|\n")
	for _, m := range all {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.name, m.typ, strings.Join(m.labels, ", "), cell(m.help))
	}
	return b.String(), nil
}
