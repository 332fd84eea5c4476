package artifact_test

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
)

func TestParseURL(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		url     string
		want    artifact.Reference
		wantErr string
	}{
		{url: "oci://registry.k8s.io/cluster-api/manifests/core-cluster-api",
			want: artifact.Reference{Host: "registry.k8s.io", Repository: "cluster-api/manifests/core-cluster-api"}},
		{url: "oci://localhost:5000/capi/core:v1.14.2",
			want: artifact.Reference{Host: "localhost:5000", Repository: "capi/core", Tag: "v1.14.2"}},
		{url: "oci://localhost:5000/capi/core:v1.14.2@" + digest,
			want: artifact.Reference{Host: "localhost:5000", Repository: "capi/core", Tag: "v1.14.2", Digest: digest}},
		{url: "oci://ghcr.io/core@" + digest,
			want: artifact.Reference{Host: "ghcr.io", Repository: "core", Digest: digest}},
		{url: "https://ghcr.io/core", wantErr: "must start with oci://"},
		{url: "oci://ghcr.io", wantErr: "oci://host[:port]/repository"},
		{url: "oci://ghcr.io/Upper/Case", wantErr: "invalid repository"},
		{url: "oci://ghcr.io/core:bad/tag", wantErr: "invalid repository"},
		{url: "oci://ghcr.io/core:-bad", wantErr: "invalid tag"},
		{url: "oci://ghcr.io/core@sha256:short", wantErr: "invalid digest"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := artifact.ParseURL(tt.url)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.url) {
					t.Fatalf("ParseURL error = %v, want one naming the URL and containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseURL: %v", err)
			}
			if got != tt.want {
				t.Errorf("ParseURL = %+v, want %+v", got, tt.want)
			}
			if u := got.URL(); u != "oci://"+got.Host+"/"+got.Repository {
				t.Errorf("URL() = %s", u)
			}
			if s := got.String(); "oci://"+s != tt.url {
				t.Errorf("String() = %s, want the URL without oci://", s)
			}
		})
	}
}
