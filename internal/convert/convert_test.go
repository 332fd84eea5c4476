package convert

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/kustomize"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// convertOne decodes and converts a single operator CR.
func convertOne(t *testing.T, doc string) Converted {
	t.Helper()
	docs, err := Decode("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out := Convert(docs)
	if len(out) != 1 || out[0].Object == nil {
		t.Fatalf("want one converted object, got %+v", out)
	}
	return out[0]
}

const awsHead = "apiVersion: operator.cluster.x-k8s.io/v1alpha2\nkind: InfrastructureProvider\nmetadata:\n  name: aws\n  namespace: capa-system\nspec:\n  version: v2.10.0\n"

// TestConvertManager covers the manager fields the operator's docs do not
// show, each against the flag the operator's component customizer passes.
func TestConvertManager(t *testing.T) {
	c := convertOne(t, awsHead+`  manager:
    verbosity: 4
    syncPeriod: 90.4s
    cacheNamespace: tenant-a
    gracefulShutDown: 30s
    profilerAddress: localhost:6060
    leaderElection:
      leaderElect: true
      resourceName: capa-leader
      resourceNamespace: capa-system
      leaseDuration: 15s
      renewDeadline: 10s
      retryPeriod: 2s
      resourceLock: leases
    controller:
      groupKindConcurrency:
        AWSCluster: 7
      recoverPanic: true
    metrics:
      diagnosticsAddress: ":8443"
      insecureDiagnostics: true
    health:
      healthProbeBindAddress: ":9440"
      readinessEndpointName: readyz
    webhook:
      port: 9443
      certDir: /certs
      host: 0.0.0.0
    featureGates:
      MachinePool: true
    additionalArgs:
      "--aws-region": eu-west-1
      "--v": "9"
      bare: x
`)
	m := c.Object.GetSpec().Manager
	verbosity := int32(4)
	want := &v1alpha1.ManagerSpec{
		FeatureGates:           map[string]bool{"MachinePool": true},
		Verbosity:              &verbosity,
		MetricsBindAddress:     ":8443",
		HealthProbeBindAddress: ":9440",
		AdditionalArgs: map[string]string{
			"awscluster-concurrency":      "7",
			"namespace":                   "tenant-a",
			"profiler-address":            "localhost:6060",
			"leader-elect":                "true",
			"leader-election-id":          "capa-system/capa-leader",
			"leader-elect-lease-duration": "15s",
			"leader-elect-renew-deadline": "10s",
			"leader-elect-retry-period":   "2s",
			"insecure-diagnostics":        "true",
			"webhook-port":                "9443",
			"webhook-cert-dir":            "/certs",
			"webhook-host":                "0.0.0.0",
			"aws-region":                  "eu-west-1",
		},
	}
	if m == nil || m.SyncPeriod == nil || m.SyncPeriod.Duration != 90*time.Second {
		t.Fatalf("syncPeriod: want 90s (rounded to seconds, as the operator passes it), got %+v", m)
	}
	m.SyncPeriod = nil
	if !reflect.DeepEqual(m, want) {
		t.Errorf("spec.manager:\n got %+v\nwant %+v", m, want)
	}
	for _, f := range []struct {
		sev         Severity
		field, text string
	}{
		{Attention, "spec.manager.additionalArgs[--v]", "spec.manager.verbosity sets too"},
		{Attention, "spec.manager.additionalArgs[bare]", "bare argument"},
		{Attention, "spec.manager.health.readinessEndpointName", "path: /readyz"},
		{Note, "spec.manager.gracefulShutDown", "dropped"},
		{Note, "spec.manager.controller.recoverPanic", "dropped"},
		{Note, "spec.manager.leaderElection.resourceLock", "dropped"},
		{Note, "spec.manager.cacheNamespace", "only namespace tenant-a"},
	} {
		if !hasFinding(c, f.sev, f.field, f.text) {
			t.Errorf("want %s on %s mentioning %q, got:\n%s", f.sev, f.field, f.text, findingsText(c))
		}
	}
}

// A sync period under Capwright's floor (1m) is raised to it, saying so:
// the API server would refuse the converted provider otherwise.
func TestConvertRaisesAShortSyncPeriod(t *testing.T) {
	c := convertOne(t, awsHead+"  manager:\n    syncPeriod: 30s\n")
	if m := c.Object.GetSpec().Manager; m == nil || m.SyncPeriod == nil || m.SyncPeriod.Duration != time.Minute {
		t.Fatalf("syncPeriod: want 1m, got %+v", m)
	}
	if !hasFinding(c, Note, "spec.manager.syncPeriod", "raised from 30s to 1m") {
		t.Errorf("want a note on spec.manager.syncPeriod, got:\n%s", findingsText(c))
	}
}

// TestConvertManagerWinsOverContainerArgs: the operator applies
// spec.manager after spec.deployment; Capwright refuses a flag set twice.
func TestConvertManagerWinsOverContainerArgs(t *testing.T) {
	c := convertOne(t, awsHead+`  manager:
    verbosity: 2
    featureGates:
      MachinePool: true
    additionalArgs:
      --awscluster-concurrency: "5"
  deployment:
    containers:
    - name: manager
      args:
        --v: "7"
        --feature-gates: MachinePool=false,EKS=true
        --awscluster-concurrency: "3"
        --awsmachine-concurrency: "4"
`)
	s := c.Object.GetSpec()
	if got := s.Deployment.Containers[0].Args; !reflect.DeepEqual(got, map[string]string{"awsmachine-concurrency": "4"}) {
		t.Errorf("container args: want only the one spec.manager does not set, got %v", got)
	}
	if got := s.Manager.FeatureGates; !reflect.DeepEqual(got, map[string]bool{"MachinePool": true, "EKS": true}) {
		t.Errorf("feature gates: want the container's merged under spec.manager's, got %v", got)
	}
	if *s.Manager.Verbosity != 2 || s.Manager.AdditionalArgs["awscluster-concurrency"] != "5" {
		t.Errorf("spec.manager lost its values: %+v", s.Manager)
	}
	if !hasFinding(c, Note, "spec.deployment.containers[0].args[v]", "applied spec.manager last") {
		t.Errorf("the dropped --v is not reported:\n%s", findingsText(c))
	}
}

func TestConvertDeploymentEdges(t *testing.T) {
	c := convertOne(t, awsHead+`  deployment:
    tolerations: []
    replicas: 0
  additionalDeployments:
    capa-eks-controller:
      deployment:
        replicas: 2
`)
	d := c.Object.GetSpec().Deployment
	if d.Replicas == nil || *d.Replicas != 0 || d.Tolerations != nil {
		t.Errorf("spec.deployment: want replicas 0 and no tolerations, got %+v", d)
	}
	for _, field := range []string{"spec.deployment.tolerations", "spec.additionalDeployments[capa-eks-controller]"} {
		if !hasFinding(c, Attention, field, "") {
			t.Errorf("no attention finding on %s:\n%s", field, findingsText(c))
		}
	}
}

func TestConvertSources(t *testing.T) {
	for _, tc := range []struct {
		name, fetch string
		want        *v1alpha1.ProviderSource
		field, text string
	}{
		{
			name:  "clusterctl URL naming another version",
			fetch: "url: https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/v2.9.0/infrastructure-components.yaml",
			want:  &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml"}},
			field: "spec.fetchConfig.url", text: "names version v2.9.0",
		},
		{
			name:  "download link naming another version",
			fetch: "url: https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/download/v2.9.0/infrastructure-components.yaml",
			want:  &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml"}},
			field: "spec.fetchConfig.url", text: "names version v2.9.0",
		},
		{
			name:  "GitLab package",
			fetch: "url: https://gitlab.example.com/api/v4/projects/infra%2Fcapa/packages/generic/capa/latest/infrastructure-components.yaml",
			want:  &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: "https://gitlab.example.com/api/v4/projects/infra%2Fcapa/packages/generic/capa/latest/infrastructure-components.yaml"}},
			field: "spec.fetchConfig.url", text: "secretRef",
		},
		{
			name:  "OCI with another tag and a port",
			fetch: "oci: registry.example.com:5000/capi/capa:v2.9.0",
			want:  &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://registry.example.com:5000/capi/capa"}}},
			field: "spec.fetchConfig.oci", text: "names tag v2.9.0",
		},
		{
			name:  "OCI without a tag",
			fetch: "oci: registry.example.com/capi/capa",
			want:  &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://registry.example.com/capi/capa"}}},
			field: "spec.fetchConfig.oci", text: "oci://registry.example.com/capi/capa:v2.10.0",
		},
		{
			name:  "plain HTTP URL",
			fetch: "url: http://releases.example.com/capa/latest/infrastructure-components.yaml",
			want:  &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: "http://releases.example.com/capa/latest/infrastructure-components.yaml"}},
			field: "spec.fetchConfig.url", text: "plain HTTP",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := convertOne(t, awsHead+"  fetchConfig:\n    "+tc.fetch+"\n")
			if got := c.Object.GetSpec().Source; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spec.source:\n got %+v\nwant %+v", got, tc.want)
			}
			found := false
			for _, f := range c.Findings {
				found = found || (f.Field == tc.field && strings.Contains(f.Message, tc.text))
			}
			if !found {
				t.Errorf("want a finding on %s mentioning %q, got:\n%s", tc.field, tc.text, findingsText(c))
			}
		})
	}
}

func TestConvertCatalogMiss(t *testing.T) {
	c := convertOne(t, strings.Replace(awsHead, "name: aws", "name: talos", 1))
	if c.Object.GetSpec().Source != nil || !hasFinding(c, Attention, "spec.fetchConfig", "no infrastructure provider named \"talos\"") {
		t.Errorf("a provider the catalog lacks needs a source:\n%s", findingsText(c))
	}
}

func TestConvertVersionFromStatus(t *testing.T) {
	base := "apiVersion: operator.cluster.x-k8s.io/v1alpha2\nkind: CoreProvider\nmetadata:\n  name: cluster-api\n  namespace: capi-system\n"
	c := convertOne(t, base+"spec:\n  version: v1.14.2\nstatus:\n  installedVersion: v1.13.6\n")
	if c.Object.GetSpec().Version != "v1.14.2" || !hasFinding(c, Attention, "spec.version", "v1.13.6 is installed") {
		t.Errorf("an unfinished upgrade must be reported:\n%s", findingsText(c))
	}
	c = convertOne(t, base+"status:\n  installedVersion: v1.13.6\n")
	if c.Object.GetSpec().Version != "v1.13.6" || NeedAttention(c.Findings) {
		t.Errorf("no spec.version: want the installed one, without attention; got %q:\n%s", c.Object.GetSpec().Version, findingsText(c))
	}
}

func TestConvertPatchesEdges(t *testing.T) {
	c := convertOne(t, awsHead+`  manifestPatches:
  - |
    kind: Deployment
    metadata:
      name: capa-controller-manager
  - |
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: capa-controller-manager
    spec:
      template:
        spec:
          containers:
          - name: manager
            imagePullPolicy: Always
  patches:
  - patch: |
      - op: remove
        path: /metadata/labels/foo
  - patch: |
      metadata:
        labels:
          team: a
    target:
      labelSelector: cluster.x-k8s.io/provider=infrastructure-aws
`)
	got := c.Object.GetSpec().Patches
	wantTargets := []*kustomize.Selector{
		{Kind: "Deployment", Name: "capa-controller-manager"},
		{},
		{LabelSelector: "cluster.x-k8s.io/provider=infrastructure-aws"},
	}
	if len(got) != len(wantTargets) {
		t.Fatalf("want %d patches (the one without apiVersion left out), got %+v", len(wantTargets), got)
	}
	for i, want := range wantTargets {
		if !reflect.DeepEqual(got[i].Target, want) {
			t.Errorf("patch %d target: got %+v, want %+v", i, got[i].Target, want)
		}
	}
	for _, field := range []string{"spec.manifestPatches[0]", "spec.manifestPatches[1]", "spec.patches", "spec.patches[0].target", "spec.patches[1].target.labelSelector"} {
		if !hasFinding(c, Attention, field, "") {
			t.Errorf("no attention finding on %s:\n%s", field, findingsText(c))
		}
	}
	if !hasFinding(c, Attention, "spec.manifestPatches[1]", "holds a list") {
		t.Errorf("a merge patch with a list must be reported:\n%s", findingsText(c))
	}
}

func TestDecodeReportsUnknownFieldsAndReadsLists(t *testing.T) {
	docs, err := Decode("list.yaml", []byte(`apiVersion: v1
kind: List
items:
- apiVersion: operator.cluster.x-k8s.io/v1alpha2
  kind: BootstrapProvider
  metadata:
    name: kubeadm
    namespace: capi-kubeadm-bootstrap-system
    uid: 0f1e
    finalizers: [provider.cluster.x-k8s.io]
  spec:
    version: v1.14.2
    deployment:
      replicas: 1
      priorityClassName: high
    fetchconfig:
      url: https://example.com
- apiVersion: operator.cluster.x-k8s.io/v1alpha2
  kind: BootstrapProvider
  metadata:
    name: kubeadm
    namespace: other
  spec:
    version: v1.14.2
`))
	if err != nil {
		t.Fatal(err)
	}
	out := Convert(docs)
	if len(out) != 2 {
		t.Fatalf("want the List's 2 items, got %d", len(out))
	}
	first := out[0]
	for _, field := range []string{"spec.deployment.priorityClassName", "spec.fetchconfig"} {
		if !hasFinding(first, Attention, field, "unknown field") {
			t.Errorf("unknown field %s not reported:\n%s", field, findingsText(first))
		}
	}
	if first.Object.GetUID() != "" || len(first.Object.GetFinalizers()) > 0 {
		t.Errorf("server and operator metadata must not be copied: %+v", first.Object)
	}
	if !hasFinding(out[1], Attention, "metadata.name", "DuplicateProvider") {
		t.Errorf("the second kubeadm bootstrap provider must be reported:\n%s", findingsText(out[1]))
	}
	if _, err := Decode("bad.yaml", []byte("a: [b\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("bad YAML: want an error naming the file, got %v", err)
	}
	if _, err := Decode("bad.yaml", []byte("just: values\n")); err == nil || !strings.Contains(err.Error(), "no apiVersion or kind") {
		t.Errorf("not an object: want an error, got %v", err)
	}
}

func TestEncodeHeadsTheFileWithWhatNeedsAttention(t *testing.T) {
	c := convertOne(t, awsHead+"  fetchConfig:\n    oci: registry.example.com/capi/capa\n")
	out, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{
		"# Converted by capwright convert from operator.cluster.x-k8s.io/v1alpha2 InfrastructureProvider capa-system/aws (test.yaml, document 1).",
		"# Needs attention before it is applied (see the report): spec.fetchConfig.oci.",
		"apiVersion: providers.capwright.io/v1alpha1\nkind: InfrastructureProvider\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "status") || strings.Contains(text, "creationTimestamp") {
		t.Errorf("output carries status or server metadata:\n%s", text)
	}
}
