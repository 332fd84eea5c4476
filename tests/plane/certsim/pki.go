package certsim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

const (
	caSecretNamespace = "kube-system"
	caSecretName      = "certsim-ca"
	caValidity        = 10 * 365 * 24 * time.Hour
	leafValidity      = 365 * 24 * time.Hour
)

// errCorruptCA marks a kube-system/certsim-ca Secret that exists but holds no
// usable CA: certsim will not overwrite it, so it cannot go on.
var errCorruptCA = errors.New("secret " + caSecretNamespace + "/" + caSecretName + " holds no usable CA; delete it to have a new one created")

// authority is certsim's one signing CA.
type authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

// loadOrCreateCA loads the CA from its Secret, or creates both.
func loadOrCreateCA(ctx context.Context, client dynamic.Interface, now time.Time) (*authority, error) {
	secrets := client.Resource(gvrSecret).Namespace(caSecretNamespace)
	sec, err := secrets.Get(ctx, caSecretName, metav1.GetOptions{})
	if err == nil {
		certPEM, keyPEM := secretBytes(sec, "tls.crt"), secretBytes(sec, "tls.key")
		ca, err := parseAuthority(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errCorruptCA, err)
		}
		return ca, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("getting secret %s/%s: %w", caSecretNamespace, caSecretName, err)
	}
	ca, keyPEM, err := newAuthority(now)
	if err != nil {
		return nil, err
	}
	sec = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"type":       "kubernetes.io/tls",
		"metadata": map[string]any{
			"name":      caSecretName,
			"namespace": caSecretNamespace,
			"labels":    map[string]any{"app.kubernetes.io/managed-by": fieldManager},
		},
		"data": map[string]any{
			"tls.crt": b64(ca.certPEM),
			"tls.key": b64(keyPEM),
		},
	}}
	// On AlreadyExists another certsim won the race; the next pass loads its CA.
	if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
		return nil, fmt.Errorf("creating secret %s/%s: %w", caSecretNamespace, caSecretName, err)
	}
	return ca, nil
}

func newAuthority(now time.Time) (*authority, []byte, error) {
	certPEM, keyPEM, _, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "certsim CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CA: %w", err)
	}
	ca, err := parseAuthority(certPEM, keyPEM)
	return ca, keyPEM, err
}

func parseAuthority(certPEM, keyPEM []byte) (*authority, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing CA key pair: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !pair.Leaf.IsCA {
		return nil, errors.New("CA is not an ECDSA certificate authority")
	}
	return &authority{cert: pair.Leaf, certPEM: certPEM, key: key}, nil
}

// leafRequest is what a Certificate asks for.
type leafRequest struct {
	commonName string
	dnsNames   []string
	ips        []net.IP
}

// issue returns tls.crt and tls.key for a one-year serving and client
// certificate signed by the authority, and the certificate itself.
func (a *authority) issue(req leafRequest, now time.Time) (certPEM, keyPEM []byte, leaf *x509.Certificate, err error) {
	return newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: req.commonName},
		DNSNames:    req.dnsNames,
		IPAddresses: req.ips,
		NotBefore:   now,
		NotAfter:    now.Add(leafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, a)
}

// newCert makes a P-256 key and a certificate for it from tmpl, signed by
// parent, or self-signed when parent is nil.
func newCert(tmpl *x509.Certificate, parent *authority) (certPEM, keyPEM []byte, cert *x509.Certificate, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("generating key: %w", err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, nil, nil, fmt.Errorf("generating serial number: %w", err)
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, key.Public(), signerKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("signing certificate: %w", err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		return nil, nil, nil, fmt.Errorf("parsing signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), cert, nil
}

// checkLeaf returns the certificate in a Secret's tls.crt when it is usable
// as is: it pairs with tls.key, its ca.crt verifies it, it is valid now and
// it names exactly what req does. Otherwise it says why not.
func checkLeaf(certPEM, keyPEM, caPEM []byte, req leafRequest, now time.Time) (*x509.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("unusable key pair: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate in ca.crt")
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			opts.Intermediates.AddCert(c)
		}
	}
	if _, err := pair.Leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("not verified by ca.crt: %w", err)
	}
	if pair.Leaf.Subject.CommonName != req.commonName || !sameSet(pair.Leaf.DNSNames, req.dnsNames) ||
		!sameSet(ipStrings(pair.Leaf.IPAddresses), ipStrings(req.ips)) {
		return nil, errors.New("names differ from the spec")
	}
	return pair.Leaf, nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// secretBytes returns the decoded value of key in a Secret's data, or nil.
func secretBytes(sec *unstructured.Unstructured, key string) []byte {
	s, _, _ := unstructured.NestedString(sec.Object, "data", key)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}
