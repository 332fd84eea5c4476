package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capwright/capwright/internal/render"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{
		"--log-level=debug", "--log-encoding=console",
		"--kube-api-qps=20", "--kube-api-burst=40",
		"--enable-leader-election", "--leader-election-lease-duration=20s",
		"--metrics-addr=127.0.0.1:8080", "--health-addr=:9441", "--events-addr=http://nc/",
		"--registry-mirror=registry.k8s.io=mirror.example.com/k8s", "--registry-mirror=ghcr.io=mirror.example.com/ghcr",
		"--insecure-registry=mirror.example.com:5000", "--concurrent=8", "--resync-interval=1m",
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.log.LogLevel != "debug" || o.log.LogEncoding != "console" {
		t.Errorf("log options %+v", o.log)
	}
	if o.client.QPS != 20 || o.client.Burst != 40 {
		t.Errorf("client options %+v", o.client)
	}
	if !o.leaderElection.Enable || o.leaderElection.LeaseDuration != 20*time.Second || !o.leaderElection.ReleaseOnCancel {
		t.Errorf("leader election %+v: want enabled, 20s lease, released on cancel by default", o.leaderElection)
	}
	if o.metricsAddr != "127.0.0.1:8080" || o.healthAddr != ":9441" || o.eventsAddr != "http://nc/" || o.concurrent != 8 || o.resync != time.Minute {
		t.Errorf("options %+v", o)
	}
	if len(o.mirrors) != 2 || len(o.insecure) != 1 {
		t.Errorf("mirrors %q, insecure %q", o.mirrors, o.insecure)
	}

	defaults, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if defaults.healthAddr != ":9440" || defaults.metricsAddr != ":8080" || defaults.log.LogLevel != "info" || defaults.leaderElection.Enable {
		t.Errorf("defaults %+v", defaults)
	}
	if defaults.sharding != (render.Sharding{}) {
		t.Errorf("Flux sharding is %s by default, want off", defaults.sharding)
	}
	for arg, want := range map[string]render.Sharding{
		"--flux-sharding=off":          {},
		"--flux-sharding=2":            {Shards: 2, TenantLabel: true},
		"--flux-sharding=tenant-label": {TenantLabel: true},
	} {
		o, err := parseFlags([]string{arg})
		if err != nil {
			t.Errorf("%s: %v", arg, err)
		} else if o.sharding != want {
			t.Errorf("%s: sharding %+v, want %+v", arg, o.sharding, want)
		}
	}
}

func TestParseFlagsRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"--feature-gates=NoSuchGate=true"},
		{"--leader-elect"}, // controller-runtime's name; Flux's is --enable-leader-election
		{"stray"},
		{"--tenant-forbidden-namespaces=flux-system,Vault"},
		{"--flux-sharding=0"},
		{"--flux-sharding=shard1"},
	} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), strings.TrimLeft(strings.SplitN(args[0], "=", 2)[0], "-")) {
			t.Errorf("parseFlags(%q) = %v, want an error naming it", args, err)
		}
	}
}

// The namespaces closed to Tenants: the flag's (flux-system and
// cert-manager by default), replaced when it is set, and always the
// manager's own.
func TestTenantForbiddenNamespaces(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		runtime string
		want    []string
	}{
		{"default, in the cluster", nil, "capwright-system", []string{"capwright-system", "cert-manager", "flux-system"}},
		{"default, outside the cluster", nil, "", []string{"cert-manager", "flux-system"}},
		{"one more", []string{"--tenant-forbidden-namespaces=flux-system,cert-manager,vault"}, "capwright-system",
			[]string{"capwright-system", "cert-manager", "flux-system", "vault"}},
		{"repeated", []string{"--tenant-forbidden-namespaces=flux-system", "--tenant-forbidden-namespaces=vault"}, "",
			[]string{"flux-system", "vault"}},
		{"emptied: the manager's own stays", []string{"--tenant-forbidden-namespaces="}, "capwright-system", []string{"capwright-system"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			got := o.tenantForbiddenNamespaces(tt.runtime)
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, tt.want) {
				t.Errorf("forbidden %v, want %v", names, tt.want)
			}
			if tt.runtime != "" && !strings.Contains(got[tt.runtime], "manager's own namespace") {
				t.Errorf("%s: why %q does not say it is the manager's own namespace", tt.runtime, got[tt.runtime])
			}
		})
	}
}
