package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
)

// registryAccess builds the credentials and TLS settings for the provider's
// registry from the same Secrets its OCIRepository uses. Secret contents
// never appear in errors.
func (r *Reconciler) registryAccess(ctx context.Context, obj v1alpha1.Provider) (artifact.Access, error) {
	access := artifact.Access{UserAgent: "capwright"}
	url, err := catalog.ArtifactURL(obj, r.Mirrors)
	if err != nil {
		return access, err
	}
	access.PlainHTTP = r.insecureRegistry(url)
	src := obj.GetSpec().Source
	if src == nil || src.OCI == nil {
		return access, nil
	}
	oci := src.OCI
	access.PlainHTTP = access.PlainHTTP || oci.Insecure
	if oci.SecretRef != nil {
		host := strings.SplitN(strings.TrimPrefix(url, "oci://"), "/", 2)[0]
		user, pass, err := r.dockerCredentials(ctx, obj.GetNamespace(), oci.SecretRef, host)
		if err != nil {
			return access, err
		}
		access.Username, access.Password = user, pass
	}
	if oci.CertSecretRef != nil {
		var secret corev1.Secret
		if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: obj.GetNamespace(), Name: oci.CertSecretRef.Name}, &secret); err != nil {
			return access, fmt.Errorf("spec.source.oci.certSecretRef: reading Secret %s/%s: %w", obj.GetNamespace(), oci.CertSecretRef.Name, err)
		}
		if ca := secret.Data["ca.crt"]; len(ca) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return access, fmt.Errorf("spec.source.oci.certSecretRef: ca.crt in Secret %s/%s holds no PEM certificate", obj.GetNamespace(), oci.CertSecretRef.Name)
			}
			access.RootCAs = pool
		}
		if crt, key := secret.Data["tls.crt"], secret.Data["tls.key"]; len(crt) > 0 && len(key) > 0 {
			pair, err := tls.X509KeyPair(crt, key)
			if err != nil {
				return access, fmt.Errorf("spec.source.oci.certSecretRef: tls.crt/tls.key in Secret %s/%s do not form a key pair", obj.GetNamespace(), oci.CertSecretRef.Name)
			}
			access.ClientCert = &pair
		}
	}
	return access, nil
}

// dockerCredentials reads the entry for host from a dockerconfigjson
// Secret.
func (r *Reconciler) dockerCredentials(ctx context.Context, namespace string, ref *meta.LocalObjectReference, host string) (string, string, error) {
	var secret corev1.Secret
	if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: ref.Name}, &secret); err != nil {
		return "", "", fmt.Errorf("spec.source.oci.secretRef: reading Secret %s/%s: %w", namespace, ref.Name, err)
	}
	data := secret.Data[corev1.DockerConfigJsonKey]
	if len(data) == 0 {
		return "", "", fmt.Errorf("spec.source.oci.secretRef: Secret %s/%s has no %s key; create it with kubectl create secret docker-registry", namespace, ref.Name, corev1.DockerConfigJsonKey)
	}
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", "", fmt.Errorf("spec.source.oci.secretRef: Secret %s/%s does not hold valid dockerconfigjson", namespace, ref.Name)
	}
	for server, a := range cfg.Auths {
		if strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://") != host {
			continue
		}
		if a.Username != "" {
			return a.Username, a.Password, nil
		}
		decoded, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return "", "", fmt.Errorf("spec.source.oci.secretRef: the auth entry for %s in Secret %s/%s is not base64", host, namespace, ref.Name)
		}
		user, pass, _ := strings.Cut(string(decoded), ":")
		return user, pass, nil
	}
	return "", "", fmt.Errorf("spec.source.oci.secretRef: Secret %s/%s has no credentials for %s", namespace, ref.Name, host)
}

// insecureRegistry tells whether the host of an oci:// URL was configured
// as a plain-HTTP registry (--insecure-registry).
func (r *Reconciler) insecureRegistry(url string) bool {
	host := strings.SplitN(strings.TrimPrefix(url, "oci://"), "/", 2)[0]
	return slices.Contains(r.InsecureRegistries, host)
}
