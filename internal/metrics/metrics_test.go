package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestObjectStateReplacesTheObjectsSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRecorder(reg)
	r.ObjectState(ObjectState{Kind: "CoreProvider", Namespace: "capi-system", Name: "cluster-api", Ready: metav1.ConditionUnknown, Reason: "Installing"})
	r.ObjectState(ObjectState{Kind: "CoreProvider", Namespace: "capi-system", Name: "cluster-api", Ready: metav1.ConditionTrue, Reason: "Succeeded",
		Version: "v1.14.2", Revision: "v1.14.2@sha256:abc"})
	want := `
# HELP capwright_resource_info The current state of a Capwright resource: its Ready status and reason, whether it is suspended, its installed version and revision.
# TYPE capwright_resource_info gauge
capwright_resource_info{kind="CoreProvider",name="cluster-api",namespace="capi-system",ready="True",reason="Succeeded",revision="v1.14.2@sha256:abc",suspended="false",version="v1.14.2"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "capwright_resource_info"); err != nil {
		t.Error(err)
	}

	r.ReconcileDone("CoreProvider", "capi-system", "cluster-api", 30*time.Millisecond)
	r.TenantClusters("tenants", "acme", map[string]int{"Ready": 2, "Failed": 1})
	if n := testutil.CollectAndCount(r.clusters); n != 4 {
		t.Errorf("%d tenant cluster series, want one per phase (4)", n)
	}
	r.Forget("CoreProvider", "capi-system", "cluster-api")
	r.Forget("Tenant", "tenants", "acme")
	for name, c := range map[string]prometheus.Collector{"info": r.info, "duration": r.duration, "clusters": r.clusters} {
		if n := testutil.CollectAndCount(c); n != 0 {
			t.Errorf("%s: %d series left after Forget", name, n)
		}
	}
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.ReconcileDone("Tenant", "ns", "n", time.Second)
	r.ObjectState(ObjectState{Kind: "Tenant"})
	r.TenantClusters("ns", "n", nil)
	r.Forget("Tenant", "ns", "n")
}
