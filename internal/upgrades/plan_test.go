package upgrades

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl"
)

func metadata(t *testing.T, series ...string) *clusterctl.Metadata {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n")
	for _, s := range series { // "1.14=v1beta2"
		mm, contract, _ := strings.Cut(s, "=")
		major, minor, _ := strings.Cut(mm, ".")
		b.WriteString("- major: " + major + "\n  minor: " + minor + "\n  contract: " + contract + "\n")
	}
	m, err := clusterctl.ParseMetadata([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func find(t *testing.T, p Plan, name string) Result {
	t.Helper()
	for _, r := range p.Providers {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no result for %s in %+v", name, p)
	return Result{}
}

func TestComputeFollowsClusterctlRules(t *testing.T) {
	coreMeta := metadata(t, "1.13=v1beta2", "1.14=v1beta2", "1.15=v1beta3")
	infraMeta := metadata(t, "2.7=v1beta1", "2.8=v1beta2", "3.0=v1beta3", "4.0=v1alpha9")
	plan := Compute([]Provider{
		{Kind: "InfrastructureProvider", Namespace: "infra", Name: "aws", Type: "infrastructure", Version: "v2.7.1",
			Versions: []string{"v2.7.0", "v2.7.1", "v2.7.3", "v2.8.0", "v2.8.2", "v2.8.3-rc.0", "v3.0.0", "v4.0.0", "latest", "sha256-abc.sig"}, Metadata: infraMeta},
		{Kind: "CoreProvider", Namespace: "capi", Name: "cluster-api", Type: "core", Version: "v1.13.6",
			Versions: []string{"v1.13.6", "v1.14.0", "v1.14.2", "v1.15.0"}, Metadata: coreMeta},
		{Kind: "BootstrapProvider", Namespace: "kb", Name: "kubeadm", Type: "bootstrap", Version: "v1.14.2",
			Versions: []string{"v1.14.2"}, Metadata: coreMeta},
	})
	if plan.Core != "capi/cluster-api" || plan.CoreContract != "v1beta2" {
		t.Fatalf("core %q contract %q", plan.Core, plan.CoreContract)
	}
	if plan.Providers[0].Name != "cluster-api" || plan.Providers[1].Name != "kubeadm" || plan.Providers[2].Name != "aws" {
		t.Fatalf("order: %+v", plan.Providers)
	}

	core := find(t, plan, "cluster-api")
	if core.Next != "v1.14.2" || len(core.Candidates) != 2 {
		t.Fatalf("core: %+v", core)
	}
	// v1.15.0 changes the contract; kubeadm has no v1beta3 release.
	if c := core.Candidates[1]; c.Version != "v1.15.0" || c.Blocked != BlockedProvidersBehind || !strings.Contains(c.Message, "BootstrapProvider kb/kubeadm") {
		t.Errorf("core v1.15.0: %+v", c)
	}

	aws := find(t, plan, "aws")
	want := []struct{ version, contract, blocked string }{
		{"v2.7.3", "v1beta1", ""},
		{"v2.8.2", "v1beta2", ""},
		{"v3.0.0", "v1beta3", BlockedCoreFirst},
		{"v4.0.0", "v1alpha9", BlockedContract},
	}
	if len(aws.Candidates) != len(want) {
		t.Fatalf("aws candidates: %+v", aws.Candidates)
	}
	for i, w := range want {
		c := aws.Candidates[i]
		if c.Version != w.version || c.Contract != w.contract || c.Blocked != w.blocked {
			t.Errorf("aws candidate %d = %+v, want %+v", i, c, w)
		}
	}
	if aws.Next != "v2.8.2" || aws.Contract != "v1beta1" {
		t.Errorf("aws next %q contract %q", aws.Next, aws.Contract)
	}
	if !strings.Contains(aws.Candidates[2].Message, "upgrade the core provider to v1.15.0 (contract v1beta3) first") {
		t.Errorf("core-first message: %s", aws.Candidates[2].Message)
	}

	kubeadm := find(t, plan, "kubeadm")
	if kubeadm.Upgradable() || len(kubeadm.Candidates) != 0 {
		t.Errorf("kubeadm: %+v", kubeadm)
	}
}

func TestComputeContractChangeWhenEveryoneCanFollow(t *testing.T) {
	meta := metadata(t, "1.14=v1beta2", "1.15=v1beta3")
	plan := Compute([]Provider{
		{Kind: "CoreProvider", Name: "cluster-api", Type: "core", Version: "v1.14.2", Versions: []string{"v1.15.1"}, Metadata: meta},
		{Kind: "BootstrapProvider", Name: "kubeadm", Type: "bootstrap", Version: "v1.14.2", Versions: []string{"v1.15.1"}, Metadata: meta},
	})
	core := find(t, plan, "cluster-api")
	if core.Next != "v1.15.1" {
		t.Errorf("core: %+v", core)
	}
	kubeadm := find(t, plan, "kubeadm")
	if kubeadm.Next != "" || kubeadm.Candidates[0].Blocked != BlockedCoreFirst {
		t.Errorf("kubeadm: %+v", kubeadm)
	}
}

func TestComputeErrors(t *testing.T) {
	meta := metadata(t, "1.14=v1beta2")
	plan := Compute([]Provider{
		{Kind: "CoreProvider", Name: "cluster-api", Type: "core", Version: "v1.14.2", Error: "registry unreachable"},
		{Kind: "InfrastructureProvider", Name: "docker", Type: "infrastructure", Version: "v1.14.2", Versions: []string{"v1.14.3"}, Metadata: meta},
		{Kind: "InfrastructureProvider", Name: "old", Type: "infrastructure", Version: "v1.13.0", Versions: []string{"v1.14.3"}, Metadata: meta, Source: "oci://r/x"},
		{Kind: "InfrastructureProvider", Name: "gap", Type: "infrastructure", Version: "v1.14.0", Versions: []string{"v1.16.0"}, Metadata: meta},
	})
	if r := find(t, plan, "cluster-api"); r.Error != "registry unreachable" {
		t.Errorf("core: %+v", r)
	}
	if r := find(t, plan, "docker"); r.Next != "" || r.Candidates[0].Blocked != BlockedNoCore {
		t.Errorf("docker: %+v", r)
	}
	if r := find(t, plan, "old"); !strings.Contains(r.Error, "no release series v1.13") {
		t.Errorf("old: %+v", r)
	}
	if r := find(t, plan, "gap"); r.Candidates[0].Blocked != BlockedSeriesUnknown {
		t.Errorf("gap: %+v", r)
	}
}

func TestNewest(t *testing.T) {
	if got := Newest([]string{"v1.2.0", "latest", "v1.10.0-rc.1", "v1.9.9", "1.99.0"}); got != "v1.10.0-rc.1" {
		t.Errorf("Newest = %q", got)
	}
	if got := Newest([]string{"latest"}); got != "" {
		t.Errorf("Newest = %q", got)
	}
}
