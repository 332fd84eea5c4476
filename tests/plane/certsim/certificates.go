package certsim

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	annotationCertificateName = "cert-manager.io/certificate-name"
	annotationIssuerName      = "cert-manager.io/issuer-name"
	annotationIssuerKind      = "cert-manager.io/issuer-kind"
)

// certificate is the part of a Certificate's spec certsim acts on.
type certificate struct {
	secretName string
	req        leafRequest
	issuerName string
	issuerKind string
	// labels and annotations come from spec.secretTemplate.
	labels      map[string]string
	annotations map[string]string
}

func readCertificate(obj *unstructured.Unstructured) (certificate, error) {
	var c certificate
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if c.secretName, _, _ = unstructured.NestedString(spec, "secretName"); c.secretName == "" {
		return c, errors.New("spec.secretName is empty")
	}
	c.req.commonName, _, _ = unstructured.NestedString(spec, "commonName")
	c.req.dnsNames, _, _ = unstructured.NestedStringSlice(spec, "dnsNames")
	ips, _, _ := unstructured.NestedStringSlice(spec, "ipAddresses")
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return c, fmt.Errorf("spec.ipAddresses: %q is not an IP address", s)
		}
		c.req.ips = append(c.req.ips, ip)
	}
	c.issuerName, _, _ = unstructured.NestedString(spec, "issuerRef", "name")
	if c.issuerKind, _, _ = unstructured.NestedString(spec, "issuerRef", "kind"); c.issuerKind == "" {
		c.issuerKind = "Issuer"
	}
	c.labels, _, _ = unstructured.NestedStringMap(spec, "secretTemplate", "labels")
	c.annotations, _, _ = unstructured.NestedStringMap(spec, "secretTemplate", "annotations")
	return c, nil
}

// caSources records, for one pass, where CA injection finds each CA bundle.
type caSources struct {
	// certSecrets maps a Certificate's namespace/name to its Secret's.
	certSecrets map[string]string
	// secretCAs maps a Secret's namespace/name to its base64 ca.crt, "" for none.
	secretCAs map[string]string
}

func (s *simulator) reconcileCertificates(ctx context.Context) caSources {
	src := caSources{certSecrets: map[string]string{}, secretCAs: map[string]string{}}
	items := s.list(ctx, gvrCertificate)
	for i := range items {
		obj := &items[i]
		key := objectKey("certificate", obj)
		c, err := readCertificate(obj)
		if err != nil {
			s.problem(key, "%s: %v", key, err)
			continue
		}
		ns := obj.GetNamespace()
		src.certSecrets[ns+"/"+obj.GetName()] = ns + "/" + c.secretName
		ca, err := s.reconcileCertificate(ctx, key, obj, c)
		if err != nil {
			if !apierrors.IsConflict(err) {
				s.problem(key, "%s: %v", key, err)
			}
			continue
		}
		src.secretCAs[ns+"/"+c.secretName] = ca
		s.resolved(key)
	}
	return src
}

// reconcileCertificate makes sure obj's Secret holds a usable certificate
// and its status says so. It returns the Secret's base64 ca.crt.
func (s *simulator) reconcileCertificate(ctx context.Context, key string, obj *unstructured.Unstructured, c certificate) (string, error) {
	now := s.now()
	secrets := s.client.Resource(gvrSecret).Namespace(obj.GetNamespace())
	sec, err := secrets.Get(ctx, c.secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sec = nil
	} else if err != nil {
		return "", fmt.Errorf("getting secret %s: %w", c.secretName, err)
	}

	var leaf *x509.Certificate
	why := "secret missing"
	if sec != nil {
		if leaf, err = checkLeaf(secretBytes(sec, "tls.crt"), secretBytes(sec, "tls.key"), secretBytes(sec, "ca.crt"), c.req, now); err != nil {
			why = err.Error()
		}
	}
	var data map[string]string
	if leaf == nil {
		certPEM, keyPEM, issued, err := s.ca.issue(c.req, now)
		if err != nil {
			return "", err
		}
		leaf = issued
		data = map[string]string{"tls.crt": b64(certPEM), "tls.key": b64(keyPEM), "ca.crt": b64(s.ca.certPEM)}
	}

	if want := secretFor(sec, obj, c, data); want != nil {
		if sec == nil {
			sec, err = secrets.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		} else {
			sec, err = secrets.Update(ctx, want, metav1.UpdateOptions{FieldManager: fieldManager})
		}
		if err != nil {
			return "", fmt.Errorf("writing secret %s: %w", c.secretName, err)
		}
		if data != nil {
			s.logf("%s: issued secret %s (%s)", key, c.secretName, why)
		} else {
			s.logf("%s: updated metadata of secret %s", key, c.secretName)
		}
	}

	if setCertificateStatus(obj, leaf, data != nil, now) {
		if _, err := s.client.Resource(gvrCertificate).Namespace(obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return "", fmt.Errorf("updating status: %w", err)
		}
		rev, _, _ := unstructured.NestedInt64(obj.Object, "status", "revision")
		s.logf("%s: Ready (revision %d)", key, rev)
	}
	ca, _, _ := unstructured.NestedString(sec.Object, "data", "ca.crt")
	return ca, nil
}

// secretFor returns the Secret a Certificate wants, starting from the
// existing one (nil if none) and with data (base64) when it was (re)issued;
// it returns nil when the existing Secret is already as wanted.
func secretFor(existing, cert *unstructured.Unstructured, c certificate, data map[string]string) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"type":       "kubernetes.io/tls",
		"metadata":   map[string]any{"name": c.secretName, "namespace": cert.GetNamespace()},
	}}
	if existing != nil {
		// An existing Secret keeps its type, which is immutable.
		out = existing.DeepCopy()
	}
	if labels := out.GetLabels(); len(labels)+len(c.labels) > 0 {
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, c.labels)
		out.SetLabels(labels)
	}
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, c.annotations)
	annotations[annotationCertificateName] = cert.GetName()
	annotations[annotationIssuerName] = c.issuerName
	annotations[annotationIssuerKind] = c.issuerKind
	out.SetAnnotations(annotations)
	for k, v := range data {
		_ = unstructured.SetNestedField(out.Object, v, "data", k)
	}
	if existing != nil && reflect.DeepEqual(existing.Object, out.Object) {
		return nil
	}
	return out
}

// setCertificateStatus sets the status cert-manager gives an issued
// Certificate and reports whether that changed anything.
func setCertificateStatus(obj *unstructured.Unstructured, leaf *x509.Certificate, issued bool, now time.Time) bool {
	before, _, _ := unstructured.NestedMap(obj.Object, "status")
	setReady(obj, "Ready", "Certificate is up to date and has not expired", now)
	revision, _, _ := unstructured.NestedInt64(obj.Object, "status", "revision")
	if issued {
		revision++
	}
	revision = max(revision, 1)
	// cert-manager's default renewBefore is a third of the duration.
	renewal := leaf.NotBefore.Add(leaf.NotAfter.Sub(leaf.NotBefore) * 2 / 3)
	for field, value := range map[string]any{
		"notBefore":   rfc3339(leaf.NotBefore),
		"notAfter":    rfc3339(leaf.NotAfter),
		"renewalTime": rfc3339(renewal),
		"revision":    revision,
	} {
		_ = unstructured.SetNestedField(obj.Object, value, "status", field)
	}
	after, _, _ := unstructured.NestedMap(obj.Object, "status")
	return !reflect.DeepEqual(before, after)
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
