package providers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// publish pushes a real Cluster API release's provider to the plane's
// registry in the upstream layout and returns its oci:// URL.
func publish(t *testing.T, ctx context.Context, providerType, name, version string) string {
	t.Helper()
	url, err := framework.PublishCAPIProvider(ctx, env.Registry.Host, filepath.Dir(env.CAPIComponentsPath(version, "metadata.yaml")), providerType, name, version)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func publishFiles(t *testing.T, ctx context.Context, providerType, name, version string, files map[string][]byte) string {
	t.Helper()
	url, err := framework.PublishFiles(ctx, env.Registry.Host, providerType, name, version, files)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func source(url string) *v1alpha1.ProviderSource {
	return &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true}}}
}

// The suite's helpers are the framework's.
var (
	ensureNamespace = framework.EnsureNamespace
	waitCondition   = framework.WaitProviderCondition
	updateProvider  = framework.UpdateProvider
	testComponents  = framework.TestComponents
	testMetadata    = framework.TestMetadata
	waitGone        = framework.WaitGone
	deleteAndWait   = framework.DeleteProviderAndWait
)

func newClient(t testing.TB) client.Client { return framework.NewProviderClient(t, env.Config) }

// noManagerWrites fails the test if the manager wrote anything since
// since; who says who was expected to write nothing.
func noManagerWrites(t *testing.T, since time.Time, who string) {
	t.Helper()
	framework.NoManagerWrites(t, env, since, who)
}
