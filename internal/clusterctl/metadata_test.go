package clusterctl_test

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

func TestContractFromRealMetadata(t *testing.T) {
	tests := []struct {
		fixture, version, want string
	}{
		{clusterctltest.Current, "v1.14.2", "v1beta2"},
		{clusterctltest.Current, "v1.14.0", "v1beta2"},
		{clusterctltest.Current, "v1.10.4", "v1beta1"},
		{clusterctltest.Previous, "v1.13.6", "v1beta2"},
		{clusterctltest.Previous, "1.13.6", "v1beta2"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.version, func(t *testing.T) {
			md, err := clusterctl.ParseMetadata(clusterctltest.Read(t, tt.fixture, "metadata.yaml"))
			if err != nil {
				t.Fatalf("ParseMetadata: %v", err)
			}
			got, err := md.ContractFor(tt.version)
			if err != nil {
				t.Fatalf("ContractFor(%s): %v", tt.version, err)
			}
			if got != tt.want {
				t.Errorf("ContractFor(%s) = %s, want %s", tt.version, got, tt.want)
			}
		})
	}
}

func TestContractForUnknownSeries(t *testing.T) {
	md, err := clusterctl.ParseMetadata(clusterctltest.Read(t, clusterctltest.Previous, "metadata.yaml"))
	if err != nil {
		t.Fatalf("ParseMetadata: %v", err)
	}
	_, err = md.ContractFor("v1.14.2")
	if err == nil {
		t.Fatal("v1.13.6's metadata.yaml has no 1.14 series, want an error")
	}
	for _, want := range []string{"v1.14.2", "v1.13 (v1beta2)", "v1.0 (v1beta1)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := md.ContractFor("latest"); err == nil || !strings.Contains(err.Error(), `"latest"`) {
		t.Errorf("ContractFor(latest) error = %v, want one naming the version", err)
	}
}

func TestParseMetadataErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"not yaml", "releaseSeries: [", "not valid YAML"},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\n", `kind "ConfigMap"`},
		{"no series", "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\n", "no releaseSeries"},
		{"no contract", "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- {major: 1, minor: 2}\n", "v1.2) has no contract"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clusterctl.ParseMetadata([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseMetadata error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestCheckContractCompatible(t *testing.T) {
	tests := []struct {
		core, provider string
		ok             bool
	}{
		{"v1beta2", "v1beta2", true},
		{"v1beta1", "v1beta1", true},
		{"v1beta2", "v1beta1", true},
		{"v1beta1", "v1beta2", false},
		{"v1beta2", "v1alpha4", false},
		{"v1beta2", "", false},
		{"", "v1beta2", false},
	}
	for _, tt := range tests {
		t.Run(tt.core+"/"+tt.provider, func(t *testing.T) {
			err := clusterctl.CheckContractCompatible(tt.core, tt.provider)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckContractCompatible(%q, %q) = %v, want ok=%v", tt.core, tt.provider, err, tt.ok)
			}
			if err != nil && tt.core != "" && tt.provider != "" &&
				(!strings.Contains(err.Error(), tt.core) || !strings.Contains(err.Error(), tt.provider)) {
				t.Errorf("error %q should name both contracts", err)
			}
		})
	}
}
