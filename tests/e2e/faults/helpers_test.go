package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

const coreVersion = "v1.14.2"

func newClient(t testing.TB) client.Client { return framework.NewProviderClient(t, env.Config) }

var coreOnce sync.Mutex

// ensureCore installs the real Cluster API core provider from the plane's
// registry (through the manager's mirror rule), once for the suite, and
// returns it Ready.
func ensureCore(t *testing.T, ctx context.Context, c client.Client) *v1alpha1.CoreProvider {
	t.Helper()
	coreOnce.Lock()
	defer coreOnce.Unlock()
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: coreVersion}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); apierrors.IsNotFound(err) {
		if _, err := framework.PublishCAPIProvider(ctx, env.Registry.Host, filepath.Dir(env.CAPIComponentsPath(coreVersion, "metadata.yaml")),
			v1alpha1.CoreProviderType, "cluster-api", coreVersion); err != nil {
			t.Fatal(err)
		}
		framework.EnsureNamespace(t, ctx, c, core.Namespace)
		if err := c.Create(ctx, core); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	framework.WaitProviderCondition(t, ctx, c, core, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
	return core
}

// testProvider publishes a small infrastructure provider named name to
// the registry at host and returns its CR (not created), in a namespace
// of its own that exists.
func testProvider(t *testing.T, ctx context.Context, c client.Client, host, name string) *v1alpha1.InfrastructureProvider {
	t.Helper()
	ns := "faults-" + name
	url, err := framework.PublishFiles(ctx, host, v1alpha1.InfrastructureProviderType, name, "v0.1.0", map[string][]byte{
		"metadata.yaml":                  framework.TestMetadata("v1beta2"),
		"infrastructure-components.yaml": framework.TestComponents(ns+"-system", name),
	})
	if err != nil {
		t.Fatal(err)
	}
	framework.EnsureNamespace(t, ctx, c, ns)
	return &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0",
			Source: &v1alpha1.ProviderSource{OCI: &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: url, Insecure: true}}}}}
}

// watchReady polls the provider's Ready condition until the returned
// function is called, which returns every moment it was not True.
func watchReady(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu  sync.Mutex
		bad []string
		wg  sync.WaitGroup
	)
	obj := p.DeepCopyObject().(v1alpha1.Provider)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.(client.Object)); err != nil {
				continue // the API server may be the part that fails
			}
			if r := apimeta.FindStatusCondition(obj.GetConditions(), v1alpha1.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s: Ready %+v", time.Now().Format(time.RFC3339Nano), r))
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return bad
	}
}

// events are the provider's events of reason, by type.
func events(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, reason string) map[string]int {
	t.Helper()
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(p.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range list.Items {
		if e.InvolvedObject.UID == p.GetUID() && e.Reason == reason {
			out[e.Type] += int(max(e.Count, 1))
		}
	}
	return out
}

// publishKubeadm publishes the real kubeadm provider of providerType (a
// fixture of `make tools`) at each of versions to the plane's registry,
// and makes the namespace of its CR, capi-kubeadm-<type>-system.
func publishKubeadm(t *testing.T, ctx context.Context, c client.Client, providerType string, versions ...string) (namespace string) {
	t.Helper()
	for _, version := range versions {
		if _, err := framework.PublishCAPIProvider(ctx, env.Registry.Host, filepath.Dir(env.CAPIComponentsPath(version, "metadata.yaml")),
			providerType, "kubeadm", version); err != nil {
			t.Fatal(err)
		}
	}
	namespace = "capi-kubeadm-" + providerType + "-system"
	framework.EnsureNamespace(t, ctx, c, namespace)
	return namespace
}

// installWithExtras creates the provider p with additional manifests (a
// ConfigMap "extras" in its namespace holding manifests), waits until it
// is Ready, and returns the URL of their artifact. The caller deletes p.
func installWithExtras(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, manifests string) string {
	t.Helper()
	extras := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: "extras"}, Data: map[string]string{"manifests": manifests}}
	if err := c.Create(ctx, extras); err != nil {
		t.Fatal(err)
	}
	p.GetSpec().AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extras"}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	ea := &sourcev1.ExternalArtifact{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.GetNamespace(), Name: render.AdditionalObjectName(p.ProviderType(), p.GetName())}, ea); err != nil {
		t.Fatal(err)
	}
	if ea.Status.Artifact == nil {
		t.Fatalf("the ExternalArtifact %s/%s points at nothing: %+v", ea.Namespace, ea.Name, ea.Status)
	}
	return ea.Status.Artifact.URL
}

// extraConfigMap is additional manifests holding one ConfigMap name with
// data value: <value>.
func extraConfigMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  value: " + value + "\n"
}

// asJSON is v as JSON, for a failure message.
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
