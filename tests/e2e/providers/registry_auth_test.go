package providers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestPrivateRegistry installs providers from registries that speak TLS
// with a certificate from their own CA and require basic auth, as an
// organisation's private registry does: the manager's preflight and
// Flux's source-controller both reach them with the provider's
// certSecretRef and secretRef, never with insecure. The registry's
// password is rotated while the providers are installed: the provider
// reports the refused credentials, naming the Secret, and returns to Ready
// once the Secret holds the new password — and Flux pulls with the new
// one. No password ever shows in a condition, an event or a log.
func TestPrivateRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := newClient(t)

	// The core provider comes from the private registry, so the test
	// installs a real one; v1.13.6 first, to upgrade after the rotation.
	reg := framework.StartPrivateRegistry(t, "capwright-robot")
	fixtures := func(version string) string { return filepath.Dir(env.CAPIComponentsPath(version, "metadata.yaml")) }
	var url string
	for _, version := range []string{oldVersion, newVersion} {
		var err error
		url, err = framework.PublishCAPIProviderWith(ctx, reg.Host, reg.Access(), fixtures(version), v1alpha1.CoreProviderType, "cluster-api", version)
		if err != nil {
			t.Fatal(err)
		}
	}
	const ns = "capi-private"
	ensureNamespace(t, ctx, c, ns)
	reg.CreateSecrets(t, ctx, c, ns)
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion, Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{
			OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url,
				SecretRef:     &meta.LocalObjectReference{Name: framework.RegistryCredentialsSecret},
				CertSecretRef: &meta.LocalObjectReference{Name: framework.WrongCASecret}},
		}}}}
	access := func() *v1alpha1.OCIRegistryAccess { return &core.Spec.Source.OCI.OCIRegistryAccess }
	if err := c.Create(ctx, core); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, core)

	t.Run("a CA that did not sign the registry's certificate is refused", func(t *testing.T) {
		waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.ResolveFailedReason, time.Minute)
		assertRefused(t, core, v1alpha1.ResolveFailedReason, "certificate signed by unknown authority",
			"not signed by the CA in ca.crt of Secret "+ns+"/"+framework.WrongCASecret+" (spec.source.oci.certSecretRef)")
		assertNothingApplied(t, ctx, c, core, false)
	})
	t.Run("without credentials the registry refuses access", func(t *testing.T) {
		updateProvider(t, ctx, c, core, func() {
			access().CertSecretRef = &meta.LocalObjectReference{Name: framework.RegistryCASecret}
			access().SecretRef = nil
		})
		waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.AuthenticationFailedReason, time.Minute)
		assertRefused(t, core, v1alpha1.AuthenticationFailedReason, "the registry requires credentials and none were given",
			"spec.source.oci.secretRef is not set")
		assertNothingApplied(t, ctx, c, core, false)
	})
	installed := t.Run("with the CA and the credentials the provider is installed", func(t *testing.T) {
		since := time.Now()
		updateProvider(t, ctx, c, core, func() { access().SecretRef = &meta.LocalObjectReference{Name: framework.RegistryCredentialsSecret} })
		waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
		assertPrivateSource(t, ctx, c, core)
		assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: ns, Name: "capi-controller-manager"})
		assertPulled(t, reg, since, "the install")
	})
	if !installed {
		t.FailNow()
	}

	t.Run("a rotated password is reported and picked up from the Secret", func(t *testing.T) {
		reg.Rotate(t)
		requestReconcile(t, ctx, c, core)
		waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.AuthenticationFailedReason, time.Minute)
		assertRefused(t, core, v1alpha1.AuthenticationFailedReason, "(HTTP 401 Unauthorized)",
			"the credentials come from Secret "+ns+"/"+framework.RegistryCredentialsSecret+" (spec.source.oci.secretRef)")
		// What Flux installed stays installed.
		if !apimeta.IsStatusConditionTrue(core.Status.Conditions, v1alpha1.InstalledCondition) {
			t.Errorf("Installed while the credentials are refused: %+v", apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.InstalledCondition))
		}
		assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: ns, Name: "capi-controller-manager"})

		// The manager does not watch Secrets (it may only get them): a
		// refused preflight is retried after a minute, so the new
		// password is picked up without anything else changing.
		updated := time.Now()
		reg.UpdateCredentials(t, ctx, c, ns)
		waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
		t.Logf("Ready again %s after the Secret was updated, without a reconcile request", time.Since(updated).Round(time.Second))
		assertSecretsNotShown(t, ctx, c, core, reg)
	})
	t.Run("Flux pulls an upgrade with the rotated password", func(t *testing.T) {
		since := time.Now()
		updateProvider(t, ctx, c, core, func() { core.Spec.Version = newVersion })
		waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
		if core.Status.InstalledVersion != newVersion {
			t.Errorf("installedVersion %q, want %s", core.Status.InstalledVersion, newVersion)
		}
		assertPulled(t, reg, since, "the upgrade")
		assertSecretsNotShown(t, ctx, c, core, reg)
	})
	t.Run("a chart source", func(t *testing.T) { privateChart(t, ctx, c) })
}

// assertPulled checks in the registry's log that, since since, both the
// manager's preflight and Flux's source-controller were let in with the
// current password, and source-controller never refused.
func assertPulled(t *testing.T, r *framework.PrivateRegistry, since time.Time, what string) {
	t.Helper()
	var manager, flux, fluxRefused int
	for _, e := range r.AuthLog(since) {
		switch {
		case strings.HasPrefix(e.UserAgent, "capwright") && e.Result == plane.AuthAccepted:
			manager++
		case strings.HasPrefix(e.UserAgent, "flux/") && e.Result == plane.AuthAccepted:
			flux++
		case strings.HasPrefix(e.UserAgent, "flux/") && e.Result == plane.AuthRefused:
			fluxRefused++
		}
	}
	if manager == 0 || flux == 0 || fluxRefused > 0 {
		t.Errorf("for %s the registry let in %d requests of the manager and %d of source-controller, and refused %d of source-controller; want both let in, none refused",
			what, manager, flux, fluxRefused)
	}
}

// assertRefused checks the provider's refusal: not Ready, ArtifactResolved
// False for reason, with a message that says each of want.
func assertRefused(t *testing.T, p v1alpha1.Provider, reason string, want ...string) {
	t.Helper()
	ready := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.ReadyCondition)
	if ready == nil || ready.Status == metav1.ConditionTrue {
		t.Errorf("Ready with a refused artifact: %+v", ready)
	}
	resolved := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.ArtifactResolvedCondition)
	if resolved == nil {
		t.Fatal("no ArtifactResolved condition")
	}
	if resolved.Status != metav1.ConditionFalse || resolved.Reason != reason {
		t.Errorf("ArtifactResolved %s %s, want False %s", resolved.Status, resolved.Reason, reason)
	}
	for _, w := range want {
		if !strings.Contains(resolved.Message, w) {
			t.Errorf("ArtifactResolved message %q does not say %q", resolved.Message, w)
		}
	}
	t.Logf("ArtifactResolved %s %s: %s", resolved.Status, resolved.Reason, resolved.Message)
}

// assertPrivateSource checks that the provider's OCIRepository reaches the
// registry with the provider's Secrets and TLS verification, and fetched
// the checked digest.
func assertPrivateSource(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider) {
	t.Helper()
	var repo sourcev1.OCIRepository
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.GetNamespace(), Name: render.ObjectName(p.ProviderType(), p.GetName())}, &repo); err != nil {
		t.Fatal(err)
	}
	if repo.Spec.Insecure || repo.Spec.SecretRef == nil || repo.Spec.SecretRef.Name != framework.RegistryCredentialsSecret ||
		repo.Spec.CertSecretRef == nil || repo.Spec.CertSecretRef.Name != framework.RegistryCASecret {
		t.Errorf("OCIRepository %s: insecure %v secretRef %v certSecretRef %v; want the provider's Secrets and no insecure",
			repo.Name, repo.Spec.Insecure, repo.Spec.SecretRef, repo.Spec.CertSecretRef)
	}
	if repo.Status.Artifact == nil || p.GetStatus().Artifact == nil || repo.Status.Artifact.Revision != p.GetStatus().Artifact.Digest {
		t.Errorf("OCIRepository %s artifact %+v; want the checked digest %+v", repo.Name, repo.Status.Artifact, p.GetStatus().Artifact)
	}
}

// assertSecretsNotShown checks that none of the registry's passwords,
// nor the basic-auth token made of one, is in the provider's conditions,
// its events, or the logs of the manager and source-controller.
func assertSecretsNotShown(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, r *framework.PrivateRegistry) {
	t.Helper()
	var texts []string
	for _, cond := range p.GetConditions() {
		texts = append(texts, "condition "+cond.Type+": "+cond.Message)
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(p.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == p.GetName() {
			texts = append(texts, "event "+e.Reason+": "+e.Message)
		}
	}
	r.AssertNotShown(t, []string{env.LogPath("capwright-manager"), env.LogPath("source-controller")}, texts...)
}
