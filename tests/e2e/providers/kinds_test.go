package providers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// testExtensionVersion is the release of Cluster API's test runtime
// extension that `make fixtures` renders (tests/tools/capitest.go).
const testExtensionVersion = "v1.14.2"

// otherKinds installs, side by side and from OCI artifacts in the upstream
// layout, one provider of each kind the kubeadm family and CAPA leave out,
// with the core provider of the calling test Ready:
//   - RuntimeExtensionProvider test-extension: Cluster API's own test
//     runtime extension, rendered from its config tree in the
//     sigs.k8s.io/cluster-api/test module at v1.14.2 (a Deployment serving
//     its hooks behind a Service, a cert-manager Certificate and Issuer,
//     RBAC), with the metadata.yaml Cluster API's e2e installs it with;
//   - IPAMProvider in-cluster and AddonProvider helm: shaped after the
//     in-cluster IPAM provider and the Helm add-on provider by Cluster
//     API's provider contract (CRDs of their API groups carrying the
//     contract label, RBAC, a controller Deployment, metadata.yaml),
//     because no release of either can be fetched here: neither
//     sigs.k8s.io/cluster-api-ipam-provider-in-cluster,
//     github.com/metal3-io/ip-address-manager nor the Helm add-on
//     provider's module is served by the module proxy.
//
// Each must become Ready with its controller Deployment available and the
// installed version, contract and artifact folded into its status; then
// all three are deleted (also when the test fails).
func otherKinds(t *testing.T, ctx context.Context, c client.Client) {
	extension := map[string][]byte{
		"runtime-extension-components.yaml": readFixture(t, "capi-test-extension", testExtensionVersion, "runtime-extension-components.yaml"),
		"metadata.yaml":                     readFixture(t, "capi-test-extension", testExtensionVersion, "metadata.yaml"),
	}
	ipam := contractShaped("capi-ipam-in-cluster-system", "capi-ipam-in-cluster", "ipam.cluster.x-k8s.io", "InClusterIPPool", "inclusterippools", "v1alpha2")
	addon := contractShaped("caaph-system", "caaph", "addons.cluster.x-k8s.io", "HelmChartProxy", "helmchartproxies", "v1alpha1")
	all := []struct {
		obj        v1alpha1.Provider
		version    string
		files      map[string][]byte
		deployment string
		// crd is the provider's API the contract label must be on.
		crd string
	}{
		{&v1alpha1.RuntimeExtensionProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "test-extension-system", Name: "test-extension"}},
			testExtensionVersion, extension, "test-extension-controller-manager", ""},
		{&v1alpha1.IPAMProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-ipam-in-cluster-system", Name: "in-cluster"}},
			"v0.1.0", map[string][]byte{"ipam-components.yaml": ipam, "metadata.yaml": testMetadata("v1beta2")},
			"capi-ipam-in-cluster-controller-manager", "inclusterippools.ipam.cluster.x-k8s.io"},
		{&v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "caaph-system", Name: "helm"}},
			"v0.1.0", map[string][]byte{"addon-components.yaml": addon, "metadata.yaml": testMetadata("v1beta2")},
			"caaph-controller-manager", "helmchartproxies.addons.cluster.x-k8s.io"},
	}
	start := time.Now()
	for _, p := range all {
		ensureNamespace(t, ctx, c, p.obj.GetNamespace())
		url := publishFiles(t, ctx, p.obj.ProviderType(), p.obj.GetName(), p.version, p.files)
		*p.obj.GetSpec() = v1alpha1.ProviderSpec{Version: p.version, Source: source(url)}
		if err := c.Create(ctx, p.obj.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	// Deleted together, whatever happens: a provider left installed
	// would hold on to its Certificates and namespace.
	defer func() {
		for _, p := range all {
			if err := c.Delete(ctx, p.obj.(client.Object)); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
		for _, p := range all {
			waitGone(t, ctx, c, p.obj.(client.Object), 3*time.Minute)
		}
	}()
	// Created together, they are reconciled side by side: waiting for
	// each in turn waits for the slowest.
	for _, p := range all {
		waitCondition(t, ctx, c, p.obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	}
	t.Logf("runtime extension, IPAM and add-on providers Ready %s after their CRs were applied", time.Since(start).Round(time.Millisecond))
	for _, p := range all {
		name := fmt.Sprintf("%T %s/%s", p.obj, p.obj.GetNamespace(), p.obj.GetName())
		status := p.obj.GetStatus()
		if status.InstalledVersion != p.version || status.Contract != "v1beta2" {
			t.Errorf("%s: installedVersion %q contract %q, want %s v1beta2", name, status.InstalledVersion, status.Contract, p.version)
		}
		for _, cond := range []string{v1alpha1.InstalledCondition, v1alpha1.AvailableCondition} {
			if got := conditionStatus(p.obj, cond); got != metav1.ConditionTrue {
				t.Errorf("%s: %s is %q, want True", name, cond, got)
			}
		}
		if status.Artifact == nil || !strings.HasPrefix(status.Artifact.Revision, p.version+"@sha256:") {
			t.Fatalf("%s: artifact %+v, want revision %s@sha256:…", name, status.Artifact, p.version)
		}
		var repo sourcev1.OCIRepository
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.obj.GetNamespace(), Name: p.obj.ProviderType() + "-" + p.obj.GetName()}, &repo); err != nil {
			t.Fatal(err)
		}
		if repo.Spec.Reference == nil || repo.Spec.Reference.Digest != status.Artifact.Digest {
			t.Errorf("%s: OCIRepository is not pinned to the checked digest %s: %+v", name, status.Artifact.Digest, repo.Spec.Reference)
		}
		assertDeploymentAvailable(t, ctx, c, client.ObjectKey{Namespace: p.obj.GetNamespace(), Name: p.deployment})
		if p.crd != "" {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: p.crd}, &crd); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if crd.Labels["cluster.x-k8s.io/provider"] != labelValue(p.obj) || crd.Labels["cluster.x-k8s.io/v1beta2"] == "" {
				t.Errorf("%s: CRD %s carries %v, want clusterctl's provider label %s and the v1beta2 contract label", name, p.crd, crd.Labels, labelValue(p.obj))
			}
		}
	}
	// The runtime extension's serving certificate came from its own
	// Certificate, in the namespace it was installed into.
	if err := c.Get(ctx, client.ObjectKey{Namespace: "test-extension-system", Name: "test-extension-webhook-service-cert"},
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}); err != nil {
		t.Errorf("the test extension's serving Secret: %v", err)
	}
}

func conditionStatus(p v1alpha1.Provider, condType string) metav1.ConditionStatus {
	for _, c := range p.GetConditions() {
		if c.Type == condType {
			return c.Status
		}
	}
	return ""
}

// contractShaped is the components file of a provider shaped by Cluster
// API's provider contract: its namespace, one CRD of its API group (kind
// and plural, at version, with the v1beta2 contract label naming it), a
// ServiceAccount bound to a ClusterRole over that group and Cluster
// API's, and the controller Deployment <prefix>-controller-manager.
// Capwright labels each object as clusterctl does.
func contractShaped(namespace, prefix, group, kind, plural, version string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[4]s.%[3]s
  labels:
    cluster.x-k8s.io/v1beta2: %[6]s
spec:
  group: %[3]s
  names:
    kind: %[5]s
    listKind: %[5]sList
    plural: %[4]s
    singular: %[7]s
  scope: Namespaced
  versions:
  - name: %[6]s
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[2]s-manager
  namespace: %[1]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %[2]s-manager-role
rules:
- apiGroups: ["%[3]s"]
  resources: ["%[4]s", "%[4]s/status"]
  verbs: ["get", "list", "watch", "update", "patch"]
- apiGroups: ["cluster.x-k8s.io"]
  resources: ["clusters"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[2]s-manager-rolebinding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: %[2]s-manager-role
subjects:
- kind: ServiceAccount
  name: %[2]s-manager
  namespace: %[1]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s-controller-manager
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {control-plane: %[2]s-controller-manager}
  template:
    metadata:
      labels: {control-plane: %[2]s-controller-manager}
    spec:
      serviceAccountName: %[2]s-manager
      containers:
      - name: manager
        image: registry.example.com/%[2]s/manager:v0.1.0
        args: ["--leader-elect", "--diagnostics-address=${CAPI_DIAGNOSTICS_ADDRESS:=:8443}"]
`, namespace, prefix, group, plural, kind, version, strings.ToLower(kind)))
}
