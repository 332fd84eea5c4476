package provider

import (
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
)

// accessHint is what a preflight refusal by the registry adds so that it
// names what to fix on the provider's side: for refused credentials, the
// Secret of secretRef (or that there is none); for a certificate of an
// unknown authority, the Secret of certSecretRef (or that there is none);
// for a registry without TLS, the insecure field.
// It is "" for other errors, and for a provider the catalog gives the URL
// of (its access is the manager's flags). It names Secrets, never their
// content.
func accessHint(obj v1alpha1.Provider, err error) string {
	field, access := registrySource(obj)
	if access == nil {
		return ""
	}
	ns := obj.GetNamespace()
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
