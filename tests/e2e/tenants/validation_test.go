package tenants

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestTenantsRefuseBadInput: the API server refuses what can never work,
// with a message naming the field and the fix (the CRD's rules); what it
// cannot check — a semver range, which CEL cannot parse — the manager
// refuses as soon as the Tenant is applied, before any Cluster is
// selected: Ready False and Stalled, nothing written for the stack.
func TestTenantsRefuseBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	// Never fetched: nothing may be written that would fetch it.
	art := framework.PushedArtifact{URL: "oci://" + env.Registry.Host + "/tenants/refused", Tag: "v1.0.0"}
	tenant := func(change func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
		tn := kustomizeTenant("refused", art, tenancyv1alpha1.ClusterSelector{Names: []string{"no-such-cluster"}})
		change(tn)
		return tn
	}
	for _, tt := range []struct {
		name   string
		change func(*tenancyv1alpha1.Tenant)
		want   string
	}{
		{"a stack interval of 15s", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Stack.Interval = &metav1.Duration{Duration: 15 * time.Second}
		}, `spec.stack.interval: Invalid value: "15s": stack.interval must be at least 1m`},
		{"a stack timeout of a second", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Stack.Timeout = &metav1.Duration{Duration: time.Second}
		}, `spec.stack.timeout: Invalid value: "1s": stack.timeout must be at least 10s`},
		{"a bake time of 5s", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{BakeTime: &metav1.Duration{Duration: 5 * time.Second}}
		}, `spec.rollout.bakeTime: Invalid value: "5s": rollout.bakeTime must be at least 10s`},
		{"a wave label that is no label key", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{WaveLabel: "rollout ring"}
		}, "rollout.waveLabel must be a label key"},
		{"a selector operator Kubernetes does not know", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Clusters.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Equals", Values: []string{"prod"}}}}
		}, "operator must be In, NotIn, Exists or DoesNotExist"},
		{"In without values", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Clusters.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}}
		}, "In and NotIn need at least one value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tn := tenant(tt.change)
			err := c.Create(ctx, tn)
			if err == nil {
				_ = c.Delete(context.Background(), tn)
				t.Fatalf("the API server accepted %s", tt.name)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}

	// Durations past what Go holds (about 2562047h) would be stored, and
	// then no client could read any Tenant.
	for _, field := range [][]string{{"stack", "interval"}, {"stack", "timeout"}, {"rollout", "bakeTime"}} {
		path := "spec." + strings.Join(field, ".")
		t.Run(path+" past what a duration holds", func(t *testing.T) {
			u, err := framework.ToUnstructured(tenant(func(*tenancyv1alpha1.Tenant) {}))
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(u.Object, "9999999999h", append([]string{"spec"}, field...)...); err != nil {
				t.Fatal(err)
			}
			err = c.Create(ctx, u)
			if err == nil {
				_ = c.Delete(context.Background(), u)
				t.Fatalf("the API server accepted %s: 9999999999h", path)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name %s", err, path)
			}
			t.Log(err)
		})
	}

	t.Run("a semver range Flux cannot parse is refused with no Cluster selected", func(t *testing.T) {
		tn := tenant(func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Stack.Kustomize.Tag, tn.Spec.Stack.Kustomize.SemVer = "", ">= one"
		})
		createTenant(t, ctx, c, tn)
		got := waitTenant(t, ctx, c, tn.Name, time.Minute, "Tenant stalled on its semver range", func(tn *tenancyv1alpha1.Tenant) bool {
			stalled := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.StalledCondition)
			return stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Reason == tenancyv1alpha1.InvalidStackReason
		})
		ready := apimeta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != tenancyv1alpha1.InvalidStackReason ||
			!strings.Contains(ready.Message, `spec.stack.kustomize.semver of Tenant refused: ">= one" is not a version range`) {
			t.Errorf("Ready = %+v, want False InvalidStack naming spec.stack.kustomize.semver", ready)
		}
		mine := client.MatchingLabels{tenancyv1alpha1.TenantLabel: tn.Name}
		var kss kustomizev1.KustomizationList
		var repos sourcev1.OCIRepositoryList
		if err := c.List(ctx, &kss, mine); err != nil || len(kss.Items) > 0 {
			t.Errorf("Kustomizations written for the refused tenant: %d (%v)", len(kss.Items), err)
		}
		if err := c.List(ctx, &repos, mine); err != nil || len(repos.Items) > 0 {
			t.Errorf("OCIRepositories written for the refused tenant: %d (%v)", len(repos.Items), err)
		}
	})
}
