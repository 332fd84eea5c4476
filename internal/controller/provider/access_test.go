package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
)

// accessURL is the repository of the registry-access tests: nothing
// listens there, every case is decided before a request.
const accessURL = "oci://registry.example.com/capwright/manifests/core-cluster-api"

// accessProvider is a provider in capi-system whose source is an OCI
// artifact, or a chart, at access.URL (accessURL when empty).
func accessProvider(chart bool, access v1alpha1.OCIRegistryAccess) v1alpha1.Provider {
	if access.URL == "" {
		access.URL = accessURL
	}
	om := metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api", UID: "uid-access", Generation: 1,
		CreationTimestamp: created, Finalizers: []string{v1alpha1.Finalizer}}
	if chart {
		om.Name = "helm"
		return &v1alpha1.AddonProvider{ObjectMeta: om, Spec: v1alpha1.ProviderSpec{Version: "v0.4.1",
			Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{OCIRegistryAccess: access}}}}
	}
	return &v1alpha1.CoreProvider{ObjectMeta: om, Spec: v1alpha1.ProviderSpec{Version: "v1.14.2",
		Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: access}}}}
}

// pullSecretRef and tlsSecretRef name the Secrets of pullSecret and
// tlsSecret.
func pullSecretRef() *meta.LocalObjectReference {
	return &meta.LocalObjectReference{Name: "pull"}
}

func tlsSecretRef() *meta.LocalObjectReference {
	return &meta.LocalObjectReference{Name: "registry-tls"}
}

// dockerConfig is a .dockerconfigjson with these auths entries.
func dockerConfig(t *testing.T, auths map[string]map[string]any) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// pullSecret is the dockerconfigjson Secret capi-system/pull holding data
// under .dockerconfigjson.
func pullSecret(data []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: data}}
}

// tlsSecret is the Secret capi-system/registry-tls with data.
func tlsSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "registry-tls"}, Data: data}
}

// testKeyPair is a self-signed certificate and its key, in PEM.
func testKeyPair(t *testing.T, cn string) (crt, key []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// credentialFor is what the access gives oras-go's auth client when it
// asks for host's credentials.
func credentialFor(t *testing.T, a artifact.Access, host string) auth.Credential {
	t.Helper()
	if a.Credentials == nil {
		t.Fatalf("the access has no credentials: %+v", a)
	}
	cred, err := a.Credentials(context.Background(), host)
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// wantCredential checks that the access answers host (the host oras-go
// asks for, registry-1.docker.io for docker.io) with want, and no other
// registry with anything.
func wantCredential(host string, want auth.Credential) func(t *testing.T, a artifact.Access) {
	return func(t *testing.T, a artifact.Access) {
		t.Helper()
		if got := credentialFor(t, a, host); got != want {
			t.Errorf("credential for %s = %+v, want %+v", host, got, want)
		}
		if got := credentialFor(t, a, "elsewhere.example.com"); got != auth.EmptyCredential {
			t.Errorf("credential for another registry = %+v, want none", got)
		}
	}
}

// TestRegistryAccess: the access preflight uses is built from the
// Secrets of spec.source.oci or spec.source.chart the way Flux reads them
// for the OCIRepository, and a Secret that cannot give it is refused with
// an error naming the field, the Secret and the fix. Each refusal has a
// marker in the Secret's data; it must reach no error, condition, event
// or log line.
func TestRegistryAccess(t *testing.T) {
	// The host oras-go asks credentials for when it talks to docker.io.
	dockerHubHost := registry.Reference{Registry: "docker.io"}.Host()
	_, otherKey := testKeyPair(t, "other")
	crt, key := testKeyPair(t, "registry.example.com")

	tests := []struct {
		name    string
		chart   bool
		access  v1alpha1.OCIRegistryAccess
		secrets func(t *testing.T, marker string) []ctrl.Object
		// check inspects the access of a case that passes.
		check func(t *testing.T, a artifact.Access)
		// wantErr holds these, in this order, for a refusal.
		wantErr []string
	}{
		{
			name:   "username and password",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"username": "robot", "password": "pw-1"}}))}
			},
			check: wantCredential("registry.example.com", auth.Credential{Username: "robot", Password: "pw-1"}),
		},
		{
			name:   "auth as base64 of username:password, under an https key with a path",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"https://registry.example.com/v2/": {"auth": b64("robot:pw:2")}}))}
			},
			check: wantCredential("registry.example.com", auth.Credential{Username: "robot", Password: "pw:2"}),
		},
		{
			name:   "Docker Hub as docker login writes it",
			access: v1alpha1.OCIRegistryAccess{URL: "oci://docker.io/capwright/manifests/core-cluster-api", SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"https://index.docker.io/v1/": {"auth": b64("hubuser:hubpass")}}))}
			},
			check: wantCredential(dockerHubHost, auth.Credential{Username: "hubuser", Password: "hubpass"}),
		},
		{
			name:   "Docker Hub under docker.io",
			access: v1alpha1.OCIRegistryAccess{URL: "oci://docker.io/capwright/manifests/core-cluster-api", SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"docker.io": {"username": "hubuser", "password": "hubpass"}}))}
			},
			check: wantCredential(dockerHubHost, auth.Credential{Username: "hubuser", Password: "hubpass"}),
		},
		{
			name:   "identity token",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"auth": b64("<token>:"), "identitytoken": "refresh-1"}}))}
			},
			// A refresh token for the OAuth2 exchange, never basic auth.
			check: wantCredential("registry.example.com", auth.Credential{Username: "<token>", RefreshToken: "refresh-1"}),
		},
		{
			name:   "CA and client certificate",
			access: v1alpha1.OCIRegistryAccess{CertSecretRef: tlsSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{tlsSecret(map[string][]byte{"ca.crt": crt, "tls.crt": crt, "tls.key": key})}
			},
			check: func(t *testing.T, a artifact.Access) {
				if a.RootCAs == nil || a.ClientCert == nil || a.Credentials != nil || a.PlainHTTP {
					t.Errorf("access = %+v, want the CA and the client certificate only", a)
				}
			},
		},
		{
			name:   "chart: secretRef",
			chart:  true,
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"username": "robot", "password": "pw-3"}}))}
			},
			check: wantCredential("registry.example.com", auth.Credential{Username: "robot", Password: "pw-3"}),
		},
		{
			name:   "chart: certSecretRef",
			chart:  true,
			access: v1alpha1.OCIRegistryAccess{CertSecretRef: tlsSecretRef()},
			secrets: func(t *testing.T, _ string) []ctrl.Object {
				return []ctrl.Object{tlsSecret(map[string][]byte{"ca.crt": crt, "tls.crt": crt, "tls.key": key})}
			},
			check: func(t *testing.T, a artifact.Access) {
				if a.RootCAs == nil || a.ClientCert == nil {
					t.Errorf("access = %+v, want the chart's CA and client certificate", a)
				}
			},
		},
		{
			name:   "chart: insecure",
			chart:  true,
			access: v1alpha1.OCIRegistryAccess{Insecure: true},
			check: func(t *testing.T, a artifact.Access) {
				if !a.PlainHTTP {
					t.Errorf("access = %+v, want plain HTTP for an insecure chart source", a)
				}
			},
		},

		// Refusals.
		{
			name:   "no entry for the host",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"other.example.com": {"username": "robot", "password": marker}}))}
			},
			wantErr: []string{"spec.source.oci.secretRef: Secret capi-system/pull has no credentials for registry.example.com",
				"add them to its auths under registry.example.com", "kubectl create secret docker-registry --docker-server registry.example.com"},
		},
		{
			name:   "Secret missing",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				old := pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"username": "robot", "password": marker}}))
				old.Name = "pull-old"
				return []ctrl.Object{old}
			},
			wantErr: []string{"spec.source.oci.secretRef: Secret capi-system/pull does not exist",
				"create it with kubectl create secret docker-registry pull --namespace capi-system --docker-server registry.example.com", "or drop spec.source.oci.secretRef"},
		},
		{
			name:   "no .dockerconfigjson key",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				s := pullSecret(nil)
				s.Type = corev1.SecretTypeOpaque
				s.Data = map[string][]byte{"config.json": dockerConfig(t, map[string]map[string]any{"registry.example.com": {"password": marker}})}
				return []ctrl.Object{s}
			},
			wantErr: []string{"spec.source.oci.secretRef: Secret capi-system/pull has no .dockerconfigjson key", "kubectl create secret docker-registry"},
		},
		{
			name:   "malformed JSON",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{pullSecret([]byte(`{"auths": {"registry.example.com": {"password": ` + marker + `}}}`))}
			},
			wantErr: []string{"spec.source.oci.secretRef: .dockerconfigjson in Secret capi-system/pull is not JSON"},
		},
		{
			name:   "auth not base64",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"auth": marker + "!!"}}))}
			},
			wantErr: []string{"spec.source.oci.secretRef: .dockerconfigjson in Secret capi-system/pull is not a docker config", "auth base64 of username:password"},
		},
		{
			// oras-go's error quotes the decoded auth.
			name:   "auth without a colon",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"auth": b64(marker)}}))}
			},
			wantErr: []string{"spec.source.oci.secretRef: .dockerconfigjson in Secret capi-system/pull is not a docker config", "auth base64 of username:password"},
		},
		{
			name:   "password not a string",
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"username": marker, "password": 4711}}))}
			},
			wantErr: []string{"spec.source.oci.secretRef: .dockerconfigjson in Secret capi-system/pull is not a docker config", "each entry of auths must hold strings"},
		},
		{
			name:   "ca.crt not PEM",
			access: v1alpha1.OCIRegistryAccess{CertSecretRef: tlsSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{tlsSecret(map[string][]byte{"ca.crt": []byte("-----BEGIN CERTIFICATE-----\n" + marker + "\n-----END CERTIFICATE-----\n")})}
			},
			wantErr: []string{"spec.source.oci.certSecretRef: ca.crt in Secret capi-system/registry-tls holds no PEM certificate"},
		},
		{
			name:   "tls.crt and tls.key not a pair",
			access: v1alpha1.OCIRegistryAccess{CertSecretRef: tlsSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{tlsSecret(map[string][]byte{"tls.crt": crt, "tls.key": append([]byte(marker+"\n"), otherKey...)})}
			},
			wantErr: []string{"spec.source.oci.certSecretRef: tls.crt/tls.key in Secret capi-system/registry-tls do not form a key pair"},
		},
		{
			name:   "cert Secret missing",
			access: v1alpha1.OCIRegistryAccess{CertSecretRef: tlsSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				old := tlsSecret(map[string][]byte{"tls.key": []byte(marker)})
				old.Name = "registry-tls-old"
				return []ctrl.Object{old}
			},
			wantErr: []string{"spec.source.oci.certSecretRef: Secret capi-system/registry-tls does not exist",
				"create it with ca.crt (and tls.crt and tls.key for a client certificate), or drop spec.source.oci.certSecretRef"},
		},
		{
			name:   "chart: no entry for the host",
			chart:  true,
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef(), Insecure: true},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"other.example.com": {"auth": b64("robot:" + marker)}}))}
			},
			wantErr: []string{"spec.source.chart.secretRef: Secret capi-system/pull has no credentials for registry.example.com"},
		},
		{
			name:   "chart: auth without a colon",
			chart:  true,
			access: v1alpha1.OCIRegistryAccess{SecretRef: pullSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{pullSecret(dockerConfig(t, map[string]map[string]any{"registry.example.com": {"auth": b64(marker)}}))}
			},
			wantErr: []string{"spec.source.chart.secretRef: .dockerconfigjson in Secret capi-system/pull is not a docker config"},
		},
		{
			name:   "chart: ca.crt not PEM",
			chart:  true,
			access: v1alpha1.OCIRegistryAccess{CertSecretRef: tlsSecretRef()},
			secrets: func(t *testing.T, marker string) []ctrl.Object {
				return []ctrl.Object{tlsSecret(map[string][]byte{"ca.crt": []byte(marker)})}
			},
			wantErr: []string{"spec.source.chart.certSecretRef: ca.crt in Secret capi-system/registry-tls holds no PEM certificate"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No colon: the marker is an auth without one in some cases.
			marker := "MARKER-s3cr3t-" + strings.NewReplacer(" ", "-", ":", "").Replace(tt.name)
			var objs []ctrl.Object
			if tt.secrets != nil {
				objs = tt.secrets(t, marker)
			}
			p := accessProvider(tt.chart, tt.access)
			env := newFakeEnv(t, kindFor(p), append(objs, p.(ctrl.Object))...)

			ref, _, _ := env.r.Source.Reference(p)
			a, err := env.r.Source.Access(context.Background(), p, ref.URL())
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("registryAccess: %v", err)
				}
				tt.check(t, a)
				return
			}
			if err == nil {
				t.Fatalf("registryAccess passed with %+v, want an error saying %q", a, tt.wantErr)
			}
			wantInOrder(t, "error", err.Error(), tt.wantErr)
			for _, bad := range []string{marker, "<nil>", "%!"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("error %q contains %q", err, bad)
				}
			}

			// The same refusal through a whole reconcile: ArtifactResolved
			// says it, and no condition, event or log line carries the
			// Secret's data.
			logs := &logLines{}
			ctx := log.IntoContext(context.Background(), funcr.New(logs.add, funcr.Options{Verbosity: 10}))
			if _, err := env.r.Reconcile(ctx, reconcile.Request{NamespacedName: ctrl.ObjectKeyFromObject(p.(ctrl.Object))}); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			got := env.get(p)
			c := condition(got, v1alpha1.ArtifactResolvedCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.AuthenticationFailedReason {
				t.Fatalf("ArtifactResolved = %+v, want False %s", c, v1alpha1.AuthenticationFailedReason)
			}
			wantInOrder(t, "ArtifactResolved message", c.Message, tt.wantErr)
			if status := toJSON(t, got.GetStatus()); strings.Contains(status, marker) {
				t.Errorf("the status carries the Secret's data: %s", status)
			}
			events := env.recordedEvents()
			if len(events) == 0 {
				t.Errorf("no event for the refusal")
			}
			for _, e := range events {
				if strings.Contains(e, marker) {
					t.Errorf("event carries the Secret's data: %q", e)
				}
			}
			lines := logs.all()
			if len(lines) == 0 {
				t.Errorf("no log line for the refusal")
			}
			for _, l := range lines {
				if strings.Contains(l, marker) {
					t.Errorf("log line carries the Secret's data: %s", l)
				}
			}
			env.mu.Lock()
			defer env.mu.Unlock()
			for _, read := range env.secretReads {
				if !strings.HasPrefix(read, "capi-system/") {
					t.Errorf("read Secret %s outside the provider's namespace", read)
				}
			}
		})
	}
}

// logLines records what a funcr logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// wantInOrder checks that s holds each of want, in this order.
func wantInOrder(t *testing.T, what, s string, want []string) {
	t.Helper()
	rest := s
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("%s %q does not say %q (in order)", what, s, w)
			return
		}
		rest = rest[i+len(w):]
	}
}

// TestChartPreflightUsesRegistryAccess: a chart in a registry that wants
// credentials, over TLS with its own CA or over plain HTTP, passes
// preflight with spec.source.chart's secretRef, certSecretRef and
// insecure, and its OCIRepository carries them to Flux.
func TestChartPreflightUsesRegistryAccess(t *testing.T) {
	for _, withTLS := range []bool{true, false} {
		name := map[bool]string{true: "TLS with a private CA", false: "plain HTTP"}[withTLS]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			reg := registrytest.New(t, registrytest.Options{TLS: withTLS, Username: "robot", Password: "chart-pw"})
			if _, err := artifact.Push(ctx, reg.Ref("capwright/charts/helm", "v0.4.1"), map[string][]byte{"Chart.yaml": []byte("name: helm\nversion: 0.4.1\n")}, nil, reg.Access()); err != nil {
				t.Fatal(err)
			}
			access := v1alpha1.OCIRegistryAccess{URL: "oci://" + reg.Host + "/capwright/charts/helm", SecretRef: pullSecretRef()}
			objs := []ctrl.Object{installedCore("v1beta2"),
				pullSecret(dockerConfig(t, map[string]map[string]any{reg.Host: {"auth": b64("robot:chart-pw")}}))}
			if withTLS {
				access.CertSecretRef = tlsSecretRef()
				objs = append(objs, tlsSecret(map[string][]byte{"ca.crt": reg.CertPEM}))
			} else {
				access.Insecure = true
			}
			p := accessProvider(true, access)
			env := newFakeEnv(t, kindFor(p), append(objs, p.(ctrl.Object))...)
			if _, err := env.reconcile(p); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			got := env.get(p)
			for _, typ := range []string{v1alpha1.ArtifactResolvedCondition, v1alpha1.CompatibleCondition} {
				if c := condition(got, typ); c == nil || c.Status != metav1.ConditionTrue {
					t.Fatalf("%s = %+v, want True", typ, c)
				}
			}
			var repo sourcev1.OCIRepository
			if err := env.client.Get(ctx, ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: objectName(p)}, &repo); err != nil {
				t.Fatalf("the OCIRepository: %v", err)
			}
			if s := repo.Spec; s.SecretRef == nil || s.SecretRef.Name != "pull" || s.Insecure != !withTLS ||
				(withTLS && (s.CertSecretRef == nil || s.CertSecretRef.Name != "registry-tls")) {
				t.Errorf("OCIRepository secretRef %+v, certSecretRef %+v, insecure %v: want the chart source's", s.SecretRef, s.CertSecretRef, s.Insecure)
			}
		})
	}
}
