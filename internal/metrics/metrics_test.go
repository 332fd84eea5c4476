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

func TestTenantRolloutSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRecorder(reg)
	r.TenantRollout("", "acme", []RolloutWave{{Name: "canary", Total: 2, Updated: 1}, {Name: "late", Total: 4}})
	if n := testutil.CollectAndCount(r.waves); n != 6 {
		t.Errorf("%d rollout series, want 3 per wave", n)
	}
	// The waves changed: the old ones go.
	r.TenantRollout("", "acme", []RolloutWave{{Name: "all", Total: 6, Updated: 6}})
	want := `
# HELP capwright_tenant_rollout_clusters For a tenant with a rollout, the clusters of each wave (state total), those healthy on the target revision (updated) and those failed on it (failed).
# TYPE capwright_tenant_rollout_clusters gauge
capwright_tenant_rollout_clusters{name="acme",namespace="",state="failed",wave="all"} 0
capwright_tenant_rollout_clusters{name="acme",namespace="",state="total",wave="all"} 6
capwright_tenant_rollout_clusters{name="acme",namespace="",state="updated",wave="all"} 6
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "capwright_tenant_rollout_clusters"); err != nil {
		t.Error(err)
	}
	r.TenantRolloutStopped("", "acme")
	if v := testutil.ToFloat64(r.rollback.WithLabelValues("acme", "")); v != 1 {
		t.Errorf("rollbacks = %v", v)
	}
	r.Forget("Tenant", "", "acme")
	if n := testutil.CollectAndCount(r.waves) + testutil.CollectAndCount(r.rollback); n != 0 {
		t.Errorf("%d rollout series left after Forget", n)
	}
}

func TestProviderUpgradeSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRecorder(reg)
	st := ObjectState{Kind: "CoreProvider", Namespace: "capi", Name: "cluster-api", Ready: "True", Version: "v1.13.6", Upgrade: "v1.14.1"}
	r.ObjectState(st)
	st.Upgrade = "v1.14.2"
	r.ObjectState(st)
	want := `# HELP capwright_provider_upgrade_available 1 when the provider's source offers a newer version that can be installed now; version is the newest such version.
# TYPE capwright_provider_upgrade_available gauge
capwright_provider_upgrade_available{kind="CoreProvider",name="cluster-api",namespace="capi",version="v1.14.2"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "capwright_provider_upgrade_available"); err != nil {
		t.Error(err)
	}
	st.Upgrade = ""
	r.ObjectState(st)
	if n := testutil.CollectAndCount(r.upgrade); n != 0 {
		t.Errorf("%d series once nothing is available, want 0", n)
	}
	st.Upgrade = "v1.14.2"
	r.ObjectState(st)
	r.Forget(st.Kind, st.Namespace, st.Name)
	if n := testutil.CollectAndCount(r.upgrade); n != 0 {
		t.Errorf("%d series after Forget, want 0", n)
	}
}
