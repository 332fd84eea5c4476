package render

import (
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// sourceTimeout bounds one pull of the artifact. It is Flux's own default,
// written out so the object Capwright applies is the object that runs.
const sourceTimeout = time.Minute

// ociRepository is the source of a provider, pinned to the digest preflight
// checked — never to the tag, so a tag moved after preflight can never slip
// past it — with the provider's registry access settings (access is nil
// when the catalog gave the URL).
func ociRepository(in Input, om objectMeta, access *v1alpha1.OCIRegistryAccess) *sourcev1.OCIRepository {
	spec := in.Provider.GetSpec()
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: om.build(),
		Spec: sourcev1.OCIRepositorySpec{
			URL:       in.ArtifactURL,
			Reference: &sourcev1.OCIRepositoryRef{Digest: in.Digest},
			Interval:  interval(spec),
			Timeout:   &metav1.Duration{Duration: sourceTimeout},
			Insecure:  in.Insecure,
			Suspend:   spec.Suspend,
		},
	}
	if access != nil {
		repo.Spec.SecretRef = access.SecretRef.DeepCopy()
		repo.Spec.CertSecretRef = access.CertSecretRef.DeepCopy()
		repo.Spec.Insecure = in.Insecure || access.Insecure
		repo.Spec.Verify = verification(access.Verify)
	}
	return repo
}

// componentsOnly is the OCIRepository ignore rule (.sourceignore syntax,
// applied to the extracted layer) that leaves only the components file in
// the artifact Flux stores. Without it kustomize-controller, which
// generates a kustomization.yaml from every YAML file it finds, would also
// take metadata.yaml — a clusterctl Metadata without a name, which fails
// the build — and any cluster-template*.yaml.
func componentsOnly(componentsFile string) string {
	return "/*\n!/" + componentsFile + "\n"
}

// verification maps the provider's signature verification onto the
// OCIRepository's; cosign is the API's default provider.
func verification(v *v1alpha1.OCIVerification) *sourcev1.OCIRepositoryVerification {
	if v == nil {
		return nil
	}
	provider := v.Provider
	if provider == "" {
		provider = "cosign"
	}
	out := &sourcev1.OCIRepositoryVerification{Provider: provider, SecretRef: v.SecretRef.DeepCopy()}
	for _, id := range v.MatchOIDCIdentity {
		out.MatchOIDCIdentity = append(out.MatchOIDCIdentity, sourcev1.OIDCIdentityMatch{Issuer: id.Issuer, Subject: id.Subject})
	}
	return out
}
