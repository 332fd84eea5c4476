package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// TestCapwrightHelmChartInstalls installs the chart in charts/capwright
// with the real helm-controller: CRDs, ClusterRole and the manager
// Deployment (which kwok reports Available).
func TestCapwrightHelmChartInstalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := framework.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{helmv2.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(c.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(env.RepoRoot(), "charts", "capwright")
	files := map[string][]byte{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	url, err := framework.PushChart(ctx, env.Registry.Host, "charts/capwright", "capwright", "0.1.0", files)
	if err != nil {
		t.Fatal(err)
	}
	repo := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: plane.FluxNamespace, Name: "capwright"},
		Spec: sourcev1.OCIRepositorySpec{URL: url, Reference: &sourcev1.OCIRepositoryRef{Tag: "0.1.0"}, Insecure: true,
			Interval:      metav1.Duration{Duration: time.Minute},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: sourcev1.OCILayerCopy}},
	}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: plane.FluxNamespace, Name: "capwright"},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:        &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "capwright"},
			Interval:        metav1.Duration{Duration: 10 * time.Minute},
			TargetNamespace: "capwright-system",
			Install:         &helmv2.Install{CreateNamespace: true},
		},
	}
	for _, obj := range []client.Object{repo, hr} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.WaitReady(ctx, c, hr, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capwright-system", Name: "capwright-manager"}, &dep); err != nil {
		t.Fatal(err)
	}
	if !deploymentAvailable(&dep) {
		t.Fatalf("capwright-manager not Available: %+v", dep.Status)
	}
	for _, crd := range []string{"coreproviders.providers.capwright.io", "providers.clusterctl.cluster.x-k8s.io"} {
		if err := c.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("CRD %s: %v", crd, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "capwright-manager"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("ClusterRole capwright-manager: %v", err)
	}
}
