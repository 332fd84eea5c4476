package health

import (
	"fmt"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/render"
)

const (
	benchTenants           = 500
	benchClustersPerTenant = 20
)

// benchFleet is a management cluster with benchTenants tenants of
// benchClustersPerTenant clusters each, half with a chart stack and half
// with a kustomize artifact, every cluster provisioned.
type benchFleet struct {
	tenants     []*tenancyv1alpha1.Tenant
	clusters    [][]clusterapi.Facts
	kubeconfigs sets.Set[types.NamespacedName]
}

func newBenchFleet() benchFleet {
	f := benchFleet{kubeconfigs: sets.New[types.NamespacedName]()}
	for i := range benchTenants {
		name := fmt.Sprintf("team-%03d", i)
		t := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
			Spec: tenancyv1alpha1.TenantSpec{
				Clusters: tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": name}}},
			},
		}
		if i%2 == 0 {
			t.Spec.Stack.Chart = &tenancyv1alpha1.ChartStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://ghcr.io/example/charts/platform-stack"},
				Version:             "1.4.2",
				Values:              nil,
			}
		} else {
			t.Spec.Stack.Kustomize = &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://ghcr.io/example/stacks/base"},
				Tag:                 "1.4.2",
				Substitute:          map[string]string{"TENANT": name},
			}
		}
		var clusters []clusterapi.Facts
		for j := range benchClustersPerTenant {
			c := clusterapi.Facts{Namespace: t.ManagementNamespace(), Name: fmt.Sprintf("cluster-%02d", j),
				Labels: map[string]string{"tenant": name}, ControlPlaneInitialized: true}
			clusters = append(clusters, c)
			f.kubeconfigs.Insert(types.NamespacedName{Namespace: c.Namespace, Name: render.KubeconfigSecretName(c.Name)})
		}
		f.tenants = append(f.tenants, t)
		f.clusters = append(f.clusters, clusters)
	}
	return f
}

// BenchmarkTenants selects, renders and folds benchTenants tenants of
// benchClustersPerTenant clusters: what a full resync of the fleet costs
// in pure code. Flux objects report the shapes of tenant_fixtures_test.go.
func BenchmarkTenants(b *testing.B) {
	f := newBenchFleet()
	repoStatus := benchDecode[sourcev1.OCIRepository](b, tenantRepoManifest("1", tenantRepoReady)).Status
	hrStatus := benchDecode[helmv2.HelmRelease](b, tenantHelmReleaseManifest(hrName, "1", tenantHRInstalled)).Status
	ksStatus := benchDecode[kustomizev1.Kustomization](b, tenantKustomizationManifest(tenantKSRecheck)).Status
	now := metav1.Now()
	statuses := make([]tenancyv1alpha1.TenantStatus, benchTenants)

	var objects, clusters int
	for b.Loop() {
		objects, clusters = 0, 0
		for i, tenant := range f.tenants {
			sel, err := render.SelectClusters(tenant, f.clusters[i], f.kubeconfigs)
			if err != nil {
				b.Fatal(err)
			}
			out, err := render.Tenant(tenant, sel, render.TenantOptions{})
			if err != nil {
				b.Fatal(err)
			}
			objects += len(out.Objects())

			// Flux reports on what was rendered.
			out.Sources[0].Generation, out.Sources[0].Status = 1, repoStatus
			source := ObserveOCIRepository(out.Sources[0])
			in := TenantInput{Generation: 1, Previous: statuses[i].Clusters, Now: now,
				Clusters: make([]TenantClusterInput, 0, len(out.Clusters))}
			for _, c := range out.Clusters {
				var apply Observation
				if hr := c.HelmRelease; hr != nil {
					hr.Generation, hr.Status = 1, hrStatus
					apply = ObserveHelmRelease(hr)
				} else {
					ks := c.Kustomization
					ks.Generation, ks.Status = 1, ksStatus
					apply = ObserveKustomization(ks)
				}
				in.Clusters = append(in.Clusters, TenantClusterInput{Cluster: c.Cluster, Source: source, Apply: apply})
			}
			res := FoldTenant(in)
			SetTenantClusters(&statuses[i], res)
			clusters += len(res.Clusters)
			if res.Ready != benchClustersPerTenant {
				b.Fatalf("tenant %s: %d of %d clusters Ready", tenant.Name, res.Ready, benchClustersPerTenant)
			}
		}
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(objects*b.N)/secs, "objects/s")
	b.ReportMetric(float64(clusters*b.N)/secs, "clusters/s")
}

// benchDecode is decode for a benchmark.
func benchDecode[T any](b *testing.B, manifest string) *T {
	b.Helper()
	obj := new(T)
	if err := yaml.UnmarshalStrict([]byte(strings.NewReplacer("OLD", oldDigest, "NEW", newDigest).Replace(manifest)), obj); err != nil {
		b.Fatal(err)
	}
	return obj
}
