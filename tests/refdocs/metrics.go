package refdocs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type metric struct {
	name, typ, help, file string
	labels                []string
}

// metricConstructors are the prometheus constructors a metric is made
// with, and the type each makes.
var metricConstructors = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
}

// metricsPage lists every metric the manager's code defines: each call
// of a prometheus constructor in internal/ and cmd/ (not tests), with
// the name, help and labels it is given.
func metricsPage(root string) (string, error) {
	var all []metric
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			found, err := fileMetrics(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			for _, m := range found {
				m.file = filepath.ToSlash(rel)
				all = append(all, m)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	if len(all) == 0 {
		return "", fmt.Errorf("no metrics found in internal/ or cmd/")
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	var b strings.Builder
	header(&b, "Metrics", "the prometheus collectors defined in internal/ and cmd/")
	b.WriteString("The manager serves these on `--metrics-addr` (`/metrics`, port 8080 by\n" +
		"default) beside controller-runtime's and Go's own. Queries, alerts and the\n" +
		"dashboard: [monitoring.md](../monitoring.md), [alerts.md](../alerts.md).\n\n")
	b.WriteString("| Metric | Type | Labels | Description | Defined in |\n|---|---|---|---|---|\n")
	for _, m := range all {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | `%s` |\n", m.name, m.typ, strings.Join(m.labels, ", "), cell(m.help), m.file)
	}
	return b.String(), nil
}

// fileMetrics finds prometheus.NewXxx(prometheus.XxxOpts{Name: …, Help: …}, []string{…}) calls.
func fileMetrics(path string) ([]metric, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []metric
	var failed error
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || failed != nil {
			return failed == nil
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		typ, isMetric := metricConstructors[sel.Sel.Name]
		if !ok || pkg.Name != "prometheus" || !isMetric || len(call.Args) == 0 {
			return true
		}
		opts, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			failed = fmt.Errorf("%s: prometheus.%s without an options literal: the reference cannot read it", path, sel.Sel.Name)
			return false
		}
		m := metric{typ: typ}
		for _, el := range opts.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			lit, ok := kv.Value.(*ast.BasicLit)
			if key == nil || !ok || lit.Kind != token.STRING {
				continue
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				failed = err
				return false
			}
			switch key.Name {
			case "Name":
				m.name = v
			case "Help":
				m.help = v
			}
		}
		if m.name == "" {
			failed = fmt.Errorf("%s: prometheus.%s whose Name is not a string literal: the reference cannot read it", path, sel.Sel.Name)
			return false
		}
		if len(call.Args) > 1 {
			if labels, ok := call.Args[1].(*ast.CompositeLit); ok {
				for _, el := range labels.Elts {
					if lit, ok := el.(*ast.BasicLit); ok {
						l, _ := strconv.Unquote(lit.Value)
						m.labels = append(m.labels, "`"+l+"`")
					}
				}
			}
		}
		out = append(out, m)
		return true
	})
	return out, failed
}
