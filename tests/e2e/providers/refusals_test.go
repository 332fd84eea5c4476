package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// refusals runs while the core provider is Ready: preflight refuses what
// cannot work and writes nothing for it.
func refusals(t *testing.T, ctx context.Context, c client.Client) {
	t.Run("a variable with no value and no default is refused by name", func(t *testing.T) {
		url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "needsvars", "v0.1.0", map[string][]byte{
			"metadata.yaml":                  testMetadata("v1beta2"),
			"infrastructure-components.yaml": testComponents("needsvars-system", "${TEST_REGION} ${TEST_ZONE:=a} ${TEST_ACCOUNT}"),
		})
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "needsvars"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url), Variables: map[string]string{"TEST_ACCOUNT": "42"}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.MissingVariablesReason, 2*time.Minute)
		msg := conditionMessage(p, v1alpha1.CompatibleCondition)
		if !strings.Contains(msg, "TEST_REGION") || strings.Contains(msg, "TEST_ZONE") || strings.Contains(msg, "TEST_ACCOUNT") {
			t.Errorf("message should name TEST_REGION only: %q", msg)
		}
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionFalse, "", time.Minute)
		assertNothingApplied(t, ctx, c, p, true)
		deleteAndWait(t, ctx, c, p)
	})

	t.Run("a second provider of the same type and name is refused", func(t *testing.T) {
		ensureNamespace(t, ctx, c, "second-capi")
		p := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "second-capi", Name: "cluster-api"},
			Spec: v1alpha1.ProviderSpec{Version: newVersion}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.DuplicateProviderReason, 2*time.Minute)
		if msg := conditionMessage(p, v1alpha1.CompatibleCondition); !strings.Contains(msg, "CoreProvider capi-system/cluster-api") {
			t.Errorf("message should name the provider that keeps it: %q", msg)
		}
		assertNothingApplied(t, ctx, c, p, false)
		deleteAndWait(t, ctx, c, p)
	})

	t.Run("a contract the core provider cannot work with is refused", func(t *testing.T) {
		url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "oldcontract", "v0.1.0", map[string][]byte{
			"metadata.yaml":                  testMetadata("v1alpha4"),
			"infrastructure-components.yaml": testComponents("oldcontract-system", "x"),
		})
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "oldcontract"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url)}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, p, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.IncompatibleContractReason, 2*time.Minute)
		if msg := conditionMessage(p, v1alpha1.CompatibleCondition); !strings.Contains(msg, "v1alpha4") || !strings.Contains(msg, "v1beta2") {
			t.Errorf("message should name both contracts: %q", msg)
		}
		assertNothingApplied(t, ctx, c, p, true)
		deleteAndWait(t, ctx, c, p)
	})

	t.Run("an upgrade prunes what the new version dropped", func(t *testing.T) {
		v1 := map[string][]byte{
			"metadata.yaml": []byte(`apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- {major: 0, minor: 1, contract: v1beta2}
- {major: 0, minor: 2, contract: v1beta2}
`),
			"infrastructure-components.yaml": append(testComponents("shrinking-system", "v0.1"), []byte(`---
apiVersion: v1
kind: ConfigMap
metadata:
  name: dropped-in-v0-2
  namespace: shrinking-system
`)...),
		}
		url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "shrinking", "v0.1.0", v1)
		v2 := map[string][]byte{"metadata.yaml": v1["metadata.yaml"], "infrastructure-components.yaml": testComponents("shrinking-system", "v0.2")}
		publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "shrinking", "v0.2.0", v2)
		ensureNamespace(t, ctx, c, "shrinking-system")
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "shrinking-system", Name: "shrinking"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url)}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
		dropped := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shrinking-system", Name: "dropped-in-v0-2"}}
		if err := c.Get(ctx, client.ObjectKeyFromObject(dropped), dropped); err != nil {
			t.Fatalf("v0.1.0 was installed without its ConfigMap: %v", err)
		}
		updateProvider(t, ctx, c, p, func() { p.Spec.Version = "v0.2.0" })
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
		if p.Status.InstalledVersion != "v0.2.0" {
			t.Fatalf("installedVersion %q after the upgrade", p.Status.InstalledVersion)
		}
		waitGone(t, ctx, c, dropped, time.Minute)
		var settings corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: "shrinking-system", Name: "test-settings"}, &settings); err != nil || settings.Data["setting"] != "v0.2" {
			t.Fatalf("test-settings after the upgrade: %v %v", settings.Data, err)
		}
		deleteAndWait(t, ctx, c, p)
	})

	t.Run("a re-pushed tag leaves the checked digest installed", func(t *testing.T) {
		files := map[string][]byte{
			"metadata.yaml":                  testMetadata("v1beta2"),
			"infrastructure-components.yaml": testComponents("moved-system", "original"),
		}
		url := publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "moved", "v0.1.0", files)
		p := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "moved-system", Name: "moved"},
			Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(url)}}
		ensureNamespace(t, ctx, c, "moved-system")
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
		checked := p.Status.Artifact.Digest

		files["infrastructure-components.yaml"] = testComponents("moved-system", "tampered")
		publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "moved", "v0.1.0", files)
		requestReconcile(t, ctx, c, p)
		waitCondition(t, ctx, c, p, v1alpha1.ArtifactResolvedCondition, metav1.ConditionFalse, v1alpha1.TagMovedReason, 2*time.Minute)
		if msg := conditionMessage(p, v1alpha1.ArtifactResolvedCondition); !strings.Contains(msg, checked) {
			t.Errorf("TagMoved message should name the installed digest %s: %q", checked, msg)
		}
		var repo sourcev1.OCIRepository
		if err := c.Get(ctx, client.ObjectKey{Namespace: "moved-system", Name: "infrastructure-moved"}, &repo); err != nil {
			t.Fatal(err)
		}
		if repo.Spec.Reference.Digest != checked {
			t.Fatalf("OCIRepository moved to %s; the checked digest %s must stay", repo.Spec.Reference.Digest, checked)
		}
		deleteAndWait(t, ctx, c, p)
	})
}

// assertNothingApplied checks that no Kustomization was written for the
// refused provider p. fetchedAhead: p was refused after its artifact
// resolved and its contract was read, so Flux has fetched its artifact
// (the OCIRepository is Ready, pinned to the digest preflight resolved);
// otherwise there is no OCIRepository either.
func assertNothingApplied(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider, fetchedAhead bool) {
	t.Helper()
	key := client.ObjectKey{Namespace: p.GetNamespace(), Name: p.ProviderType() + "-" + p.GetName()}
	if err := c.Get(ctx, key, &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Kustomization was written for refused %s: %v", p.GetName(), err)
	}
	repo := &sourcev1.OCIRepository{}
	if !fetchedAhead {
		if err := c.Get(ctx, key, repo); !apierrors.IsNotFound(err) {
			t.Errorf("an OCIRepository was written for refused %s: %v", p.GetName(), err)
		}
		return
	}
	revision := p.GetStatus().LastAttemptedRevision
	_, digest, _ := strings.Cut(revision, "@")
	// Fetched ahead: source-controller holds the digest preflight
	// resolved (the object may be read between its writes, so wait for
	// the artifact itself rather than for Ready alone).
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, repo); err != nil {
			return false, nil
		}
		return repo.Status.Artifact != nil && repo.Status.Artifact.Revision == digest, nil
	})
	if err != nil || repo.Spec.Reference == nil || repo.Spec.Reference.Digest != digest {
		t.Errorf("refused %s: its OCIRepository is pinned to %+v and holds %+v (conditions %+v), want %s, the digest preflight resolved (%s)",
			p.GetName(), repo.Spec.Reference, repo.Status.Artifact, repo.Status.Conditions, digest, revision)
	}
}

func requestReconcile(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider) {
	t.Helper()
	if err := framework.RequestReconcile(ctx, c, p.(client.Object)); err != nil {
		t.Fatal(err)
	}
}

// poke makes the controller look at the provider again, asking nothing.
func poke(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider) {
	t.Helper()
	if err := framework.Poke(ctx, c, p.(client.Object)); err != nil {
		t.Fatal(err)
	}
}
