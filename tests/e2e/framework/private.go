package framework

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/tests/plane"
)

// The Secrets a user creates next to what pulls from a private registry
// (a provider, a Tenant's Clusters): secretRef and certSecretRef name them.
const (
	RegistryCredentialsSecret = "registry-credentials" // kubernetes.io/dockerconfigjson
	RegistryCASecret          = "registry-ca"          // ca.crt of the registry's CA
	WrongCASecret             = "another-ca"           // ca.crt of a CA that did not sign the registry's certificate
)

// PrivateRegistry is a registry with TLS from its own CA and basic auth,
// as an organisation's private registry is, and the passwords it has had.
type PrivateRegistry struct {
	*plane.Registry
	User     string
	Password string
	// Passwords holds every password the registry accepted, to check
	// that none leaks.
	Passwords []string
	pool      *x509.CertPool
	wrongCA   []byte
}

// StartPrivateRegistry starts one for user, with a random password; it
// stops with the test.
func StartPrivateRegistry(t *testing.T, user string) *PrivateRegistry {
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
	return &PrivateRegistry{Registry: reg, User: user, Password: password, Passwords: []string{password}, pool: pool, wrongCA: wrong.CertPEM()}
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

// Access is how the test itself publishes to the registry.
func (r *PrivateRegistry) Access() artifact.Access {
	return artifact.Access{RootCAs: r.pool, Username: r.User, Password: r.Password, UserAgent: "e2e-publisher"}
}

// Push publishes files as an artifact (one tar+gzip layer, what Flux
// extracts) at repository:tag.
func (r *PrivateRegistry) Push(t *testing.T, ctx context.Context, repository, tag string, files map[string][]byte) PushedArtifact {
	t.Helper()
	ref := artifact.Reference{Host: r.Host, Repository: repository, Tag: tag}
	d, err := artifact.Push(ctx, ref, files, nil, r.Access())
	if err != nil {
		t.Fatal(err)
	}
	return PushedArtifact{URL: ref.URL(), Tag: tag, Digest: d}
}

// DockerConfig is the .dockerconfigjson `kubectl create secret
// docker-registry` writes for the registry.
func (r *PrivateRegistry) DockerConfig(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{
		"username": r.User, "password": r.Password,
		"auth": base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password)),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// CreateSecrets creates the credentials, the registry's CA and a wrong CA
// in namespace; they go with the test.
func (r *PrivateRegistry) CreateSecrets(t *testing.T, ctx context.Context, c client.Client, namespace string) {
	t.Helper()
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: RegistryCredentialsSecret}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: r.DockerConfig(t)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: RegistryCASecret}, Data: map[string][]byte{"ca.crt": r.CACertPEM}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: WrongCASecret}, Data: map[string][]byte{"ca.crt": r.wrongCA}},
	} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), s) })
	}
}

// Rotate gives the registry a new password, which the Secrets do not
// hold yet.
func (r *PrivateRegistry) Rotate(t *testing.T) {
	t.Helper()
	r.Password = newPassword(t)
	r.Passwords = append(r.Passwords, r.Password)
	if err := r.SetCredentials(r.User, r.Password); err != nil {
		t.Fatal(err)
	}
}

// UpdateCredentials writes the current password into the credentials
// Secret in namespace, as a user (or a secrets operator) would.
func (r *PrivateRegistry) UpdateCredentials(t *testing.T, ctx context.Context, c client.Client, namespace string) {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: RegistryCredentialsSecret}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data[corev1.DockerConfigJsonKey] = r.DockerConfig(t)
	if err := c.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
}

// AssertNotShown checks that none of the registry's passwords, nor a
// basic-auth token made of one, is in texts (conditions, events) or in
// the logs at logPaths (the manager's, source-controller's).
func (r *PrivateRegistry) AssertNotShown(t *testing.T, logPaths []string, texts ...string) {
	t.Helper()
	for _, path := range logPaths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, path+": "+string(data))
	}
	for _, pw := range r.Passwords {
		for _, secret := range []string{pw, base64.StdEncoding.EncodeToString([]byte(r.User + ":" + pw))} {
			for _, text := range texts {
				if i := strings.Index(text, secret); i >= 0 {
					t.Errorf("a registry password shows in %.60s… at offset %d", text, i)
				}
			}
		}
	}
}
