package contract

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// cluster is the owning Cluster of every case: a topology with a version
// and two variables, one of them not a string.
func cluster() *clusterapi.Facts {
	return &clusterapi.Facts{Namespace: "team", Name: "alpha", UID: "uid-cluster", TopologyVersion: "v1.31.0",
		Variables: map[string]string{"region": "eu-1", "node-pools": `{"size":3}`}}
}

var mirrors = catalog.Mirrors{{From: "registry.example.com/charts", To: "mirror.example.com/charts"}}

func controlPlane(mutate func(*clustersv1alpha1.CapwrightControlPlane)) Facts {
	cp := &clustersv1alpha1.CapwrightControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-cp", UID: "uid-cp", Generation: 2},
		Spec: clustersv1alpha1.CapwrightControlPlaneSpec{
			Version: "v1.31.2",
			CapwrightControlPlaneResourceSpec: clustersv1alpha1.CapwrightControlPlaneResourceSpec{Backend: clustersv1alpha1.Backend{ServiceAccountName: "installer", Chart: &clustersv1alpha1.ChartBackend{
				OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/charts/hcp"},
				Version:             "1.2.3+build.1",
				Values: &apiextensionsv1.JSON{Raw: []byte(`{"cluster":"${CLUSTER_NAME}","namespace":"${CLUSTER_NAMESPACE}",` +
					`"version":"${KUBERNETES_VERSION}","region":"${TOPOLOGY_region}","pools":"${TOPOLOGY_node_pools}",` +
					`"zones":["${TOPOLOGY_region}-a",3,true],"cost":"$${NOT_A_VARIABLE}"}`)},
			}},
				StatusFrom: clustersv1alpha1.StatusFrom{APIVersion: "hcp.example.com/v1", Kind: "HostedControlPlane", Name: "${CLUSTER_NAME}"},
				Kubeconfig: clustersv1alpha1.KubeconfigSource{SecretName: "${CLUSTER_NAME}-admin-kubeconfig"},
			},
		},
	}
	if mutate != nil {
		mutate(cp)
	}
	f := controlPlaneFactsOf(cp)
	f.Cluster, f.Mirrors, f.Request, f.Resync = cluster(), mirrors, "now", 30*time.Second
	return f
}

func controlPlaneFactsOf(cp *clustersv1alpha1.CapwrightControlPlane) Facts {
	return Facts{Object: cp, Kind: clustersv1alpha1.ControlPlaneKind, Backend: &cp.Spec.Backend, StatusFrom: &cp.Spec.StatusFrom,
		Version: cp.Spec.Version, Kubeconfig: &cp.Spec.Kubeconfig}
}

func infrastructure(mutate func(*clustersv1alpha1.CapwrightCluster)) Facts {
	c := &clustersv1alpha1.CapwrightCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-infra", UID: "uid-infra", Generation: 1},
		Spec: clustersv1alpha1.CapwrightClusterSpec{CapwrightClusterResourceSpec: clustersv1alpha1.CapwrightClusterResourceSpec{
			Backend: &clustersv1alpha1.Backend{Interval: &metav1.Duration{Duration: 5 * time.Minute}, Kustomize: &clustersv1alpha1.KustomizeBackend{
				OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/backends/network", Insecure: true,
					Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
				Tag:        "v0.1.0",
				Path:       "./network",
				Substitute: map[string]string{"SUBNET": "${TOPOLOGY_region}-${CLUSTER_NAME}", "VERSION": "${KUBERNETES_VERSION}"},
			}},
			StatusFrom: &clustersv1alpha1.StatusFrom{APIVersion: "v1", Kind: "ConfigMap", Name: "${CLUSTER_NAME}-network"},
		}},
	}
	if mutate != nil {
		mutate(c)
	}
	f := clusterFactsOf(c)
	f.Cluster, f.Mirrors, f.Request, f.Resync = cluster(), mirrors, "", 30*time.Second
	return f
}

func clusterFactsOf(c *clustersv1alpha1.CapwrightCluster) Facts {
	return Facts{Object: c, Kind: clustersv1alpha1.ClusterKind, Backend: c.Spec.Backend, StatusFrom: c.Spec.StatusFrom, VersionOfTopology: true}
}

// TestPlan renders every backend kind, and every refusal, into a golden
// file: the Flux objects as they are applied, or the refusal.
func TestPlan(t *testing.T) {
	for name, f := range map[string]Facts{
		// The backends.
		"controlplane-chart": controlPlane(nil),
		"controlplane-kustomize": controlPlane(func(cp *clustersv1alpha1.CapwrightControlPlane) {
			cp.Spec.Backend.Chart = nil
			cp.Spec.Backend.Kustomize = &clustersv1alpha1.KustomizeBackend{
				OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: "oci://elsewhere.example.com/hcp"},
				Tag:                 "v2", Substitute: map[string]string{"POOLS": "${TOPOLOGY_node_pools}"}}
		}),
		// The mirror is reached over plain HTTP (--insecure-registry).
		"controlplane-chart-insecure-mirror": func() Facts {
			f := controlPlane(nil)
			f.InsecureRegistries = []string{"mirror.example.com"}
			return f
		}(),
		"infrastructure-kustomize": infrastructure(nil),
		"infrastructure-chart": infrastructure(func(c *clustersv1alpha1.CapwrightCluster) {
			c.Spec.Backend = &clustersv1alpha1.Backend{Timeout: &metav1.Duration{Duration: 20 * time.Minute}, Chart: &clustersv1alpha1.ChartBackend{
				OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/charts/network"},
				Version:             "0.4.0", Values: &apiextensionsv1.JSON{Raw: []byte(`{"version":"${KUBERNETES_VERSION}"}`)}}}
		}),
		"infrastructure-without-backend": infrastructure(func(c *clustersv1alpha1.CapwrightCluster) {
			c.Spec.Backend, c.Spec.StatusFrom = nil, nil
		}),
		// Paused.
		"paused-by-cluster": func() Facts {
			f := controlPlane(nil)
			f.Cluster.SpecPaused = true
			return f
		}(),
		"paused-by-annotation-said": func() Facts {
			f := controlPlane(func(cp *clustersv1alpha1.CapwrightControlPlane) {
				cp.Annotations = map[string]string{clusterapi.PausedAnnotation: ""}
			})
			f.PausedSaid = true
			return f
		}(),
		"paused-cluster-annotation-does-not-pause": func() Facts {
			f := infrastructure(nil)
			f.Cluster.PausedByAnnotation = true
			return f
		}(),
		// The refusals.
		"refused-no-cluster": func() Facts {
			f := controlPlane(nil)
			f.Cluster = nil
			return f
		}(),
		"refused-chart-values": controlPlane(func(cp *clustersv1alpha1.CapwrightControlPlane) {
			cp.Spec.Backend.Chart.Values = &apiextensionsv1.JSON{Raw: []byte(`{"a":{"b":["x","${TOPOLOGY_nope}"]}}`)}
		}),
		"refused-kustomize-substitute": infrastructure(func(c *clustersv1alpha1.CapwrightCluster) {
			c.Spec.Backend.Kustomize.Substitute = map[string]string{"X": "${CLUSTER}"}
		}),
		"refused-statusfrom-name": infrastructure(func(c *clustersv1alpha1.CapwrightCluster) {
			c.Spec.StatusFrom.Name = "${NAME}"
		}),
		"refused-statusfrom-expression": func() Facts {
			f := controlPlane(nil)
			f.StatusFromInvalid = errors.New("spec.statusFrom.ready does not parse as a CEL expression: syntax error")
			return f
		}(),
		// Status expressions that do not parse stall the object before
		// any Cluster owns it (no Cluster can make them parse), but not
		// while it is paused.
		"refused-statusfrom-expression-no-cluster": func() Facts {
			f := controlPlane(nil)
			f.Cluster = nil
			f.StatusFromInvalid = errors.New("spec.statusFrom.ready does not parse as a CEL expression: syntax error")
			return f
		}(),
		"paused-statusfrom-expression": func() Facts {
			f := controlPlane(nil)
			f.Cluster.SpecPaused = true
			f.StatusFromInvalid = errors.New("spec.statusFrom.ready does not parse as a CEL expression: syntax error")
			return f
		}(),
		"refused-verify-identity-no-cluster": func() Facts {
			f := infrastructure(func(c *clustersv1alpha1.CapwrightCluster) {
				c.Spec.Backend.Kustomize.Verify = &providersv1alpha1.OCIVerification{MatchOIDCIdentity: []providersv1alpha1.OIDCIdentityMatch{
					{Issuer: "https://token.actions.githubusercontent.com", Subject: "*@example.com"}}}
			})
			f.Cluster = nil
			return f
		}(),
		"refused-no-backend-kind": controlPlane(func(cp *clustersv1alpha1.CapwrightControlPlane) {
			cp.Spec.Backend.Chart = nil
		}),
		"refused-kubeconfig-secret": controlPlane(func(cp *clustersv1alpha1.CapwrightControlPlane) {
			cp.Spec.Kubeconfig.SecretName = "${CLUSTER}-admin-kubeconfig"
		}),
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Plan(f)
			golden(t, name, describe(t, d, err))
		})
	}
}

// describe is a plan as its golden file holds it.
func describe(t *testing.T, d Desired, err error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err != nil {
		r, ok := plan.AsRefusal(err)
		if !ok {
			t.Fatalf("the plan failed without a refusal: %v", err)
		}
		fmt.Fprintf(&b, "refusal:\n  condition: %s\n  status: %s\n  reason: %s\n  stalls: %t\n  retryAfter: %s\n  message: %q\n",
			r.Condition, r.Status, r.Reason, r.Stalls, r.RetryAfter, r.Message)
		return b.Bytes()
	}
	if d.Pause != nil {
		fmt.Fprintf(&b, "pause:\n  message: %q\n  hold: %t\n", d.Pause.Message, d.Pause.Hold)
		return b.Bytes()
	}
	fmt.Fprintf(&b, "statusName: %q\nkubeconfigSecret: %q\nrequest: %q\nappliedHash: %q\nobserve:\n", d.StatusName, d.KubeconfigSecret, d.Request, d.AppliedHash)
	for _, o := range d.Observe {
		fmt.Fprintf(&b, "- %s %s/%s\n", plan.KindOf(o), o.GetNamespace(), o.GetName())
	}
	for _, w := range d.Writes {
		applied, err := plan.AsApplied(w.Object, plan.HashAnnotation)
		if err != nil {
			t.Fatal(err)
		}
		data, err := yaml.Marshal(applied.Object)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "---\n# group %s, request %t\n%s", w.Group, w.Request, data)
	}
	return b.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the plan (run go test -update if the change is meant):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff lists the lines of want and got that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("%d:\n-%s\n+%s", i+1, a, b))
		}
	}
	return strings.Join(out, "\n")
}

func TestVariables(t *testing.T) {
	vars := Variables(*cluster(), "v1.31.0")
	got, err := Substitute("f", "${CLUSTER_NAME}.${CLUSTER_NAMESPACE} ${KUBERNETES_VERSION} ${TOPOLOGY_region} ${TOPOLOGY_node_pools}", vars)
	if err != nil || got != `alpha.team v1.31.0 eu-1 {"size":3}` {
		t.Fatalf("substitute = %q, %v", got, err)
	}
	if _, err := Substitute("spec.backend.chart.values.x", "${NOPE}", vars); err == nil ||
		!strings.Contains(err.Error(), "spec.backend.chart.values.x uses ${NOPE}, which is not defined") || !strings.Contains(err.Error(), "${CLUSTER_NAME}") {
		t.Fatalf("an undefined variable: %v", err)
	}
	if got, err := Substitute("f", "${REGION:=eu-1}-${CLUSTER_NAME}", vars); err != nil || got != "eu-1-alpha" {
		t.Fatalf("a default for an undefined variable: %q, %v", got, err)
	}
	values, err := SubstituteValues("v", map[string]any{"list": []any{"${CLUSTER_NAME}", int64(3)}, "n": true}, vars)
	if err != nil {
		t.Fatal(err)
	}
	if l := values.(map[string]any)["list"].([]any); l[0] != "alpha" || l[1] != int64(3) {
		t.Fatalf("values = %v", values)
	}
	if Identifier("node-pools.v2") != "node_pools_v2" {
		t.Fatalf("Identifier = %q", Identifier("node-pools.v2"))
	}
}
