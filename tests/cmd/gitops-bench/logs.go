package main

import (
	"encoding/json"
	"os"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Where the upgrade's time went, read after it from the controllers' own
// logs (JSON lines, millisecond times) rather than by polling more objects
// while it runs.

// logLine is one line of a controller's JSON log.
type logLine struct {
	TS        time.Time `json:"ts"`
	Msg       string    `json:"msg"`
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	Revision  string    `json:"revision"`
	// Controller is the kind of a Capwright controller's line.
	Controller string `json:"controller"`
	fields     map[string]any
}

// readLog reads the lines of a plane component's log between from and to.
func readLog(e *env, component string, from, to time.Time) []logLine {
	data, err := os.ReadFile(e.p.LogPath(component))
	if err != nil {
		return nil
	}
	var out []logLine
	for _, text := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(text, "{") {
			continue
		}
		var l logLine
		if json.Unmarshal([]byte(text), &l) != nil || l.TS.Before(from) || l.TS.After(to) {
			continue
		}
		_ = json.Unmarshal([]byte(text), &l.fields)
		out = append(out, l)
	}
	return out
}

func since(e *env, t time.Time) float64 { return t.Sub(e.pushed).Seconds() }

// fetched is when source-controller stored the commit, after the push.
func fetched(e *env, end time.Time) step {
	for _, l := range readLog(e, "source-controller", e.pushed, end) {
		if strings.HasPrefix(l.Msg, "stored artifact for commit") && l.Namespace == "flux-system" && l.Name == "flux-system" {
			return step{Name: "commit fetched", At: since(e, l.TS)}
		}
	}
	return step{Name: "commit fetched", At: -1}
}

// kustomizationSteps are, for each Kustomization of flux-system named,
// when its server-side apply of the commit completed, how often it was put
// off before for a dependency not Ready at the commit, and how long the
// reconcile that applied it took (apply and health check), if it has
// finished.
func kustomizationSteps(e *env, end time.Time, names ...string) []step {
	lines := readLog(e, "kustomize-controller", e.pushed, end.Add(time.Second))
	var out []step
	for _, name := range names {
		st := step{Name: name + " applied", At: -1}
		for _, l := range lines {
			if l.Namespace != "flux-system" || l.Name != name {
				continue
			}
			switch {
			case st.At < 0 && strings.HasPrefix(l.Msg, "Dependencies do not meet ready condition"):
				st.Waits++
			case st.At < 0 && l.Msg == "server-side apply completed" && l.Revision == gitRevision(e.sha):
				st.At = since(e, l.TS)
			}
			if took, ok := finished(l); ok && st.At >= 0 && st.Took == 0 && l.Revision == gitRevision(e.sha) {
				st.Took = took
			}
		}
		out = append(out, st)
	}
	return out
}

// finished reads a "Reconciliation finished in <duration>, next run in …"
// line.
func finished(l logLine) (float64, bool) {
	rest, ok := strings.CutPrefix(l.Msg, "Reconciliation finished in ")
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSuffix(strings.Fields(rest)[0], ","))
	return d.Seconds(), err == nil
}

// providerKustomization is the reconcile of the Kustomization Capwright
// wrote for the control plane provider (in its namespace) that applied
// the upgrade: when its server-side apply completed, how long the
// reconcile took, and its health check.
func providerKustomization(e *env, end time.Time) step {
	st := step{Name: "Flux applied the provider's Kustomization", At: -1}
	for _, l := range readLog(e, "kustomize-controller", e.pushed, end.Add(time.Second)) {
		if l.Namespace != controlPlaneDeployment.Namespace {
			continue
		}
		if l.Msg == "server-side apply completed" {
			st.At = since(e, l.TS)
		}
		if took, ok := finished(l); ok {
			st.Took = took
			st.Health = healthCheck(e, l.Namespace, l.Name)
		}
	}
	return st
}

// capwrightTimeline is the manager's own account of generation gen of a
// provider kind: when it first saw it, wrote Flux's objects, saw them
// applied and healthy, and made the provider Ready ("install timeline":
// seconds since the generation was first seen, logged at Ready).
func capwrightTimeline(e *env, kind string, gen int64) []step {
	for _, l := range readLog(e, "capwright-manager", e.pushed, e.pushed.Add(10*time.Minute)) {
		if !strings.HasPrefix(l.Msg, "install timeline") || l.Controller != kind || l.fields["generation"] != float64(gen) {
			continue
		}
		at := func(key string) float64 {
			v, _ := l.fields[key].(float64)
			return v
		}
		seen := since(e, l.TS) - at("ready")
		return []step{
			{Name: "manager: " + kind + " generation seen", At: seen},
			{Name: "manager: Flux objects written", At: seen + at("written")},
			{Name: "manager: applied", At: seen + at("applied")},
			{Name: "manager: healthy", At: seen + at("healthy")},
			{Name: "manager: Ready", At: seen + at("ready")},
		}
	}
	return nil
}

// healthCheck is how long the health check of a Kustomization's last
// revision took, from its Healthy condition; 0 if unknown.
func healthCheck(e *env, namespace, name string) float64 {
	ks := &kustomizev1.Kustomization{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: namespace, Name: name}, ks); err != nil {
		return 0
	}
	h := apimeta.FindStatusCondition(ks.Status.Conditions, meta.HealthyCondition)
	if h == nil {
		return 0
	}
	d, err := time.ParseDuration(strings.TrimPrefix(h.Message, "Health check passed in "))
	if err != nil {
		return 0
	}
	return d.Seconds()
}
