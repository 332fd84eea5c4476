package health

import (
	"slices"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestObserve(t *testing.T) {
	repo := ObserveOCIRepository(ociRepository(t, repoReady))
	if repo.Kind != "OCIRepository" || repo.Namespace != "capi-system" || repo.Name != "core-cluster-api" ||
		repo.Generation != 3 || repo.ObservedGeneration != 3 || repo.Revision != newDigest || len(repo.Conditions) != 2 {
		t.Errorf("OCIRepository observation = %+v", repo)
	}

	ks := ObserveKustomization(kustomization(t, ksUpgrading))
	if ks.Kind != "Kustomization" || ks.Revision != oldDigest || ks.LastAttemptedRevision != newDigest || ks.Generation != 2 {
		t.Errorf("Kustomization observation = %+v", ks)
	}

	hr := helmRelease(t, hrRemediated)
	first := hr.Status.History[0].Version
	obs := ObserveHelmRelease(hr)
	if obs.Kind != "HelmRelease" || obs.Revision != oldDigest || obs.LastAttemptedRevision != newDigest {
		t.Errorf("HelmRelease observation = %+v, want the deployed (rolled back) release's digest as revision", obs)
	}
	if hr.Status.History[0].Version != first {
		t.Errorf("observing reordered the HelmRelease's history")
	}
	if obs := ObserveHelmRelease(helmRelease(t, hrReleased)); obs.Revision != newDigest {
		t.Errorf("released HelmRelease revision = %q", obs.Revision)
	}
	if obs := ObserveHelmRelease(helmRelease(t, "status: {}")); obs.Revision != "" || obs.LastAttemptedRevision != "" {
		t.Errorf("new HelmRelease observation = %+v", obs)
	}

	// The observation does not share the object's conditions.
	k := kustomization(t, ksInstalled)
	obs = ObserveKustomization(k)
	k.Status.Conditions[0].Status = metav1.ConditionFalse
	if obs.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("the observation changed with the object")
	}
}

func TestReadiness(t *testing.T) {
	cond := func(typ, status, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: reason + " message", ObservedGeneration: gen}
	}
	obs := func(gen, observed int64, conds ...metav1.Condition) Observation {
		return Observation{Kind: "Kustomization", Namespace: "ns", Name: "ks", Generation: gen, ObservedGeneration: observed, Conditions: conds}
	}
	tests := []struct {
		name    string
		obs     Observation
		status  metav1.ConditionStatus
		reason  string
		current bool
	}{
		{"ready", obs(2, 2, cond("Ready", "True", "ReconciliationSucceeded", 2)), "True", "ReconciliationSucceeded", true},
		{"ready for an older generation", obs(2, 1, cond("Ready", "True", "ReconciliationSucceeded", 1)), "Unknown", "Progressing", false},
		{"Ready says generation 2 but status lags", obs(2, 1, cond("Ready", "True", "ReconciliationSucceeded", 2)), "Unknown", "Progressing", true},
		{"failed for the current generation while observedGeneration lags", obs(2, 1, cond("Ready", "False", "BuildFailed", 2)), "False", "BuildFailed", true},
		{"reconciling", obs(2, 2, cond("Ready", "True", "ReconciliationSucceeded", 2), cond("Reconciling", "True", "Progressing", 2)), "Unknown", "Progressing", true},
		{"stalled", obs(2, 2, cond("Ready", "False", "InvalidCELExpression", 2), cond("Stalled", "True", "InvalidCELExpression", 2)), "False", "InvalidCELExpression", true},
		{"a stale Stalled is ignored", obs(2, 1, cond("Stalled", "True", "AccessDenied", 1), cond("Ready", "Unknown", "Progressing", 2)), "Unknown", "Progressing", true},
		{"no conditions", obs(1, 0), "Unknown", "Progressing", false},
		{"missing", Observation{Kind: "Kustomization", Missing: true}, "Unknown", "NotFound", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.obs.readiness()
			if r.status != tt.status || r.reason != tt.reason || r.current != tt.current {
				t.Errorf("readiness = %+v, want %s/%s current=%v", r, tt.status, tt.reason, tt.current)
			}
		})
	}
}

func TestSameRevision(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"v1.14.2@" + newDigest, newDigest, true},
		{newDigest, newDigest, true},
		{"v1.14.2@" + newDigest, "v1.14.2@" + oldDigest, false},
		{"", "", false},
		{newDigest, "", false},
	}
	for _, tt := range tests {
		if got := sameRevision(tt.a, tt.b); got != tt.want {
			t.Errorf("sameRevision(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

// TestFinishing: the moment between kustomize-controller's conditions
// write and its status write at the end of a reconcile of a new revision
// is told apart from the states around it.
func TestFinishing(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 29, 47, 0, time.UTC)
	cond := func(typ string, status metav1.ConditionStatus, ago time.Duration) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	between := Observation{Kind: "Kustomization", Namespace: "capi-system", Name: "core-cluster-api", Generation: 2, ObservedGeneration: 2,
		Revision: oldDigest, LastAttemptedRevision: newDigest,
		Conditions: []metav1.Condition{cond("Ready", metav1.ConditionTrue, 0), cond("Healthy", metav1.ConditionTrue, 0)}}
	if !between.Finishing(now) {
		t.Error("Ready at the new revision before lastAppliedRevision is written: not Finishing")
	}
	with := func(change func(*Observation)) Observation {
		o := between
		o.Conditions = slices.Clone(between.Conditions)
		change(&o)
		return o
	}
	if !with(func(o *Observation) { o.Revision = "" }).Finishing(now) {
		t.Error("a first install between the two writes: not Finishing")
	}
	for name, o := range map[string]Observation{
		"applied": with(func(o *Observation) { o.Revision = newDigest }),
		"still applying": with(func(o *Observation) {
			o.Conditions = append(o.Conditions, cond("Reconciling", metav1.ConditionTrue, 0))
		}),
		"not ready": with(func(o *Observation) { o.Conditions = []metav1.Condition{cond("Ready", metav1.ConditionFalse, 0)} }),
		"ready long ago": with(func(o *Observation) {
			o.Conditions = []metav1.Condition{cond("Ready", metav1.ConditionTrue, time.Minute)}
		}),
		"a HelmRelease": with(func(o *Observation) { o.Kind = "HelmRelease" }),
		"missing":       {Kind: "Kustomization", Missing: true},
	} {
		if o.Finishing(now) {
			t.Errorf("%s: Finishing", name)
		}
	}
}

func TestObserveAnyReadObject(t *testing.T) {
	var none *kustomizev1.Kustomization
	for _, tt := range []struct {
		name    string
		obj     any
		missing bool
	}{
		{"not found", nil, true},
		{"a typed nil", none, true},
		{"a Kustomization", &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, false},
		{"an OCIRepository", &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, false},
		{"a HelmRelease", &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, false},
		{"an ExternalArtifact", &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Observe(tt.obj, "Kind", "ns", "name")
			if o.Missing != tt.missing || (!tt.missing && o.Generation != 3) || (tt.missing && (o.Kind != "Kind" || o.Namespace != "ns" || o.Name != "name")) {
				t.Errorf("Observe = %+v", o)
			}
		})
	}
}
