package providers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/mirror"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// signedComponents are the components of a small provider whose
// controller image is image.
func signedComponents(namespace, image string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: signed-controller-manager
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: signed}
  template:
    metadata:
      labels: {app: signed}
    spec:
      containers:
      - name: manager
        image: %[2]s
`, namespace, image))
}

// signatures proves spec.source.oci.verify on the plane: Flux's
// source-controller verifies cosign signatures made with the cosign CLI
// and a key pair it generated (no transparency log). A signed artifact installs; an unsigned one and
// one signed with another key are refused, and the provider says why
// without installing anything; after `capwright mirror` copied the signed
// artifact, its image and its signature to a site prefix, the provider
// moved to the mirror verifies and installs there too.
func signatures(t *testing.T, ctx context.Context, c client.Client) {
	key, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	access := artifact.Access{PlainHTTP: true}
	image := artifact.Reference{Host: env.Registry.Host, Repository: "signed/controller", Tag: "v0.1.0"}
	mirrortest.PushImage(t, access, image, mirrortest.SmallImage(mirrortest.SeedOf("signed-controller")))

	type signedCase struct {
		name string
		key  *framework.CosignKey // nil: unsigned
		p    *v1alpha1.InfrastructureProvider
		url  string
	}
	cases := []*signedCase{{name: "signed", key: key}, {name: "unsigned"}, {name: "forged", key: otherKey}}
	for _, sc := range cases {
		ns := "verify-" + sc.name
		ensureNamespace(t, ctx, c, ns)
		keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cosign-keys"}, Data: map[string][]byte{"cosign.pub": key.PublicPEM}}
		if err := c.Create(ctx, keys); err != nil {
			t.Fatal(err)
		}
		ref := artifact.Reference{Host: env.Registry.Host, Repository: framework.CAPIRepository + "/infrastructure-" + sc.name, Tag: "v0.1.0"}
		files := map[string][]byte{
			"metadata.yaml":                  testMetadata("v1beta2"),
			"infrastructure-components.yaml": signedComponents(ns, image.String()),
		}
		d, err := artifact.Push(ctx, ref, files, artifact.ProviderAnnotations(v1alpha1.InfrastructureProviderType, sc.name, "v0.1.0", "https://example.com"), access)
		if err != nil {
			t.Fatal(err)
		}
		if sc.key != nil {
			if err := framework.CosignSign(ctx, ref.Host+"/"+ref.Repository+"@"+d, sc.key); err != nil {
				t.Fatal(err)
			}
		}
		sc.url = ref.URL()
		src := source(sc.url)
		src.OCI.Verify = &v1alpha1.OCIVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: keys.Name}}
		sc.p = &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sc.name},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: src}}
		if err := c.Create(ctx, sc.p); err != nil {
			t.Fatal(err)
		}
		defer deleteAndWait(t, ctx, c, sc.p)
	}

	signed := cases[0]
	waitCondition(t, ctx, c, signed.p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	assertVerified(t, ctx, c, client.ObjectKey{Namespace: signed.p.Namespace, Name: "infrastructure-" + signed.p.Name}, metav1.ConditionTrue)

	for _, sc := range cases[1:] {
		refusedUnverified(t, ctx, c, sc.p, "infrastructure-"+sc.name)
		if err := c.Get(ctx, client.ObjectKey{Namespace: sc.p.Namespace, Name: "signed-controller-manager"}, &appsv1.Deployment{}); err == nil {
			t.Errorf("%s provider: its Deployment was applied although its artifact failed verification", sc.name)
		}
	}

	// An air-gapped site: the signed artifact, its image and its
	// signature mirrored under a prefix; the provider pointed there.
	target := mirror.Target{Host: env.Registry.Host, Prefix: "site"}
	srcRef, err := artifact.ParseURL(signed.url)
	if err != nil {
		t.Fatal(err)
	}
	srcRef.Tag = "v0.1.0"
	if _, err := mirror.Run(ctx, []artifact.Reference{srcRef}, mirror.Options{Target: target, SourceAccess: access, TargetAccess: access}); err != nil {
		t.Fatalf("capwright mirror: %v", err)
	}
	mirrored := "oci://" + env.Registry.Host + "/site/" + srcRef.Repository
	updateProvider(t, ctx, c, signed.p, func() { signed.p.Spec.Source.OCI.URL = mirrored })
	waitCondition(t, ctx, c, signed.p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	repo := assertVerified(t, ctx, c, client.ObjectKey{Namespace: signed.p.Namespace, Name: "infrastructure-" + signed.p.Name}, metav1.ConditionTrue)
	if repo.Spec.URL != mirrored {
		t.Errorf("OCIRepository URL %s, want the mirror's %s", repo.Spec.URL, mirrored)
	}
}

// refusedUnverified checks a provider whose artifact source-controller
// refused (the OCIRepository named source): not installed, the refusal on
// its own status naming the OCIRepository, the verification and what to
// do, and nothing installed.
func refusedUnverified(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, source string) {
	t.Helper()
	waitCondition(t, ctx, c, p, v1alpha1.InstalledCondition, metav1.ConditionFalse, "", 2*time.Minute)
	assertVerified(t, ctx, c, client.ObjectKey{Namespace: p.GetNamespace(), Name: source}, metav1.ConditionFalse)
	// The applier may fail first, waiting for its source; the fold takes
	// in the source's own failure as soon as source-controller reports it.
	var msg, reason string
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, nil
		}
		msg, reason = conditionMessage(p, v1alpha1.ReadyCondition), ""
		for _, o := range p.GetStatus().FluxObjects {
			if o.Kind == sourcev1.OCIRepositoryKind && o.Name == source {
				reason = o.Reason
			}
		}
		return reason == sourcev1.VerificationError && strings.Contains(msg, "cosign sign"), nil
	})
	for _, want := range []string{"OCIRepository " + p.GetNamespace() + "/" + source, "verif", "cosign sign"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s %s/%s: Ready says %q, want the OCIRepository's verification failure and the fix (%q)", p.GetObjectKind().GroupVersionKind().Kind, p.GetNamespace(), p.GetName(), msg, want)
		}
	}
	// Flux's reason, as the security guide names it, on the source's line.
	if reason != sourcev1.VerificationError {
		t.Errorf("%s/%s: status.fluxObjects gives OCIRepository %s the reason %q, want %s", p.GetNamespace(), p.GetName(), source, reason, sourcev1.VerificationError)
	}
	if v := p.GetStatus().InstalledVersion; v != "" {
		t.Errorf("%s/%s: installedVersion %q, want nothing installed", p.GetNamespace(), p.GetName(), v)
	}
}

// assertVerified checks the SourceVerified condition of the provider's
// OCIRepository key and returns it.
func assertVerified(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey, want metav1.ConditionStatus) *sourcev1.OCIRepository {
	t.Helper()
	repo := &sourcev1.OCIRepository{}
	var last string
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, key, repo); err != nil {
			t.Fatal(err)
		}
		cond := apimeta.FindStatusCondition(repo.Status.Conditions, sourcev1.SourceVerifiedCondition)
		if cond != nil && cond.Status == want {
			return repo
		}
		last = fmt.Sprint(cond)
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("OCIRepository %s: SourceVerified %s, want %s", key, last, want)
	return repo
}
