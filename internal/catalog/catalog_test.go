package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

func TestLocate(t *testing.T) {
	mirrors := Mirrors{
		{From: "registry.k8s.io", To: "mirror.local:5000/k8s"},
		{From: "registry.k8s.io/cluster-api/manifests", To: "mirror.local:5000/capi"},
	}
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Name: "cluster-api"}}
	tests := []struct {
		name     string
		provider v1alpha1.Provider
		opts     Options
		want     Location
		wantErr  error
	}{
		{
			name:     "core from the catalog: clusterctl's release URL",
			provider: core,
			want:     Location{Release: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml", Catalog: true},
		},
		{
			name:     "a catalog provider Cluster API does not publish as OCI artifacts",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "aws"}},
			opts:     Options{OCIArtifacts: true, Mirrors: mirrors},
			want:     Location{Release: "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml", Catalog: true},
		},
		{
			name:     "core from the proposal's OCI path once switched on",
			provider: core,
			opts:     Options{OCIArtifacts: true},
			want:     Location{OCI: "oci://registry.k8s.io/cluster-api/manifests/core-cluster-api", Catalog: true},
		},
		{
			name:     "kubeadm control plane from a mirror of the OCI path, longest mirror rule wins",
			provider: &v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm"}},
			opts:     Options{Mirrors: mirrors},
			want:     Location{OCI: "oci://mirror.local:5000/capi/control-plane-kubeadm", Catalog: true},
		},
		{
			name:     "a rule for release URLs only does not switch to OCI",
			provider: core,
			opts:     Options{Mirrors: Mirrors{{From: "registry.k8s.io", To: "https://mirror.local/k8s"}}},
			want:     Location{Release: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml", Catalog: true},
		},
		{
			name: "explicit OCI source is mirrored too",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: v1alpha1.ProviderSpec{
				Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://registry.k8s.io/capa/manifests/infrastructure-aws"}}},
			}},
			opts: Options{Mirrors: mirrors},
			want: Location{OCI: "oci://mirror.local:5000/k8s/capa/manifests/infrastructure-aws"},
		},
		{
			name: "explicit release source, as given",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "hetzner"}, Spec: v1alpha1.ProviderSpec{
				Source: &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: "https://example.com/releases/latest/infrastructure-components.yaml"}},
			}},
			opts: Options{Mirrors: mirrors, OCIArtifacts: true},
			want: Location{Release: "https://example.com/releases/latest/infrastructure-components.yaml"},
		},
		{
			name:     "a rule matches on path segments only",
			provider: core,
			opts:     Options{Mirrors: Mirrors{{From: "registry.k8s.io/cluster", To: "elsewhere"}}, OCIArtifacts: true},
			want:     Location{OCI: "oci://registry.k8s.io/cluster-api/manifests/core-cluster-api", Catalog: true},
		},
		{
			name:     "a mirror rule for a catalog provider sends it to its mirrored artifact",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "aws"}},
			opts: Options{Mirrors: append(Mirrors{
				{From: "infrastructure/aws", To: "mirror.local:5000/capi/manifests/infrastructure-aws"},
				{From: "infrastructure/azure", To: "mirror.local:5000/capi/manifests/infrastructure-azure"},
			}, mirrors...)},
			want: Location{OCI: "oci://mirror.local:5000/capi/manifests/infrastructure-aws", Catalog: true},
		},
		{
			name:     "a mirror rule for a provider comes before the catalog's OCI path and its mirror rule",
			provider: core,
			opts: Options{OCIArtifacts: true, Mirrors: append(Mirrors{
				{From: "core/cluster-api", To: "mirror.local:5000/elsewhere/core"},
			}, mirrors...)},
			want: Location{OCI: "oci://mirror.local:5000/elsewhere/core", Catalog: true},
		},
		{
			name:     "a mirror rule for a provider serves a provider the catalog does not know",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "in-house"}},
			opts:     Options{Mirrors: Mirrors{{From: "infrastructure/in-house", To: "mirror.local/capi/manifests/infrastructure-in-house"}}},
			want:     Location{OCI: "oci://mirror.local/capi/manifests/infrastructure-in-house", Catalog: true},
		},
		{
			name: "a mirror rule for a provider does not override its spec.source",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: v1alpha1.ProviderSpec{
				Source: &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: "https://example.com/releases/latest/infrastructure-components.yaml"}},
			}},
			opts: Options{Mirrors: Mirrors{{From: "infrastructure/aws", To: "mirror.local/capi/manifests/infrastructure-aws"}}},
			want: Location{Release: "https://example.com/releases/latest/infrastructure-components.yaml"},
		},
		{
			name:     "a mirror rule for another type of provider of the same name does not apply",
			provider: &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm"}},
			opts:     Options{Mirrors: Mirrors{{From: "control-plane/kubeadm", To: "mirror.local/capi/manifests/control-plane-kubeadm"}}},
			want:     Location{Release: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/bootstrap-components.yaml", Catalog: true},
		},
		{
			name:     "unknown provider without source",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "no-such-cloud"}},
			wantErr:  ErrNoSource,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Locate(tt.provider, tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Locate = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestRewriteURL(t *testing.T) {
	rules := Mirrors{
		{From: "github.com", To: "https://artifacts.example.com/github"},
		{From: "github.com/acme", To: "http://plain.example.com:8080/acme"},
		{From: "gitlab.example.com", To: "mirror.example.com/gitlab"},
		{From: "registry.k8s.io", To: "mirror.example.com/k8s"},
	}
	for _, tt := range []struct{ in, want string }{
		{"https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/core-components.yaml",
			"https://artifacts.example.com/github/kubernetes-sigs/cluster-api/releases/download/v1.14.2/core-components.yaml"},
		{"https://github.com/acme/x/releases/download/v1.0.0/metadata.yaml", "http://plain.example.com:8080/acme/x/releases/download/v1.0.0/metadata.yaml"},
		{"https://gitlab.example.com/api/v4/projects/1/packages/generic/p/v1.0.0/metadata.yaml", "https://mirror.example.com/gitlab/api/v4/projects/1/packages/generic/p/v1.0.0/metadata.yaml"},
		{"https://github.company.com/x", "https://github.company.com/x"},
	} {
		if got, _ := rules.RewriteURL(tt.in); got != tt.want {
			t.Errorf("RewriteURL(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got, ok := rules.Rewrite("github.com/acme/image:v1"); ok {
		t.Errorf("a rule for release URLs rewrote an image: %s", got)
	}
	rewrite := rules.ReleaseRewrite()
	if got := rewrite(releaseFileURL); got != "https://artifacts.example.com/github/o/r/releases/download/v1/metadata.yaml" {
		t.Errorf("ReleaseRewrite()(%s) = %s", releaseFileURL, got)
	}
	if Mirrors(nil).ReleaseRewrite() != nil {
		t.Error("no rules give a Rewrite: the fetcher would not ask the release host itself")
	}
}

const releaseFileURL = "https://github.com/o/r/releases/download/v1/metadata.yaml"

func TestMirrorRules(t *testing.T) {
	for _, bad := range []string{"", "registry.k8s.io", "=x", "https://a=b", "a=ftp://b", "a=https://", "a=oci://b"} {
		if _, err := ParseMirrorRule(bad); err == nil {
			t.Errorf("ParseMirrorRule(%q) accepted a bad rule", bad)
		}
	}
	for bad, wantMsg := range map[string]string{
		"infrastructure/AWS=mirror.local/capi/manifests/infrastructure-aws":        `"AWS" is not a provider name`,
		"infrastructure/aws/x=mirror.local/capi/manifests/infrastructure-aws":      `"aws/x" is not a provider name`,
		"infrastructure/aws=https://mirror.local/capi":                             "sends it to an OCI repository",
		"infrastructure/aws=mirror.local":                                          "sends it to an OCI repository",
		"infrastructure/aws=mirror.local/capi/manifests/infrastructure-aws:v2.0.0": "without scheme, tag or digest",
		"core/cluster-api=mirror.local/capi@sha256:00":                             "without scheme, tag or digest",
	} {
		_, err := ParseMirrorRule(bad)
		if err == nil || !strings.Contains(err.Error(), wantMsg) || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseMirrorRule(%q) = %v, want an error naming the rule and saying %q", bad, err, wantMsg)
		}
	}
	for _, good := range []string{
		"infrastructure/aws=mirror.local:5000/capi/manifests/infrastructure-aws",
		"runtime-extension/nutanix=mirror.local/x/manifests/runtime-extension-nutanix",
		// Not a provider type: a Docker Hub name, rewritten as images are.
		"bitnami/kubectl=mirror.local/docker/bitnami/kubectl",
	} {
		if _, err := ParseMirrorRule(good); err != nil {
			t.Errorf("ParseMirrorRule(%q): %v", good, err)
		}
	}
	// A rule for a provider rewrites no image and no release URL.
	providerRules := Mirrors{{From: "infrastructure/aws", To: "mirror.local/capi/manifests/infrastructure-aws"}}
	if got, ok := providerRules.Rewrite("infrastructure/aws"); ok {
		t.Errorf("a rule for a provider rewrote an image name to %s", got)
	}
	if got, ok := providerRules.RewriteURL("https://infrastructure/aws/x"); ok {
		t.Errorf("a rule for a provider rewrote a URL to %s", got)
	}
	path := filepath.Join(t.TempDir(), "mirrors")
	if err := os.WriteFile(path, []byte("# written by capwright mirror\nregistry.k8s.io=mirror.local/k8s/\n\nghcr.io = mirror.local/ghcr\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := ReadMirrorFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := rules.Rewrite("ghcr.io/org/image:v1"); !ok || got != "mirror.local/ghcr/org/image:v1" {
		t.Fatalf("Rewrite = %q, %v", got, ok)
	}
	if got, ok := rules.Rewrite("quay.io/x"); ok || got != "quay.io/x" {
		t.Fatalf("Rewrite of an unmatched reference = %q, %v", got, ok)
	}
}
