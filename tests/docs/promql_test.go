package docs

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// A small PromQL reader, enough to check the queries the guides, the
// dashboard and the alerting rules hold against the metrics the manager
// registers: it tokenises an expression, checks that it is well formed
// (brackets, matchers, operands and operators in turn, known functions,
// durations), and finds its selectors (metric name and label matchers)
// and groupings (by, without, on, ignoring, group_left, group_right) with
// the part of the expression each applies to. It is not Prometheus'
// parser (github.com/prometheus/prometheus is too large a dependency for
// this): an expression it accepts can still be refused by Prometheus, but
// a misspelt metric, label or label value, or unbalanced brackets, fail.

type promToken struct {
	kind byte // 'i' identifier or keyword, 'n' number or duration, 's' string, 'p' punctuation
	text string
}

type promMatcher struct{ label, op, value string }

type promSelector struct {
	name     string
	matchers []promMatcher
	at       int // token index
}

type promGrouping struct {
	keyword string
	labels  []string
	// from, to are the token span of the aggregation's argument (by,
	// without); -1 for the whole expression (on, ignoring, group_*).
	from, to int
}

type promExpr struct {
	selectors  []promSelector
	groupings  []promGrouping
	funcs      map[string]bool
	created    map[string]bool // labels label_replace and label_join write
	aggregates bool
}

var promAggregations = setOf("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio")

var promFunctions = setOf("abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
	"day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp", "floor",
	"histogram_avg", "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
	"histogram_stdvar", "histogram_sum", "holt_winters", "double_exponential_smoothing", "hour", "idelta",
	"increase", "irate", "label_join", "label_replace", "ln", "log2", "log10", "minute", "month",
	"predict_linear", "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sort_by_label",
	"sort_by_label_desc", "sqrt", "time", "timestamp", "vector", "year", "avg_over_time", "min_over_time",
	"max_over_time", "sum_over_time", "count_over_time", "quantile_over_time", "stddev_over_time",
	"stdvar_over_time", "last_over_time", "present_over_time", "mad_over_time", "acos", "acosh", "asin",
	"asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh", "deg", "pi", "rad")

var promBinaryOps = setOf("+", "-", "*", "/", "%", "^", "==", "!=", ">", "<", ">=", "<=")

var promSetOps = setOf("and", "or", "unless", "atan2")

var (
	promDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	promNumber   = regexp.MustCompile(`^(0[xX][0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?|[0-9]+\.)$`)
	// Grafana's interval macros, which stand for a duration.
	grafanaMacro = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?`)
)

func setOf(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

// lexPromQL splits an expression into tokens; # starts a comment.
func lexPromQL(expr string) ([]promToken, error) {
	var out []promToken
	isIdentStart := func(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			j := i + 1
			for j < len(expr) && (isIdentStart(expr[j]) || isDigit(expr[j]) || expr[j] == ':') {
				j++
			}
			out = append(out, promToken{'i', expr[i:j]})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(expr) && isDigit(expr[i+1]):
			j := i + 1
			for j < len(expr) && (isIdentStart(expr[j]) || isDigit(expr[j]) || expr[j] == '.') {
				if (expr[j] == 'e' || expr[j] == 'E') && j+1 < len(expr) && (expr[j+1] == '-' || expr[j+1] == '+') {
					j++
				}
				j++
			}
			out = append(out, promToken{'n', expr[i:j]})
			i = j
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %q", expr[i:])
			}
			out = append(out, promToken{'s', expr[i : j+1]})
			i = j + 1
		default:
			if i+1 < len(expr) {
				if two := expr[i : i+2]; slices.Contains([]string{"==", "!=", ">=", "<=", "=~", "!~"}, two) {
					out = append(out, promToken{'p', two})
					i += 2
					continue
				}
			}
			if !strings.ContainsRune("(){}[],=+-*/%^<>@:", rune(c)) {
				return nil, fmt.Errorf("unexpected character %q in %q", c, expr[i:])
			}
			out = append(out, promToken{'p', string(c)})
			i++
		}
	}
	return out, nil
}

// unquotePromString returns the value of a string token.
func unquotePromString(s string) (string, error) {
	switch s[0] {
	case '`':
		return s[1 : len(s)-1], nil
	case '\'':
		inner := strings.ReplaceAll(s[1:len(s)-1], `\'`, `'`)
		return strconv.Unquote(`"` + strings.ReplaceAll(inner, `"`, `\"`) + `"`)
	}
	return strconv.Unquote(s)
}

// parsePromQL reads expr (Grafana's interval macros allowed).
func parsePromQL(expr string) (*promExpr, error) {
	toks, err := lexPromQL(grafanaMacro.ReplaceAllString(expr, "5m"))
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty expression")
	}
	closeOf, openOf := map[int]int{}, map[int]int{}
	var stack []int
	pairs := map[string]string{")": "(", "}": "{", "]": "["}
	for i, tk := range toks {
		switch tk.text {
		case "(", "{", "[":
			if tk.kind == 'p' {
				stack = append(stack, i)
			}
		case ")", "}", "]":
			if tk.kind != 'p' {
				continue
			}
			if len(stack) == 0 || toks[stack[len(stack)-1]].text != pairs[tk.text] {
				return nil, fmt.Errorf("unbalanced %q", tk.text)
			}
			open := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			closeOf[open], openOf[i] = i, open
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("unclosed %q", toks[stack[len(stack)-1]].text)
	}

	p := &promExpr{funcs: map[string]bool{}, created: map[string]bool{}}
	next := func(i int) string {
		if i+1 < len(toks) {
			return toks[i+1].text
		}
		return ""
	}
	operand := false // what was read so far ends an operand
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		switch {
		case tk.kind == 'i' && (tk.text == "by" || tk.text == "without"):
			labels, end, err := promLabelList(toks, i+1, closeOf)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", tk.text, err)
			}
			g := promGrouping{keyword: tk.text, labels: labels}
			switch {
			case i > 0 && toks[i-1].kind == 'i' && promAggregations[toks[i-1].text]: // sum by (a) (x)
				if end+1 >= len(toks) || toks[end+1].text != "(" {
					return nil, fmt.Errorf("%s %s (…) is not followed by the aggregation's argument", toks[i-1].text, tk.text)
				}
				g.from, g.to = end+1, closeOf[end+1]
				operand = false
			case i > 0 && toks[i-1].text == ")" && openOf[i-1] > 0 && promAggregations[toks[openOf[i-1]-1].text]: // sum(x) by (a)
				g.from, g.to = openOf[i-1], i-1
				operand = true
			default:
				return nil, fmt.Errorf("%s (%s) follows no aggregation", tk.text, strings.Join(labels, ", "))
			}
			p.groupings = append(p.groupings, g)
			i = end
		case tk.kind == 'i' && (tk.text == "on" || tk.text == "ignoring"):
			if operand {
				return nil, fmt.Errorf("%s follows an operand, not a binary operator", tk.text)
			}
			labels, end, err := promLabelList(toks, i+1, closeOf)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", tk.text, err)
			}
			p.groupings = append(p.groupings, promGrouping{keyword: tk.text, labels: labels, from: -1, to: -1})
			i = end
		case tk.kind == 'i' && (tk.text == "group_left" || tk.text == "group_right"):
			if next(i) == "(" {
				labels, end, err := promLabelList(toks, i+1, closeOf)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", tk.text, err)
				}
				p.groupings = append(p.groupings, promGrouping{keyword: tk.text, labels: labels, from: -1, to: -1})
				i = end
			}
		case tk.kind == 'i' && tk.text == "bool":
			if operand {
				return nil, fmt.Errorf("bool follows an operand, not a comparison")
			}
		case tk.kind == 'i' && promSetOps[tk.text]:
			if !operand {
				return nil, fmt.Errorf("%s has no left operand", tk.text)
			}
			operand = false
		case tk.kind == 'i' && tk.text == "offset":
			if !operand {
				return nil, fmt.Errorf("offset follows no selector")
			}
			j := i + 1
			if next(i) == "-" {
				j++
			}
			if j >= len(toks) || !promDuration.MatchString(toks[j].text) {
				return nil, fmt.Errorf("offset needs a duration")
			}
			i = j
		case tk.kind == 'i' && next(i) == "(":
			if operand {
				return nil, fmt.Errorf("%s( follows an operand without an operator", tk.text)
			}
			if !promFunctions[tk.text] && !promAggregations[tk.text] {
				return nil, fmt.Errorf("unknown function %s", tk.text)
			}
			p.funcs[tk.text] = true
			p.aggregates = p.aggregates || promAggregations[tk.text]
			if tk.text == "label_replace" || tk.text == "label_join" {
				args := promArgs(toks, i+1, closeOf[i+1])
				if len(args) < 2 || len(args[1]) != 1 || args[1][0].kind != 's' {
					return nil, fmt.Errorf("%s: the second argument is not the destination label", tk.text)
				}
				dst, err := unquotePromString(args[1][0].text)
				if err != nil {
					return nil, err
				}
				p.created[dst] = true
			}
		case tk.kind == 'i' && promAggregations[tk.text] && (next(i) == "by" || next(i) == "without"):
			if operand {
				return nil, fmt.Errorf("%s follows an operand without an operator", tk.text)
			}
			p.aggregates = true
		case tk.kind == 'i' && (strings.EqualFold(tk.text, "inf") || strings.EqualFold(tk.text, "nan")):
			if operand {
				return nil, fmt.Errorf("%s follows an operand without an operator", tk.text)
			}
			operand = true
		case tk.kind == 'i':
			if operand {
				return nil, fmt.Errorf("%s follows an operand without an operator", tk.text)
			}
			sel := promSelector{name: tk.text, at: i}
			if next(i) == "{" {
				m, err := promMatchers(toks, i+2, closeOf[i+1])
				if err != nil {
					return nil, fmt.Errorf("%s: %w", tk.text, err)
				}
				sel.matchers = m
				i = closeOf[i+1]
			}
			p.selectors = append(p.selectors, sel)
			operand = true
		case tk.text == "{" && tk.kind == 'p':
			if operand {
				return nil, fmt.Errorf("a selector follows an operand without an operator")
			}
			m, err := promMatchers(toks, i+1, closeOf[i])
			if err != nil {
				return nil, err
			}
			sel := promSelector{matchers: m, at: i}
			for _, mt := range m {
				if mt.label == "__name__" && mt.op == "=" {
					sel.name = mt.value
				}
			}
			p.selectors = append(p.selectors, sel)
			i = closeOf[i]
			operand = true
		case tk.text == "[" && tk.kind == 'p':
			if !operand {
				return nil, fmt.Errorf("a range [...] follows no selector")
			}
			if err := promRange(toks[i+1 : closeOf[i]]); err != nil {
				return nil, err
			}
			i = closeOf[i]
		case tk.text == "(" && tk.kind == 'p':
			if operand {
				return nil, fmt.Errorf("( follows an operand without an operator")
			}
		case tk.text == ")" && tk.kind == 'p':
			if !operand && toks[i-1].text != "(" {
				return nil, fmt.Errorf("an operand is missing before )")
			}
			operand = true
		case tk.text == "," && tk.kind == 'p':
			if !operand {
				return nil, fmt.Errorf("an operand is missing before ,")
			}
			operand = false
		case tk.kind == 'n':
			if operand {
				return nil, fmt.Errorf("%s follows an operand without an operator", tk.text)
			}
			if !promNumber.MatchString(tk.text) {
				return nil, fmt.Errorf("%q is not a number", tk.text)
			}
			operand = true
		case tk.kind == 's':
			if operand {
				return nil, fmt.Errorf("%s follows an operand without an operator", tk.text)
			}
			if _, err := unquotePromString(tk.text); err != nil {
				return nil, fmt.Errorf("string %s: %w", tk.text, err)
			}
			operand = true
		case tk.kind == 'p' && promBinaryOps[tk.text]:
			if !operand && tk.text != "-" && tk.text != "+" {
				return nil, fmt.Errorf("%s has no left operand", tk.text)
			}
			operand = false
		case tk.text == "@":
			if !operand {
				return nil, fmt.Errorf("@ follows no selector")
			}
			operand = false
		default:
			return nil, fmt.Errorf("unexpected %q", tk.text)
		}
	}
	if !operand {
		return nil, fmt.Errorf("the expression ends with an operator")
	}
	return p, nil
}

// promLabelList reads "(a, b)" at toks[at].
func promLabelList(toks []promToken, at int, closeOf map[int]int) ([]string, int, error) {
	if at >= len(toks) || toks[at].text != "(" {
		return nil, 0, fmt.Errorf("no label list")
	}
	end := closeOf[at]
	var labels []string
	for j := at + 1; j < end; j++ {
		if toks[j].kind != 'i' {
			return nil, 0, fmt.Errorf("%q in a label list", toks[j].text)
		}
		labels = append(labels, toks[j].text)
		if j+1 < end {
			if toks[j+1].text != "," {
				return nil, 0, fmt.Errorf("%q after label %s", toks[j+1].text, toks[j].text)
			}
			j++
		}
	}
	return labels, end, nil
}

// promMatchers reads label matchers from toks[from:to].
func promMatchers(toks []promToken, from, to int) ([]promMatcher, error) {
	var out []promMatcher
	for j := from; j < to; {
		if j+2 >= to || toks[j].kind != 'i' || !slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[j+1].text) || toks[j+2].kind != 's' {
			return nil, fmt.Errorf("malformed label matcher at %q", toks[j].text)
		}
		v, err := unquotePromString(toks[j+2].text)
		if err != nil {
			return nil, err
		}
		out = append(out, promMatcher{toks[j].text, toks[j+1].text, v})
		j += 3
		if j < to {
			if toks[j].text != "," {
				return nil, fmt.Errorf("%q after a label matcher", toks[j].text)
			}
			j++
		}
	}
	return out, nil
}

// promRange checks the inside of [...]: a duration, or a subquery's
// range:resolution.
func promRange(toks []promToken) error {
	var parts [][]promToken
	cur := []promToken{}
	for _, tk := range toks {
		if tk.text == ":" {
			parts = append(parts, cur)
			cur = []promToken{}
			continue
		}
		cur = append(cur, tk)
	}
	parts = append(parts, cur)
	if len(parts) > 2 {
		return fmt.Errorf("malformed range")
	}
	for i, part := range parts {
		if len(part) == 0 && i == 1 {
			continue // [5m:]
		}
		if len(part) != 1 || part[0].kind != 'n' || !promDuration.MatchString(part[0].text) && !promNumber.MatchString(part[0].text) {
			return fmt.Errorf("a range needs a duration")
		}
	}
	return nil
}

// promArgs splits the tokens between the call's parentheses at its
// top-level commas.
func promArgs(toks []promToken, open, close int) [][]promToken {
	var args [][]promToken
	depth, start := 0, open+1
	for j := open + 1; j < close; j++ {
		switch toks[j].text {
		case "(", "{", "[":
			depth++
		case ")", "}", "]":
			depth--
		case ",":
			if depth == 0 {
				args = append(args, toks[start:j])
				start = j + 1
			}
		}
	}
	return append(args, toks[start:close])
}

// metricDef is what the manager registers for a metric.
type metricDef struct {
	typ    string // counter, gauge, histogram, summary, untyped
	labels map[string]bool
	// values are the label values the code produces, for labels whose
	// values are a closed set.
	values map[string][]string
}

// metricSet is every metric the manager exports, by name (a histogram by
// its base name).
type metricSet map[string]metricDef

// targetLabels are the labels Prometheus adds to every series it scrapes.
var targetLabels = setOf("job", "instance")

// series resolves a series name: a counter or gauge, or a histogram's or
// summary's _bucket, _sum or _count.
func (ms metricSet) series(name string) (map[string]bool, metricDef, error) {
	if def, ok := ms[name]; ok {
		if def.typ == "histogram" {
			return nil, def, fmt.Errorf("%s is a histogram: query %[1]s_bucket, %[1]s_sum or %[1]s_count", name)
		}
		return def.labels, def, nil
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if def, known := ms[base]; ok && known && (def.typ == "histogram" || def.typ == "summary" && suffix != "_bucket") {
			labels := map[string]bool{}
			for l := range def.labels {
				labels[l] = true
			}
			if suffix == "_bucket" {
				labels["le"] = true
			}
			return labels, def, nil
		}
	}
	if strings.HasPrefix(name, "capwright_") {
		return nil, metricDef{}, fmt.Errorf("metric %s is not one the manager registers", name)
	}
	return nil, metricDef{}, fmt.Errorf("metric %s is neither Capwright's nor one controller-runtime registers in the manager", name)
}

// checkPromQL parses expr and checks every metric, label and enumerated
// label value it names against ms; it returns the labels of its result
// (approximately: a by clause's labels, or the selectors' labels).
func checkPromQL(expr string, ms metricSet) (map[string]bool, []error) {
	p, err := parsePromQL(expr)
	if err != nil {
		return nil, []error{fmt.Errorf("does not parse: %w", err)}
	}
	var errs []error
	resolved := map[int]map[string]bool{} // selector index → labels
	for i, sel := range p.selectors {
		if sel.name == "" {
			continue
		}
		labels, def, err := ms.series(sel.name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resolved[i] = labels
		for _, m := range sel.matchers {
			if !labels[m.label] && !targetLabels[m.label] && m.label != "__name__" {
				errs = append(errs, fmt.Errorf("%s has no label %s (it has %s)", sel.name, m.label, keys(labels)))
				continue
			}
			if err := checkLabelValue(def.values[m.label], m); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", sel.name, err))
			}
		}
	}
	for _, g := range p.groupings {
		for _, l := range g.labels {
			if targetLabels[l] || p.created[l] {
				continue
			}
			if g.from < 0 {
				found := false
				for _, labels := range resolved {
					found = found || labels[l]
				}
				if !found && len(resolved) > 0 {
					errs = append(errs, fmt.Errorf("%s (%s): no metric of the expression has label %s", g.keyword, strings.Join(g.labels, ", "), l))
				}
				continue
			}
			for i, sel := range p.selectors {
				if labels, ok := resolved[i]; ok && sel.at > g.from && sel.at < g.to && !labels[l] {
					errs = append(errs, fmt.Errorf("%s (%s): %s has no label %s (it has %s)", g.keyword, strings.Join(g.labels, ", "), sel.name, l, keys(labels)))
				}
			}
		}
	}
	return p.outputLabels(resolved), errs
}

// checkLabelValue checks a matcher's value against the values the code
// produces for the label (none known: any value). An equality must name
// one of them; a regular expression must match at least one. Values with
// a Grafana variable are not checked.
func checkLabelValue(values []string, m promMatcher) error {
	if len(values) == 0 || strings.Contains(m.value, "$") {
		return nil
	}
	switch m.op {
	case "=", "!=":
		if !slices.Contains(values, m.value) {
			return fmt.Errorf("%s%s%q: the manager never sets %s to %q (it sets %s)", m.label, m.op, m.value, m.label, m.value, strings.Join(values, ", "))
		}
	default:
		re, err := regexp.Compile("^(?:" + m.value + ")$")
		if err != nil {
			return fmt.Errorf("%s%s%q: %w", m.label, m.op, m.value, err)
		}
		if !slices.ContainsFunc(values, re.MatchString) {
			return fmt.Errorf("%s%s%q matches none of the values the manager sets (%s)", m.label, m.op, m.value, strings.Join(values, ", "))
		}
	}
	return nil
}

// outputLabels are the labels of the expression's result, as far as a
// legend or an alert's annotations can use them: the labels of its by
// clauses if it has any, none if it aggregates without them, else its
// selectors' labels (less those of without clauses).
func (p *promExpr) outputLabels(resolved map[int]map[string]bool) map[string]bool {
	out := map[string]bool{}
	for l := range p.created {
		out[l] = true
	}
	by := false
	for _, g := range p.groupings {
		if g.keyword == "by" {
			by = true
			for _, l := range g.labels {
				out[l] = true
			}
		}
	}
	if by || p.aggregates && !slices.ContainsFunc(p.groupings, func(g promGrouping) bool { return g.keyword == "without" }) {
		if p.funcs["histogram_quantile"] {
			delete(out, "le")
		}
		return out
	}
	for _, labels := range resolved {
		for l := range labels {
			out[l] = true
		}
	}
	for l := range targetLabels {
		out[l] = true
	}
	for _, g := range p.groupings {
		if g.keyword == "without" {
			for _, l := range g.labels {
				delete(out, l)
			}
		}
	}
	return out
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// TestPromQLReader: the reader refuses what it is there to catch.
func TestPromQLReader(t *testing.T) {
	ms := metricSet{
		"capwright_resource_info": {typ: "gauge", labels: setOf("kind", "name", "namespace", "ready"),
			values: map[string][]string{"ready": {"True", "False", "Unknown"}, "kind": {"CoreProvider", "Tenant"}}},
		"capwright_reconcile_duration_seconds": {typ: "histogram", labels: setOf("kind", "name", "namespace")},
	}
	good := map[string][]string{
		`capwright_resource_info{kind=~".+Provider", ready!="True"}`:                                                        {"instance", "job", "kind", "name", "namespace", "ready"},
		`histogram_quantile(0.99, sum by (kind, le) (rate(capwright_reconcile_duration_seconds_bucket[$__rate_interval])))`: {"kind"},
		`sum(rate(capwright_reconcile_duration_seconds_count[5m])) by (kind) > 0`:                                           {"kind"},
		`count(capwright_resource_info{ready="False"}) or vector(0)`:                                                        {},
		`max by (kind) (capwright_resource_info offset 5m) == bool 1`:                                                       {"kind"},
		`-sum without (name) (capwright_resource_info) * on (kind) group_left capwright_resource_info`:                      {"instance", "job", "kind", "namespace", "ready"},
		`label_replace(capwright_resource_info, "object", "$1", "name", "(.*)")`:                                            {"instance", "job", "kind", "name", "namespace", "object", "ready"},
		`max_over_time(capwright_resource_info[1h:5m])`:                                                                     {"instance", "job", "kind", "name", "namespace", "ready"},
	}
	for expr, want := range good {
		out, errs := checkPromQL(expr, ms)
		if len(errs) > 0 {
			t.Errorf("%s: %v", expr, errs)
		}
		if got := keys(out); got != strings.Join(want, ", ") {
			t.Errorf("%s: result labels %s, want %s", expr, got, strings.Join(want, ", "))
		}
	}
	for _, expr := range []string{
		``, `capwright_resource_info{`, `sum(capwright_resource_info))`, `capwright_resource_info{kind="A"`,
		`capwright_resource_info{kind}`, `capwright_resource_info{kind="Tenant",,}`, `sum capwright_resource_info`,
		`rate(capwright_reconcile_duration_seconds_count[5x])`, `capwright_resource_info +`, `* capwright_resource_info`,
		`capwright_resource_info capwright_resource_info`, `sumx(capwright_resource_info)`, `capwright_resource_info{kind="$kind"} $x`,
		`capwright_resource_info by (kind)`, `capwright_resource_info{kind="it's`,
		// metrics, labels and values the code does not produce
		`capwright_resource_infos`, `capwright_reconcile_duration_seconds`, `capwright_resource_info{phase="Ready"}`,
		`capwright_resource_info{ready="false"}`, `capwright_resource_info{kind=~"Provider"}`, `sum by (phase) (capwright_resource_info)`,
		`histogram_quantile(0.5, sum by (le) (rate(capwright_reconcile_duration_seconds_sum[5m])))`,
		`capwright_resource_info * on (phase) capwright_resource_info`, `other_metric`,
	} {
		if _, errs := checkPromQL(expr, ms); len(errs) == 0 {
			t.Errorf("%q was accepted", expr)
		}
	}
}
