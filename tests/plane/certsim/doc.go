// Package certsim stands in for cert-manager in the local test plane.
//
// The plane runs a real kube-apiserver and Flux, but cert-manager's binaries
// cannot be built here. Real Cluster API provider manifests still contain
// cert-manager Issuers and Certificates and count on cert-manager's cainjector
// to fill caBundle fields, and Flux applies them with wait: true, so without
// something playing cert-manager's part they never become ready and their
// webhooks cannot be reached.
//
// certsim is not cert-manager. It simulates only what those manifests need,
// in the cert-manager.io/v1 shapes real cert-manager uses:
//
//   - Issuers and ClusterIssuers get a single Ready=True condition.
//   - Certificates get their spec.secretName Secret (kubernetes.io/tls, with
//     tls.crt, tls.key and ca.crt), issued for the spec's commonName,
//     dnsNames and ipAddresses by one ECDSA P-256 CA, and a Ready status with
//     notBefore, notAfter, renewalTime and revision. A Secret is reissued only
//     when it is missing, unusable, not verified by its own ca.crt, or names
//     other hosts than the spec.
//   - The CA is kept in the Secret kube-system/certsim-ca, so a restarted
//     simulator against the same etcd reuses it.
//   - Objects annotated with cert-manager.io/inject-ca-from or
//     cert-manager.io/inject-ca-from-secret get the CA bundle injected:
//     CustomResourceDefinitions with a Webhook conversion,
//     Validating- and MutatingWebhookConfigurations, and APIServices.
//
// Everything else cert-manager does (ACME, renewal, private key options,
// CertificateRequests, other issuer types, keystores…) is out of scope.
package certsim
