package providers

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
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
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// The Secrets a user creates next to a provider for a private registry.
const (
	credentialsSecret = "registry-credentials" // kubernetes.io/dockerconfigjson
	caSecret          = "registry-ca"          // ca.crt of the registry's CA
	wrongCASecret     = "another-ca"           // ca.crt of a CA that did not sign the registry's certificate
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
	reg := startPrivateRegistry(t, "capwright-robot")
	fixtures := func(version string) string { return filepath.Dir(env.CAPIComponentsPath(version, "metadata.yaml")) }
	var url string
	for _, version := range []string{oldVersion, newVersion} {
		var err error
		url, err = framework.PublishCAPIProviderWith(ctx, reg.Host, reg.access(), fixtures(version), v1alpha1.CoreProviderType, "cluster-api", version)
		if err != nil {
			t.Fatal(err)
		}
	}
	const ns = "capi-private"
	ensureNamespace(t, ctx, c, ns)
	reg.createSecrets(t, ctx, c, ns)
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion, Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{
			OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url,
				SecretRef:     &meta.LocalObjectReference{Name: credentialsSecret},
				CertSecretRef: &meta.LocalObjectReference{Name: wrongCASecret}},
		}}}}
	access := func() *v1alpha1.OCIRegistryAccess { return &core.Spec.Source.OCI.OCIRegistryAccess }
	if err := c.Create(ctx, core); err != nil {
		t.Fatal(err)
	}
	defer deleteAndWait(t, ctx, c, core)

	t.Run("a CA that did not sign the registry's certificate is refused", func(t *testing.T) {
		waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.ResolveFailedReason, time.Minute)
		assertRefused(t, core, v1alpha1.ResolveFailedReason, "certificate signed by unknown authority",
			"not signed by the CA in ca.crt of Secret "+ns+"/"+wrongCASecret+" (spec.source.oci.certSecretRef)")
		assertNothingApplied(t, ctx, c, core, false)
	})
	t.Run("without credentials the registry refuses access", func(t *testing.T) {
		updateProvider(t, ctx, c, core, func() {
			access().CertSecretRef = &meta.LocalObjectReference{Name: caSecret}
			access().SecretRef = nil
		})
		waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.AuthenticationFailedReason, time.Minute)
		assertRefused(t, core, v1alpha1.AuthenticationFailedReason, "the registry requires credentials and none were given",
			"spec.source.oci.secretRef is not set")
		assertNothingApplied(t, ctx, c, core, false)
	})
	installed := t.Run("with the CA and the credentials the provider is installed", func(t *testing.T) {
		since := time.Now()
		updateProvider(t, ctx, c, core, func() { access().SecretRef = &meta.LocalObjectReference{Name: credentialsSecret} })
		waitCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
		assertPrivateSource(t, ctx, c, core)
		assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: ns, Name: "capi-controller-manager"})
		reg.assertPulled(t, since, "the install")
	})
	if !installed {
		t.FailNow()
	}

	t.Run("a rotated password is reported and picked up from the Secret", func(t *testing.T) {
		reg.rotate(t)
		requestReconcile(t, ctx, c, core)
		waitCondition(t, ctx, c, core, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.AuthenticationFailedReason, time.Minute)
		assertRefused(t, core, v1alpha1.AuthenticationFailedReason, "(HTTP 401 Unauthorized)",
			"the credentials come from Secret "+ns+"/"+credentialsSecret+" (spec.source.oci.secretRef)")
		// What Flux installed stays installed.
		if !apimeta.IsStatusConditionTrue(core.Status.Conditions, v1alpha1.InstalledCondition) {
			t.Errorf("Installed while the credentials are refused: %+v", apimeta.FindStatusCondition(core.Status.Conditions, v1alpha1.InstalledCondition))
		}
		assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: ns, Name: "capi-controller-manager"})

		// The manager does not watch Secrets (it may only get them): a
		// refused preflight is retried after a minute, so the new
		// password is picked up without anything else changing.
		updated := time.Now()
		reg.updateCredentials(t, ctx, c, ns)
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
		reg.assertPulled(t, since, "the upgrade")
		assertSecretsNotShown(t, ctx, c, core, reg)
	})
	t.Run("a chart source", func(t *testing.T) { privateChart(t, ctx, c) })
}

// privateRegistry is a registry with TLS from its own CA and basic auth,
// and the passwords it has had.
type privateRegistry struct {
	*plane.Registry
	user     string
	password string
	// passwords holds every password the registry accepted, to check that
	// none leaks.
	passwords []string
	pool      *x509.CertPool
	wrongCA   []byte
}

func startPrivateRegistry(t *testing.T, user string) *privateRegistry {
	t.Helper()
	ca, err := plane.NewCA("private-registry-ca")
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := plane.NewCA("private-registry-ca") // same name, other key
	if err != nil {
		t.Fatal(err)
	}
	password := newPassword(t)
	reg, err := plane.StartRegistryWith(plane.RegistryOptions{CA: ca, Username: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(reg.CACertPEM)
	return &privateRegistry{Registry: reg, user: user, password: password, passwords: []string{password}, pool: pool, wrongCA: wrong.CertPEM()}
}

// newPassword is a random password, so that finding it anywhere means it
// leaked from the Secret.
func newPassword(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw-" + hex.EncodeToString(b)
}

// access is how the test itself publishes to the registry.
func (r *privateRegistry) access() artifact.Access {
	return artifact.Access{RootCAs: r.pool, Username: r.user, Password: r.password, UserAgent: "e2e-publisher"}
}

// dockerConfig is the .dockerconfigjson `kubectl create secret
// docker-registry` writes for the registry.
func (r *privateRegistry) dockerConfig(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{
		"username": r.user, "password": r.password,
		"auth": base64.StdEncoding.EncodeToString([]byte(r.user + ":" + r.password)),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// createSecrets creates the credentials, the registry's CA and a wrong CA
// in namespace.
func (r *privateRegistry) createSecrets(t *testing.T, ctx context.Context, c client.Client, namespace string) {
	t.Helper()
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: credentialsSecret}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: r.dockerConfig(t)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: caSecret}, Data: map[string][]byte{"ca.crt": r.CACertPEM}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: wrongCASecret}, Data: map[string][]byte{"ca.crt": r.wrongCA}},
	} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), s) })
	}
}

// rotate gives the registry a new password, which the Secrets do not
// hold yet.
func (r *privateRegistry) rotate(t *testing.T) {
	t.Helper()
	r.password = newPassword(t)
	r.passwords = append(r.passwords, r.password)
	if err := r.SetCredentials(r.user, r.password); err != nil {
		t.Fatal(err)
	}
}

// updateCredentials writes the current password into the credentials
// Secret in namespace, as a user (or a secrets operator) would.
func (r *privateRegistry) updateCredentials(t *testing.T, ctx context.Context, c client.Client, namespace string) {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: credentialsSecret}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data[corev1.DockerConfigJsonKey] = r.dockerConfig(t)
	if err := c.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
}

// assertPulled checks in the registry's log that, since since, both the
// manager's preflight and Flux's source-controller were let in with the
// current password, and source-controller never refused.
func (r *privateRegistry) assertPulled(t *testing.T, since time.Time, what string) {
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
	if repo.Spec.Insecure || repo.Spec.SecretRef == nil || repo.Spec.SecretRef.Name != credentialsSecret ||
		repo.Spec.CertSecretRef == nil || repo.Spec.CertSecretRef.Name != caSecret {
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
func assertSecretsNotShown(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, r *privateRegistry) {
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
	for _, component := range []string{"capwright-manager", "source-controller"} {
		data, err := os.ReadFile(env.LogPath(component))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, component+" log: "+string(data))
	}
	for _, pw := range r.passwords {
		for _, secret := range []string{pw, base64.StdEncoding.EncodeToString([]byte(r.user + ":" + pw))} {
			for _, text := range texts {
				if i := strings.Index(text, secret); i >= 0 {
					t.Errorf("a registry password shows in %.60s… at offset %d", text, i)
				}
			}
		}
	}
}
