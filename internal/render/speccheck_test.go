package render

import (
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/kustomize"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestCheckProviderSpec: what Flux and a Pod take passes (the identities
// Flux's own docs show, digests and tags as registries write them); what
// they would fail on is refused, naming the field.
func TestCheckProviderSpec(t *testing.T) {
	identities := func(ids ...v1alpha1.OIDCIdentityMatch) *v1alpha1.ProviderSource {
		return &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://ghcr.io/x",
			Verify: &v1alpha1.OCIVerification{MatchOIDCIdentity: ids}}}}
	}
	for _, tt := range []struct {
		name string
		spec v1alpha1.ProviderSpec
		want string // "" passes
	}{
		{"nothing to check", v1alpha1.ProviderSpec{}, ""},
		{"identities as Flux documents them", v1alpha1.ProviderSpec{Source: identities(
			v1alpha1.OIDCIdentityMatch{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/stefanprodan/podinfo.*$"},
			v1alpha1.OIDCIdentityMatch{Issuer: ".*", Subject: ""})}, ""},
		{"images as registries write them", v1alpha1.ProviderSpec{Images: []kustomize.Image{
			{Name: "a", NewTag: "v1.14.2_build.1"},
			{Name: "b", NewName: "mirror/b", Digest: "sha256:" + strings.Repeat("0a", 32)},
			{Name: "c", Digest: "sha512:" + strings.Repeat("f", 128)},
			{Name: "d", NewTag: "v1.14.2@sha256:" + strings.Repeat("e", 64)},
		}}, ""},
		{"a glob for a subject", v1alpha1.ProviderSpec{Source: identities(v1alpha1.OIDCIdentityMatch{Issuer: ".*", Subject: "*@example.com"})},
			"spec.source.oci.verify.matchOIDCIdentity[0].subject is not a regular expression"},
		{"an unbalanced issuer", v1alpha1.ProviderSpec{Source: identities(v1alpha1.OIDCIdentityMatch{Issuer: "^https://(accounts", Subject: ".*"})},
			"spec.source.oci.verify.matchOIDCIdentity[0].issuer is not a regular expression"},
		{"a digest without its algorithm", v1alpha1.ProviderSpec{Images: []kustomize.Image{{Name: "a", Digest: strings.Repeat("0", 64)}}},
			"spec.images[0].digest"},
		{"a digest with the image's name", v1alpha1.ProviderSpec{Images: []kustomize.Image{{Name: "a", Digest: "a@sha256:" + strings.Repeat("0", 64)}}},
			"spec.images[0].digest"},
		{"a tag with a digest", v1alpha1.ProviderSpec{Images: []kustomize.Image{{Name: "a"}, {Name: "b", NewTag: "v1@sha256:abc"}}},
			"spec.images[1].newTag"},
		{"a tag starting with a dot", v1alpha1.ProviderSpec{Images: []kustomize.Image{{Name: "a", NewTag: ".v1"}}}, "spec.images[0].newTag"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckProviderSpec(&tt.spec)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckProviderSpec = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestCheckBackend(t *testing.T) {
	verify := &v1alpha1.OCIVerification{MatchOIDCIdentity: []v1alpha1.OIDCIdentityMatch{{Issuer: "[", Subject: ".*"}}}
	if err := CheckBackend(nil); err != nil {
		t.Errorf("no backend: %v", err)
	}
	chart := &clustersv1alpha1.Backend{Chart: &clustersv1alpha1.ChartBackend{OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{Verify: verify}}}
	if err := CheckBackend(chart); err == nil || !strings.HasPrefix(err.Error(), "spec.backend.chart.verify.matchOIDCIdentity[0].issuer is not a regular expression") {
		t.Errorf("chart: %v", err)
	}
	kustomize := &clustersv1alpha1.Backend{Kustomize: &clustersv1alpha1.KustomizeBackend{OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{Verify: verify}}}
	if err := CheckBackend(kustomize); err == nil || !strings.HasPrefix(err.Error(), "spec.backend.kustomize.verify.matchOIDCIdentity[0].issuer") {
		t.Errorf("kustomize: %v", err)
	}
}
