package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// TestAnInstalledProviderStaysReadyWhileItsRegistryIsDown checks what
// preflight makes of a registry that cannot be reached: the revision
// installed for the spec stays, ArtifactResolved stays True with reason
// RegistryUnreachable, and the Flux objects are the ones the checked
// artifact renders. What the registry itself refuses, and a version that
// is not installed yet, still fail.
func TestAnInstalledProviderStaysReadyWhileItsRegistryIsDown(t *testing.T) {
	ctx := context.Background()
	env, core, art, reg := installCore(t)
	installed := env.get(core)
	// As the fold leaves it once Flux applied the revision.
	installed.GetStatus().InstalledVersion = "v1.14.2"
	writes := len(env.fluxWrites())
	reg.Close()

	res, perr := preflight(ctx, env.r, installed)
	if perr != nil {
		t.Fatalf("preflight with the registry down refused the installed provider: %s: %s", perr.Reason, perr.Message)
	}
	if res.Digest != art.Digest || res.Checked == nil {
		t.Errorf("preflight went on with %s (artifact %v), want the installed %s", res.Digest, res.Checked != nil, art.Digest)
	}
	c := condition(installed, v1alpha1.ArtifactResolvedCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.RegistryUnreachableReason ||
		!strings.Contains(c.Message, "cannot reach the registry") || !strings.Contains(c.Message, "v1.14.2@"+art.Digest+", checked when it was installed, stays installed") {
		t.Errorf("ArtifactResolved = %+v, want True RegistryUnreachable naming the installed revision", c)
	}
	if !isWarning(*c) {
		t.Errorf("ArtifactResolved %s is not a Warning: the outage would go unannounced", c.Reason)
	}
	if _, err := env.r.reconcile(ctx, installed, ""); err != nil {
		t.Fatal(err)
	}
	for _, w := range env.fluxWrites()[writes:] {
		if w.Kind == sourcev1.OCIRepositoryKind || w.Kind == kustomizev1.KustomizationKind {
			t.Errorf("a reconcile with the registry down rewrote a Flux object: %v", w)
		}
	}

	t.Run("a restarted manager without the artifact leaves the Flux objects as they are", func(t *testing.T) {
		r := env.r
		restarted := &Reconciler{Client: r.Client, Reader: r.Reader, Kind: r.Kind, Kinds: r.Kinds, Source: newSource(env.client, r.Source.Fetcher), Recorder: r.Recorder}
		p := installed.DeepCopyObject().(v1alpha1.Provider)
		res, perr := preflight(ctx, restarted, p)
		if perr != nil || !res.Keep || res.Digest != art.Digest {
			t.Fatalf("preflight = %+v, %+v; want the installed revision kept", res, perr)
		}
		if c := condition(p, v1alpha1.ArtifactResolvedCondition); c.Reason != v1alpha1.RegistryUnreachableReason {
			t.Errorf("ArtifactResolved = %+v, want RegistryUnreachable", c)
		}
		before := len(env.fluxWrites())
		if _, err := restarted.reconcile(ctx, p, ""); err != nil {
			t.Fatal(err)
		}
		for _, w := range env.fluxWrites()[before:] {
			if w.Kind == sourcev1.OCIRepositoryKind || w.Kind == kustomizev1.KustomizationKind {
				t.Errorf("a restarted manager with the registry down rewrote a Flux object: %v", w)
			}
		}
		if st := p.GetStatus(); st.Artifact == nil || st.Artifact.Digest != art.Digest || st.Contract != "v1beta2" {
			t.Errorf("status after the reconcile: %+v", st)
		}
	})

	t.Run("a version not installed yet waits for the registry", func(t *testing.T) {
		upgrade := installed.DeepCopyObject().(v1alpha1.Provider)
		upgrade.GetSpec().Version = "v1.14.3"
		if _, perr := preflight(ctx, env.r, upgrade); perr == nil || perr.Reason != v1alpha1.ResolveFailedReason {
			t.Errorf("preflight of v1.14.3 with the registry down = %+v, want ResolveFailed", perr)
		}
	})

	t.Run("a registry that answers that the tag is gone is not an outage", func(t *testing.T) {
		other := registrytest.New(t, registrytest.Options{})
		moved := installed.DeepCopyObject().(v1alpha1.Provider)
		moved.GetSpec().Source = ociSource("oci://" + other.Host + "/capwright/manifests/core-cluster-api")
		moved.GetStatus().Artifact.URL = moved.GetSpec().Source.OCI.URL
		if _, perr := preflight(ctx, env.r, moved); perr == nil || perr.Reason != v1alpha1.ResolveFailedReason || !strings.Contains(perr.Message, "not found") {
			t.Errorf("preflight with the tag gone = %+v, want ResolveFailed: not found", perr)
		}
	})
}

// TestARegistryThatDoesNotAnswerIsBoundedByTheRegistryTimeout checks that
// a registry that accepts requests and never answers fails the reconcile
// after RegistryTimeout, saying so, rather than holding it.
func TestARegistryThatDoesNotAnswerIsBoundedByTheRegistryTimeout(t *testing.T) {
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { <-req.Context().Done() }))
	t.Cleanup(stuck.Close)
	p := coreProvider("oci://"+strings.TrimPrefix(stuck.URL, "http://")+"/capwright/manifests/core-cluster-api", "v1.14.2")
	env := newFakeEnv(t, kindFor(p), p)
	env.r.Source.RegistryTimeout = 300 * time.Millisecond

	start := time.Now()
	_, perr := preflight(context.Background(), env.r, p)
	took := time.Since(start)
	if perr == nil || perr.Reason != v1alpha1.ResolveFailedReason || !strings.Contains(perr.Message, "the registry did not answer within 300ms (the manager's --registry-timeout)") {
		t.Fatalf("preflight against a registry that does not answer = %+v, want ResolveFailed naming the timeout", perr)
	}
	if took > 10*time.Second {
		t.Errorf("preflight took %s with a registry timeout of 300ms", took)
	}
}

// preflight runs a reconcile's facts and plan and puts what they say on
// obj as the fold does, without the Flux objects' health: the artifact
// resolved, and the refusal (nil when the checks passed).
func preflight(ctx context.Context, r *Reconciler, obj v1alpha1.Provider) (providerplan.Artifact, *plan.Refusal) {
	facts := r.facts(ctx, obj, r.Source.Resolve(ctx, obj))
	if r.fetchAhead(ctx, facts) {
		facts = r.gather(ctx, facts)
	}
	d, err := providerplan.Plan(facts)
	_, _ = r.fold(ctx, obj, providerplan.UpgradeOf(obj), d, synced{}, err)
	refusal, _ := plan.AsRefusal(err)
	return facts.Artifact, refusal
}
