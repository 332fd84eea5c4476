package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

func TestTimelineRecordsEachStepOncePerGeneration(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	tl := NewTimelines()
	p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{UID: "u1", Generation: 1}, Spec: v1alpha1.ProviderSpec{Version: "v1.13.6"}}
	t0 := time.Unix(1000, 0)
	tl.seen(p, t0)
	tl.mark(p, stepPreflight, t0.Add(200*time.Millisecond))
	tl.seen(p, t0.Add(time.Second)) // a later reconcile of the same generation
	tl.mark(p, stepPreflight, t0.Add(2*time.Second))
	tl.mark(p, stepWritten, t0.Add(300*time.Millisecond))
	tl.finish(p, "CoreProvider", logger, t0.Add(4*time.Second))
	tl.finish(p, "CoreProvider", logger, t0.Add(5*time.Second)) // a resync: Ready again
	if len(lines) != 1 {
		t.Fatalf("logged %d timelines, want 1: %q", len(lines), lines)
	}
	want := `"version"="v1.13.6" "generation"=1 "preflight"=0.2 "written"=0.3 "ready"=4`
	if !strings.HasSuffix(lines[0], want) {
		t.Errorf("timeline = %s\nwant       %s", lines[0], want)
	}

	// An upgrade is a new generation, timed from when it is first seen.
	p.Generation, p.Spec.Version = 2, "v1.14.2"
	tl.seen(p, t0.Add(time.Minute))
	tl.finish(p, "CoreProvider", logger, t0.Add(time.Minute+1500*time.Millisecond))
	if len(lines) != 2 || !strings.HasSuffix(lines[1], `"version"="v1.14.2" "generation"=2 "ready"=1.5`) {
		t.Errorf("upgrade timeline = %q", lines[1:])
	}

	// After a restart, a provider already installed has nothing to time.
	restarted := NewTimelines()
	p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.InstalledCondition, Status: metav1.ConditionTrue, ObservedGeneration: 2}}
	restarted.seen(p, t0.Add(time.Hour))
	restarted.finish(p, "CoreProvider", logger, t0.Add(time.Hour+time.Second))
	if len(lines) != 2 {
		t.Errorf("a restart logged a timeline for an installed provider: %q", lines[2:])
	}
}
