package providers

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
)

// scrape reads the manager's metrics endpoint.
func scrape(t *testing.T, ctx context.Context) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, manager.MetricsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", manager.MetricsURL(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", manager.MetricsURL(), err)
	}
	return families
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// resourceInfo is the capwright_resource_info series of one object, nil
// when there is none.
func resourceInfo(families map[string]*dto.MetricFamily, kind, namespace, name string) map[string]string {
	for _, m := range families["capwright_resource_info"].GetMetric() {
		l := labelsOf(m)
		if l["kind"] == kind && l["namespace"] == namespace && l["name"] == name && m.GetGauge().GetValue() == 1 {
			return l
		}
	}
	return nil
}

// waitResourceInfo waits until the object's info series satisfies ok.
func waitResourceInfo(t *testing.T, ctx context.Context, kind, namespace, name string, ok func(map[string]string) bool) map[string]string {
	t.Helper()
	var last map[string]string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = resourceInfo(scrape(t, ctx), kind, namespace, name)
		return ok(last), nil
	})
	if err != nil {
		t.Fatalf("capwright_resource_info of %s %s/%s: last %v", kind, namespace, name, last)
	}
	return last
}

// reconcileDurations logs the percentiles of every reconcile the manager
// timed so far, per kind, from capwright_reconcile_duration_seconds, and
// checks kind has some.
func reconcileDurations(t *testing.T, ctx context.Context, kind string) {
	t.Helper()
	type agg struct {
		count   uint64
		buckets map[float64]uint64
	}
	perKind := map[string]*agg{}
	for _, m := range scrape(t, ctx)["capwright_reconcile_duration_seconds"].GetMetric() {
		k := labelsOf(m)["kind"]
		a := perKind[k]
		if a == nil {
			a = &agg{buckets: map[float64]uint64{}}
			perKind[k] = a
		}
		a.count += m.GetHistogram().GetSampleCount()
		for _, b := range m.GetHistogram().GetBucket() {
			a.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	if perKind[kind] == nil || perKind[kind].count == 0 {
		t.Fatalf("no capwright_reconcile_duration_seconds for %s: %v", kind, perKind)
	}
	kinds := make([]string, 0, len(perKind))
	for k := range perKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		a := perKind[k]
		bounds := make([]float64, 0, len(a.buckets))
		for b := range a.buckets {
			bounds = append(bounds, b)
		}
		sort.Float64s(bounds)
		q := func(p float64) string {
			for _, b := range bounds {
				if float64(a.buckets[b]) >= p*float64(a.count) {
					return fmt.Sprintf("≤%.3gs", b)
				}
			}
			return "+Inf"
		}
		t.Logf("reconcile durations %s: %d reconciles, p50 %s, p90 %s, p99 %s", k, a.count, q(0.5), q(0.9), q(0.99))
	}
}

// installedMetrics checks what the metrics say of the installed providers.
func installedMetrics(t *testing.T, ctx context.Context, version string) {
	info := waitResourceInfo(t, ctx, "CoreProvider", "capi-system", "cluster-api", func(l map[string]string) bool {
		return l != nil && l["ready"] == "True" && l["version"] == version
	})
	if info["suspended"] != "false" || !strings.HasPrefix(info["revision"], version+"@sha256:") || info["reason"] != "Succeeded" {
		t.Errorf("capwright_resource_info of the core provider: %v", info)
	}
	reconcileDurations(t, ctx, "CoreProvider")
}
