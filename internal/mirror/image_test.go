package mirror

import (
	"testing"

	"github.com/capwright/capwright/internal/artifact"
)

func TestParseImage(t *testing.T) {
	tests := []struct {
		written string
		name    string
		want    artifact.Reference
	}{
		{"nginx", "nginx", artifact.Reference{Host: "docker.io", Repository: "library/nginx", Tag: "latest"}},
		{"nginx:1.27", "nginx", artifact.Reference{Host: "docker.io", Repository: "library/nginx", Tag: "1.27"}},
		{"bitnami/kubectl:1.31", "bitnami/kubectl", artifact.Reference{Host: "docker.io", Repository: "bitnami/kubectl", Tag: "1.31"}},
		{"docker.io/nginx", "docker.io/nginx", artifact.Reference{Host: "docker.io", Repository: "library/nginx", Tag: "latest"}},
		{"index.docker.io/library/busybox:1", "index.docker.io/library/busybox", artifact.Reference{Host: "docker.io", Repository: "library/busybox", Tag: "1"}},
		{"registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2", "registry.k8s.io/cluster-api/cluster-api-controller",
			artifact.Reference{Host: "registry.k8s.io", Repository: "cluster-api/cluster-api-controller", Tag: "v1.14.2"}},
		{"localhost:5000/a/b", "localhost:5000/a/b", artifact.Reference{Host: "localhost:5000", Repository: "a/b", Tag: "latest"}},
		{"localhost/a", "localhost/a", artifact.Reference{Host: "localhost", Repository: "a", Tag: "latest"}},
		{"127.0.0.1:41234/capi/controller:v1@sha256:" + sha, "127.0.0.1:41234/capi/controller",
			artifact.Reference{Host: "127.0.0.1:41234", Repository: "capi/controller", Tag: "v1", Digest: "sha256:" + sha}},
		{"quay.io/jetstack/cert-manager-controller@sha256:" + sha, "quay.io/jetstack/cert-manager-controller",
			artifact.Reference{Host: "quay.io", Repository: "jetstack/cert-manager-controller", Digest: "sha256:" + sha}},
	}
	for _, tt := range tests {
		t.Run(tt.written, func(t *testing.T) {
			got, err := parseImage(tt.written)
			if err != nil {
				t.Fatalf("parseImage: %v", err)
			}
			if got.Source != tt.want || got.Name != tt.name || got.Written != tt.written {
				t.Errorf("parseImage(%q) = %+v, want name %q and source %+v", tt.written, got, tt.name, tt.want)
			}
		})
	}
}

func TestParseImageInvalid(t *testing.T) {
	for _, written := range []string{"Registry.example.com/UPPER:v1", "example.com/a:b@sha256:short", "example.com/a:bad tag"} {
		if _, err := parseImage(written); err == nil {
			t.Errorf("parseImage(%q) accepted an invalid reference", written)
		}
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    Target
		wantErr bool
	}{
		{in: "mirror.example.com", want: Target{Host: "mirror.example.com"}},
		{in: "mirror.example.com:5000/capi", want: Target{Host: "mirror.example.com:5000", Prefix: "capi"}},
		{in: "oci://127.0.0.1:5000/a/b/", want: Target{Host: "127.0.0.1:5000", Prefix: "a/b"}},
		{in: "", wantErr: true},
		{in: "https://mirror.example.com", wantErr: true},
		{in: "mirror.example.com/UPPER", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if got := (Target{Host: "h:1", Prefix: "p"}).Repository("cluster-api/x"); got != "p/cluster-api/x" {
		t.Errorf("Repository = %q", got)
	}
	if got := (Target{Host: "h:1"}).Repository("cluster-api/x"); got != "cluster-api/x" {
		t.Errorf("Repository without prefix = %q", got)
	}
}
