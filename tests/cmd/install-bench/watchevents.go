package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// showWatchEvents prints, for each upgrade, the watch events the API
// server sent per resource and their bytes (-watch-events): what a
// watching controller costs the plane, by kind.
var showWatchEvents bool

// watchTotals are the API server's apiserver_watch_events_total and the
// sum of apiserver_watch_events_sizes, by group/resource.
type watchTotals struct{ events, bytes map[string]float64 }

// scrapeWatchEvents reads the API server's watch event counters.
func scrapeWatchEvents(ctx context.Context, cfg *rest.Config) (watchTotals, error) {
	out := watchTotals{events: map[string]float64{}, bytes: map[string]float64{}}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return out, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return out, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return out, err
	}
	key := func(labels map[string]string) string {
		r := labels["resource"]
		if r == "" {
			r = labels["kind"]
		}
		if g := labels["group"]; g != "" {
			return r + "." + g
		}
		return r
	}
	for _, m := range families["apiserver_watch_events_total"].GetMetric() {
		out.events[key(labelMap(m.GetLabel()))] += m.GetCounter().GetValue()
	}
	for _, m := range families["apiserver_watch_events_sizes"].GetMetric() {
		out.bytes[key(labelMap(m.GetLabel()))] += m.GetHistogram().GetSampleSum()
	}
	return out, nil
}

func labelMap[T interface {
	GetName() string
	GetValue() string
}](pairs []T) map[string]string {
	m := map[string]string{}
	for _, p := range pairs {
		m[p.GetName()] = p.GetValue()
	}
	return m
}

// printWatchEvents prints what changed between two scrapes, most bytes
// first.
func printWatchEvents(system string, before, after watchTotals) {
	type row struct {
		key           string
		events, bytes float64
	}
	var rows []row
	var events, bytes float64
	for k, v := range after.events {
		r := row{k, v - before.events[k], after.bytes[k] - before.bytes[k]}
		if r.events > 0 {
			rows = append(rows, r)
			events += r.events
			bytes += r.bytes
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.bytes - a.bytes) })
	fmt.Printf("  %s: watch events sent during the upgrade: %.0f, %.1f MiB;", system, events, bytes/(1<<20))
	for i, r := range rows {
		if i == 8 {
			break
		}
		fmt.Printf(" %s %.0f (%.1f MiB);", r.key, r.events, r.bytes/(1<<20))
	}
	fmt.Println()
}
