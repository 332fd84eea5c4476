package resolve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/providerrelease"
)

// Access builds the credentials and TLS settings for the provider's
// registry at url (its OCI repository, after the catalog and mirror
// rules) from the same Secrets its OCIRepository uses: those named by
// spec.source.oci or spec.source.chart, which carry the same access fields.
// The Secrets are LocalObjectReferences, so always in the provider's
// namespace, and are read uncached through r.Reader. Secret contents never
// appear in errors.
func (r *Resolver) Access(ctx context.Context, obj v1alpha1.Provider, url string) (artifact.Access, error) {
	q := r.about(obj)
	return r.access(ctx, &q, url)
}

func (r *Resolver) access(ctx context.Context, q *query, url string) (artifact.Access, error) {
	access := artifact.Access{UserAgent: "capwright"}
	if r.BaseAccess != nil {
		access = *r.BaseAccess
	}
	access.PlainHTTP = access.PlainHTTP || r.insecureRegistry(url)
	field, src := q.accessField, q.access
	if src == nil {
		return access, nil
	}
	access.PlainHTTP = access.PlainHTTP || src.Insecure
	if r.BaseAccess != nil {
		return access, nil
	}
	if src.SecretRef != nil {
		host := providerplan.RegistryHost(url)
		cred, err := r.registryCredential(ctx, field+".secretRef", q.namespace, src.SecretRef.Name, host)
		if err != nil {
			return access, err
		}
		access.Credentials = auth.StaticCredential(host, cred)
	}
	if src.CertSecretRef != nil {
		if err := r.registryTLS(ctx, field+".certSecretRef", q.namespace, src.CertSecretRef.Name, &access); err != nil {
			return access, err
		}
	}
	return access, nil
}

// releaseFetcher is the fetcher of the provider's release: the manager's
// mirror rules, redirect hosts, size bound and timeout, and the
// credentials, CA and plain-HTTP consent of spec.source.release.
func (r *Resolver) releaseFetcher(ctx context.Context, q *query) (*providerrelease.Fetcher, error) {
	f := &providerrelease.Fetcher{
		Transport:            r.Releases.Transport,
		Timeout:              r.timeout(),
		AllowedRedirectHosts: providerrelease.AllowHosts(r.Releases.RedirectHosts...),
		UserAgent:            "capwright",
		Fields:               providerrelease.ControllerFields,
	}
	if r.Fetcher != nil {
		f.MaxSize = r.Fetcher.MaxArtifactSize
	}
	if r.BaseAccess != nil {
		// The CLI's own TLS settings.
		f.RootCAs, f.InsecureSkipVerify = r.BaseAccess.RootCAs, r.BaseAccess.InsecureSkipVerify
	}
	f.Rewrite = r.Mirrors.ReleaseRewrite()
	rs, ns := q.releaseSource, q.namespace
	if rs == nil {
		return f, nil
	}
	f.AllowPlainHTTP = rs.Insecure
	if r.BaseAccess != nil {
		return f, nil // no Secret of the cluster is read
	}
	if rs.SecretRef != nil {
		const field = "spec.source.release.secretRef"
		secret, err := r.registrySecret(ctx, field, ns, rs.SecretRef.Name,
			fmt.Sprintf("create it with kubectl create secret generic %s --namespace %s --from-literal=token=<token>", rs.SecretRef.Name, ns))
		if err != nil {
			return nil, err
		}
		switch token := firstKey(secret.Data, "token", "bearerToken"); {
		case token != "":
			f.Auth.BearerToken = token
		case len(secret.Data["username"]) > 0:
			f.Auth.Username, f.Auth.Password = string(secret.Data["username"]), string(secret.Data["password"])
		default:
			return nil, fmt.Errorf("%s: Secret %s/%s has neither a token key nor username and password keys; put the release host's token under token (or bearerToken), or basic-auth credentials under username and password",
				field, ns, rs.SecretRef.Name)
		}
	}
	if rs.CertSecretRef != nil {
		var access artifact.Access
		if err := r.registryTLS(ctx, "spec.source.release.certSecretRef", ns, rs.CertSecretRef.Name, &access); err != nil {
			return nil, err
		}
		f.RootCAs = access.RootCAs
	}
	return f, nil
}

func firstKey(data map[string][]byte, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(string(data[k])); v != "" {
			return v
		}
	}
	return ""
}

// registryCredential is the entry for host in the dockerconfigjson Secret
// field names. oras-go's credential store reads the entry as docker does:
// username and password, auth (base64 of username:password), identitytoken
// (an OAuth2 refresh token) and registrytoken.
func (r *Resolver) registryCredential(ctx context.Context, field, namespace, name, host string) (auth.Credential, error) {
	secret, err := r.registrySecret(ctx, field, namespace, name,
		fmt.Sprintf("create it with kubectl create secret docker-registry %s --namespace %s --docker-server %s", name, namespace, host))
	if err != nil {
		return auth.EmptyCredential, err
	}
	data := secret.Data[corev1.DockerConfigJsonKey]
	if len(data) == 0 {
		return auth.EmptyCredential, fmt.Errorf("%s: Secret %s/%s has no %s key; create it with kubectl create secret docker-registry", field, namespace, name, corev1.DockerConfigJsonKey)
	}
	// The causes are dropped: encoding/json's and oras-go's messages quote
	// the input, oras-go's even the decoded auth, username:password.
	if !json.Valid(data) {
		return auth.EmptyCredential, fmt.Errorf("%s: %s in Secret %s/%s is not JSON; create it with kubectl create secret docker-registry", field, corev1.DockerConfigJsonKey, namespace, name)
	}
	store, err := credentials.NewMemoryStoreFromDockerConfig(data)
	if err != nil {
		return auth.EmptyCredential, fmt.Errorf("%s: %s in Secret %s/%s is not a docker config: each entry of auths must hold strings, and auth base64 of username:password",
			field, corev1.DockerConfigJsonKey, namespace, name)
	}
	for _, addr := range serverAddresses(host) {
		cred, err := store.Get(ctx, addr)
		if err != nil {
			return auth.EmptyCredential, fmt.Errorf("%s: cannot look up %s in Secret %s/%s", field, addr, namespace, name)
		}
		if cred != auth.EmptyCredential {
			return cred, nil
		}
	}
	return auth.EmptyCredential, fmt.Errorf("%s: Secret %s/%s has no credentials for %s; add them to its auths under %s (kubectl create secret docker-registry --docker-server %s)",
		field, namespace, name, host, host, host)
}

// dockerHub are the names Docker Hub goes by in a docker config's auths,
// as oras-go's memory store keys them: it cuts scheme and path off, so the
// https://index.docker.io/v1/ that docker login writes is index.docker.io.
// credentials.Credential is of no use here: it asks the store for
// https://index.docker.io/v1/ itself, which that store never holds.
var dockerHub = []string{"index.docker.io", "docker.io", "registry-1.docker.io"}

// serverAddresses are the auths keys that may hold credentials for host.
func serverAddresses(host string) []string {
	if slices.Contains(dockerHub, host) {
		return dockerHub
	}
	return []string{host}
}

// registryTLS sets the CA and client certificate from the Secret field
// names: ca.crt, and tls.crt with tls.key.
func (r *Resolver) registryTLS(ctx context.Context, field, namespace, name string, access *artifact.Access) error {
	secret, err := r.registrySecret(ctx, field, namespace, name, "create it with ca.crt (and tls.crt and tls.key for a client certificate)")
	if err != nil {
		return err
	}
	if ca := secret.Data["ca.crt"]; len(ca) > 0 {
		// ca.crt is trusted in addition to the system's CAs, as Flux's
		// source-controller trusts it: a registry with a publicly signed
		// certificate passes preflight as it passes Flux.
		pool, err := artifact.CertPool(ca)
		if err != nil {
			return fmt.Errorf("%s: ca.crt in Secret %s/%s holds no PEM certificate", field, namespace, name)
		}
		access.RootCAs = pool
	}
	if crt, key := secret.Data["tls.crt"], secret.Data["tls.key"]; len(crt) > 0 && len(key) > 0 {
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return fmt.Errorf("%s: tls.crt/tls.key in Secret %s/%s do not form a key pair", field, namespace, name)
		}
		access.ClientCert = &pair
	}
	return nil
}

// registrySecret reads the Secret field names; fix says how to create it.
func (r *Resolver) registrySecret(ctx context.Context, field, namespace, name, fix string) (*corev1.Secret, error) {
	var secret corev1.Secret
	if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s: Secret %s/%s does not exist; %s, or drop %s", field, namespace, name, fix, field)
		}
		return nil, fmt.Errorf("%s: cannot read Secret %s/%s: %w", field, namespace, name, err)
	}
	return &secret, nil
}

// insecureRegistry tells whether the host of an oci:// URL was configured
// as a plain-HTTP registry (--insecure-registry).
func (r *Resolver) insecureRegistry(url string) bool {
	return slices.Contains(r.InsecureRegistries, providerplan.RegistryHost(url))
}

// accessHint is what a preflight refusal by the registry adds so that it
// names what to fix on the provider's side: for refused credentials, the
// Secret of secretRef (or that there is none); for a certificate of an
// unknown authority, the Secret of certSecretRef (or that there is none);
// for a registry without TLS, the insecure field.
// It is "" for other errors, and for a provider the catalog gives the URL
// of (its access is the manager's flags). It names Secrets, never their
// content.
func accessHint(q *query, err error) string {
	field, access := q.accessField, q.access
	if access == nil {
		return ""
	}
	ns := q.namespace
	var refused *artifact.AuthError
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.As(err, &refused) && access.SecretRef != nil:
		return fmt.Sprintf("; the credentials come from Secret %s/%s (%s.secretRef): update it with credentials the registry accepts, e.g. after a password rotation",
			ns, access.SecretRef.Name, field)
	case errors.As(err, &refused):
		return fmt.Sprintf("; %s.secretRef is not set: name a kubernetes.io/dockerconfigjson Secret with credentials for the registry", field)
	case errors.As(err, &unknownCA) && access.CertSecretRef != nil:
		return fmt.Sprintf("; the registry's certificate is not signed by the CA in ca.crt of Secret %s/%s (%s.certSecretRef): put the CA that signed it there",
			ns, access.CertSecretRef.Name, field)
	case errors.As(err, &unknownCA):
		return fmt.Sprintf("; %s.certSecretRef is not set, so only the system's CAs are trusted: name a Secret with the registry's CA in ca.crt", field)
	case artifact.AnswersPlainHTTP(err) && !access.Insecure:
		return fmt.Sprintf("; the registry speaks plain HTTP, without TLS: set %s.insecure: true to reach it over plain HTTP (Flux's source then fetches that way too)", field)
	}
	return ""
}
