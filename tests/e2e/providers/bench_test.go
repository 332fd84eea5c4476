package providers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// BenchmarkInstallCAPIProviders measures, on the local plane, the time
// from applying the CRs of the real core, kubeadm bootstrap and kubeadm
// control plane providers (v1.14.2, from the catalog through the mirror)
// until all three are Ready, and the manager's API writes per provider
// install. Each iteration deletes them again (CRDs stay, as they do for
// users, so later iterations skip CRD creation). Run it with `make bench`.
func BenchmarkInstallCAPIProviders(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c := newClient(b)
	for _, args := range [][2]string{{v1alpha1.CoreProviderType, "cluster-api"}, {v1alpha1.BootstrapProviderType, "kubeadm"}, {v1alpha1.ControlPlaneProviderType, "kubeadm"}} {
		if _, err := publishOrErr(ctx, args[0], args[1], newVersion); err != nil {
			b.Fatal(err)
		}
	}
	var total time.Duration
	var writes int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		providers := []v1alpha1.Provider{
			&v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"}, Spec: v1alpha1.ProviderSpec{Version: newVersion}},
			&v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-bootstrap-system", Name: "kubeadm"}, Spec: v1alpha1.ProviderSpec{Version: newVersion}},
			&v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"}, Spec: v1alpha1.ProviderSpec{Version: newVersion}},
		}
		for _, p := range providers {
			ensureNamespace(b, ctx, c, p.GetNamespace())
		}
		start := time.Now()
		for _, p := range providers {
			if err := c.Create(ctx, p.(client.Object)); err != nil {
				b.Fatal(err)
			}
		}
		for _, p := range providers {
			waitCondition(b, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
		}
		total += time.Since(start)
		w, err := env.Writes(plane.CapwrightUser, start)
		if err != nil {
			b.Fatal(err)
		}
		writes += len(w)
		b.StopTimer()
		for _, p := range []v1alpha1.Provider{providers[1], providers[2], providers[0]} {
			if err := c.Delete(ctx, p.(client.Object)); err != nil {
				b.Fatal(err)
			}
			waitGone(b, ctx, c, p.(client.Object), 3*time.Minute)
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-ready/3-providers")
	b.ReportMetric(float64(writes)/float64(3*b.N), "api-writes/provider")
}

func publishOrErr(ctx context.Context, providerType, name, version string) (string, error) {
	return framework.PublishCAPIProvider(ctx, env.Registry.Host, filepath.Dir(env.CAPIComponentsPath(version, "metadata.yaml")), providerType, name, version)
}
