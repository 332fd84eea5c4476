package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

func TestArtifactURL(t *testing.T) {
	mirrors := Mirrors{
		{From: "registry.k8s.io", To: "mirror.local:5000/k8s"},
		{From: "registry.k8s.io/cluster-api/manifests", To: "mirror.local:5000/capi"},
	}
	tests := []struct {
		name     string
		provider v1alpha1.Provider
		mirrors  Mirrors
		want     string
		wantErr  error
	}{
		{
			name:     "core from the catalog",
			provider: &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Name: "cluster-api"}},
			want:     "oci://registry.k8s.io/cluster-api/manifests/core-cluster-api",
		},
		{
			name:     "kubeadm control plane from the catalog, longest mirror rule wins",
			provider: &v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm"}},
			mirrors:  mirrors,
			want:     "oci://mirror.local:5000/capi/control-plane-kubeadm",
		},
		{
			name: "explicit source is mirrored too",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: v1alpha1.ProviderSpec{
				Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://registry.k8s.io/capa/manifests/infrastructure-aws"}}},
			}},
			mirrors: mirrors,
			want:    "oci://mirror.local:5000/k8s/capa/manifests/infrastructure-aws",
		},
		{
			name:     "a rule matches on path segments only",
			provider: &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Name: "cluster-api"}},
			mirrors:  Mirrors{{From: "registry.k8s.io/cluster", To: "elsewhere"}},
			want:     "oci://registry.k8s.io/cluster-api/manifests/core-cluster-api",
		},
		{
			name:     "unknown provider without source",
			provider: &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Name: "vsphere"}},
			wantErr:  ErrNoSource,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ArtifactURL(tt.provider, tt.mirrors)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ArtifactURL = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestMirrorRules(t *testing.T) {
	for _, bad := range []string{"", "registry.k8s.io", "=x", "https://a=b", "a=http://b"} {
		if _, err := ParseMirrorRule(bad); err == nil {
			t.Errorf("ParseMirrorRule(%q) accepted a bad rule", bad)
		}
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
