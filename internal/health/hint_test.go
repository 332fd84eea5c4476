package health

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kustomize-controller ends the message of a failed apply with a newline
// (the fixtures keep it). A hint Capwright adds follows Flux's words on
// the same line: "…not found; Flux does not create…", never
// "…not found\n; Flux…".
func TestHintsFollowFluxMessagesWithoutTheirNewline(t *testing.T) {
	repo := ObserveOCIRepository(tenantRepo(t, "1", tenantRepoReady))
	stack := func(status string) string {
		res := FoldTenant(TenantInput{Generation: 1, Now: tenantNow, Clusters: []TenantClusterInput{{
			Cluster: prodEU1, Source: repo, Apply: ObserveKustomization(tenantKustomization(t, status))}}})
		return res.Clusters[0].Message
	}
	additional := func(status string) string {
		return FoldProvider(ProviderInput{
			Generation: 7, DesiredVersion: "v1.14.2", ExpectedRevision: newRevision, Now: testNow,
			Source: ObserveOCIRepository(ociRepository(t, repoReady)), Apply: ObserveKustomization(kustomization(t, ksInstalled)),
			AdditionalApply: ObserveKustomization(additionalKustomization(t, status)), AdditionalRevision: addedDigest,
		}).Installed.Message
	}
	for _, tc := range []struct {
		name    string
		message string
		joined  string // Flux's last words, then the hint
	}{
		{"the stack's target namespace is missing", stack(tenantKSNamespaceMissing), `namespaces "platform" not found; Flux does not create`},
		{"the stack's identity is refused", stack(tenantKSForbidden), `in the namespace "platform"; Flux applies the stack`},
		{"a provider's installer is refused", additional(ksAdditionalForbidden), `at the cluster scope; the provider's installer ServiceAccount`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.ContainsAny(tc.message, "\n\r") || !strings.Contains(tc.message, tc.joined) {
				t.Errorf("message %q, want Flux's message and the hint joined as %q", tc.message, tc.joined)
			}
		})
	}

	// ClustersReady lists the failed clusters' lines one after the other.
	failed := ObserveKustomization(tenantKustomization(t, tenantKSNamespaceMissing))
	for i, c := range failed.Conditions {
		if c.Type == "Ready" {
			failed.Conditions[i].Message = "Deployment/platform/app dry-run failed: admission webhook \"x\" denied the request\n"
		}
	}
	res := FoldTenant(TenantInput{Generation: 1, Now: tenantNow, Clusters: []TenantClusterInput{
		{Cluster: prodEU1, Source: repo, Apply: failed},
		{Cluster: types.NamespacedName{Namespace: "tenant-team-a", Name: "prod-eu-2"}, Source: repo, Apply: failed},
	}})
	if m := res.ClustersReady.Message; strings.ContainsAny(m, "\n\r") || !strings.Contains(m, `denied the request; tenant-team-a/prod-eu-2 Failed`) {
		t.Errorf("ClustersReady message %q, want the lines joined without Flux's newline", m)
	}

	// Without a hint, the message stays as Flux wrote it.
	if got := withHints("a\n", "", ""); got != "a\n" {
		t.Errorf("withHints without a hint = %q", got)
	}
	if got := withHints("a \n\t", "; b"); got != "a; b" {
		t.Errorf("withHints = %q, want %q", got, "a; b")
	}
}

// An OCIRepository source-controller refused for its signature says how
// to sign the artifact or which Secret to name; other failures, and other
// kinds, keep Flux's message.
func TestVerificationHint(t *testing.T) {
	failed := func(kind, reason string) Observation {
		return Observation{Kind: kind, Namespace: "capa-system", Name: "infrastructure-aws", Generation: 1, ObservedGeneration: 1,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: 1,
				Message: "failed to verify the signature using provider 'cosign': no matching signatures were found for 'registry.example.com/capa@sha256:…'\n"}}}
	}
	r := failed("OCIRepository", "VerificationError").readiness()
	want := "OCIRepository capa-system/infrastructure-aws: failed to verify the signature using provider 'cosign': no matching signatures were found for 'registry.example.com/capa@sha256:…'; sign the artifact with a key"
	if !strings.HasPrefix(r.message, want) || !strings.Contains(r.message, "cosign sign --key") || !strings.Contains(r.message, "verify.secretRef") {
		t.Errorf("message %q, want Flux's words then the hint", r.message)
	}
	for _, o := range []Observation{failed("OCIRepository", "OCIArtifactPullFailed"), failed("Kustomization", "VerificationError")} {
		if m := o.readiness().message; strings.Contains(m, "cosign sign") {
			t.Errorf("%s %s: message %q carries the signing hint", o.Kind, o.Conditions[0].Reason, m)
		}
	}
}
