package clusters

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// fluxPulls counts the requests of source-controller the registry let in
// and refused since since.
func fluxPulls(r *framework.PrivateRegistry, since time.Time) (accepted, refused int) {
	for _, e := range r.AuthLog(since) {
		if !strings.HasPrefix(e.UserAgent, "flux/") {
			continue
		}
		switch e.Result {
		case plane.AuthAccepted:
			accepted++
		case plane.AuthRefused:
			refused++
		}
	}
	return accepted, refused
}

// privateAccess is how a stack or a backend names the registry's Secrets.
func privateAccess() (secretRef, certSecretRef *meta.LocalObjectReference) {
	return &meta.LocalObjectReference{Name: framework.RegistryCredentialsSecret}, &meta.LocalObjectReference{Name: framework.RegistryCASecret}
}

// privateSources are the OCIRepositories in namespace that pull from the
// registry: they name its Secrets and keep TLS verification on.
func privateSources(t *testing.T, ctx context.Context, c client.Client, r *framework.PrivateRegistry, namespace string, want int) []sourcev1.OCIRepository {
	t.Helper()
	var repos sourcev1.OCIRepositoryList
	if err := c.List(ctx, &repos, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []sourcev1.OCIRepository
	for _, repo := range repos.Items {
		if !strings.HasPrefix(repo.Spec.URL, "oci://"+r.Host+"/") {
			continue
		}
		if repo.Spec.Insecure || repo.Spec.SecretRef == nil || repo.Spec.SecretRef.Name != framework.RegistryCredentialsSecret ||
			repo.Spec.CertSecretRef == nil || repo.Spec.CertSecretRef.Name != framework.RegistryCASecret {
			t.Errorf("OCIRepository %s/%s: insecure %v secretRef %v certSecretRef %v; want the registry's Secrets and no insecure",
				namespace, repo.Name, repo.Spec.Insecure, repo.Spec.SecretRef, repo.Spec.CertSecretRef)
		}
		out = append(out, repo)
	}
	if len(out) != want {
		t.Fatalf("%d OCIRepositories in %s pull from the private registry %s, want %d", len(out), namespace, r.Host, want)
	}
	return out
}

// waitSources waits until every OCIRepository of repos is Ready as want
// says for its current generation, and returns the last Ready messages.
func waitSources(t *testing.T, ctx context.Context, c client.Client, repos []sourcev1.OCIRepository, want metav1.ConditionStatus, timeout time.Duration) []string {
	t.Helper()
	var messages []string
	eventually(t, ctx, timeout, "the private registry's OCIRepositories Ready="+string(want), func(ctx context.Context) (bool, string) {
		messages = messages[:0]
		for _, repo := range repos {
			var got sourcev1.OCIRepository
			if err := c.Get(ctx, client.ObjectKeyFromObject(&repo), &got); err != nil {
				return false, err.Error()
			}
			ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
			if ready == nil || ready.Status != want || ready.ObservedGeneration != got.Generation {
				return false, got.Name + ": " + conditionString(ready)
			}
			messages = append(messages, got.Name+": "+ready.Message)
		}
		return true, ""
	})
	return messages
}

func conditionString(c *metav1.Condition) string {
	if c == nil {
		return "no Ready condition"
	}
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}
