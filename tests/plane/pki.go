package plane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certAuthority is a self-made CA that signs the plane's serving and client
// certificates. Keys are ECDSA P-256: quick to make, accepted by every
// component here.
type certAuthority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// keyPair is a PEM certificate and key, as components read them from disk.
type keyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

func newCertAuthority(commonName string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key for %s: %w", commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}, nil
}

// certRequest describes a leaf certificate. Client certificates carry the
// user in CommonName and groups in Organization, as the API server reads them.
type certRequest struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
}

func (ca *certAuthority) issue(req certRequest) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating key for %s: %w", req.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return keyPair{}, err
	}
	var usages []x509.ExtKeyUsage
	if req.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing certificate for %s: %w", req.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// writeFiles writes the pair as <base>.crt and <base>.key in dir.
func (kp keyPair) writeFiles(dir, base string) (certPath, keyPath string, err error) {
	certPath = filepath.Join(dir, base+".crt")
	keyPath = filepath.Join(dir, base+".key")
	if err := os.WriteFile(certPath, kp.CertPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, kp.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// writeServiceAccountKey writes an RSA key used both to sign and to verify
// service account tokens (kube-apiserver and kube-controller-manager).
func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating service account key: %w", err)
	}
	der := x509.MarshalPKCS1PrivateKey(key)
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}), 0o600)
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("generating certificate serial: %w", err)
	}
	return serial, nil
}

// CA is a certificate authority a test makes, e.g. to serve a registry
// over TLS (RegistryOptions.CA) or to stand for the wrong one.
type CA struct {
	ca *certAuthority
}

// NewCA makes a CA named commonName.
func NewCA(commonName string) (*CA, error) {
	ca, err := newCertAuthority(commonName)
	if err != nil {
		return nil, err
	}
	return &CA{ca: ca}, nil
}

// CertPEM is the CA's certificate, what a client trusts (a ca.crt).
func (c *CA) CertPEM() []byte { return c.ca.certPEM }

// servingCertificate issues a serving certificate for 127.0.0.1 and
// localhost, where the plane serves everything.
func (c *CA) servingCertificate() (tls.Certificate, error) {
	kp, err := c.ca.issue(certRequest{CommonName: "127.0.0.1", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
}
