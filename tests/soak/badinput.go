package soak

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// BadInputCase is a custom resource a user gets wrong. Either the API
// server refuses it (Refused), with an error that says Want; or it is
// accepted and the manager refuses it, before anything selects or owns
// it, with a condition (Condition, reason Reason) whose message says
// Want, and writes no Flux object for it.
type BadInputCase struct {
	Name      string
	Refused   bool
	Condition string
	Reason    string
	Want      string
	object    func(registry string) client.Object
}

// BadInputs are the refusals of issue 46's sweep (the CRDs' rules and the
// manager's checks of what CEL cannot parse), each tried by the soak's
// bad-input churn.
var BadInputs = []BadInputCase{
	{Name: "provider interval of 1s", Refused: true, Want: "interval must be at least 1m",
		object: func(string) client.Object {
			return &providersv1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "soak-bad"},
				Spec: providersv1alpha1.ProviderSpec{Version: "v2.8.0", Interval: &metav1.Duration{Duration: time.Second}}}
		}},
	{Name: "provider timeout of 1ms", Refused: true, Want: "timeout must be at least 10s",
		object: func(string) client.Object {
			return &providersv1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "soak-bad"},
				Spec: providersv1alpha1.ProviderSpec{Version: "v2.8.0", Timeout: &metav1.Duration{Duration: time.Millisecond}}}
		}},
	{Name: "provider version without a leading v", Refused: true, Want: "version must be a semantic version with a leading v",
		object: func(string) client.Object {
			return &providersv1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "soak-bad"},
				Spec: providersv1alpha1.ProviderSpec{Version: "2.8.0"}}
		}},
	{Name: "stack interval of 15s", Refused: true, Want: "stack.interval must be at least 1m",
		object: func(registry string) client.Object {
			tn := badTenant(registry)
			tn.Spec.Stack.Interval = &metav1.Duration{Duration: 15 * time.Second}
			return tn
		}},
	{Name: "wave label that is no label key", Refused: true, Want: "rollout.waveLabel must be a label key",
		object: func(registry string) client.Object {
			tn := badTenant(registry)
			tn.Spec.Rollout = &tenancyv1alpha1.RolloutSpec{WaveLabel: "rollout ring"}
			return tn
		}},
	{Name: "selector operator Equals", Refused: true, Want: "operator must be In, NotIn, Exists or DoesNotExist",
		object: func(registry string) client.Object {
			tn := badTenant(registry)
			tn.Spec.Clusters.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Equals", Values: []string{"prod"}}}}
			return tn
		}},
	{Name: "semver range that does not parse", Condition: tenancyv1alpha1.StalledCondition, Reason: tenancyv1alpha1.InvalidStackReason,
		Want: "spec.stack.kustomize.semver",
		object: func(registry string) client.Object {
			tn := badTenant(registry)
			tn.Spec.Stack.Kustomize.Tag, tn.Spec.Stack.Kustomize.SemVer = "", ">=1.x.y!"
			return tn
		}},
	{Name: "status expression (CEL) that does not parse", Condition: clustersv1alpha1.BackendReadyCondition, Reason: clustersv1alpha1.InvalidSpecReason,
		Want: "spec.statusFrom.ready",
		object: func(registry string) client.Object {
			spec := framework.HostedControlPlaneSpec("oci://"+registry+"/soak/charts/never-fetched", nil)
			spec.StatusFrom.Ready = "status.ready =="
			return &clustersv1alpha1.CapwrightControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "soak-bad"},
				Spec: clustersv1alpha1.CapwrightControlPlaneSpec{Version: "v1.31.0", CapwrightControlPlaneResourceSpec: spec}}
		}},
}

// badTenant is a Tenant of no cluster whose stack is never fetched.
func badTenant(registry string) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-bad"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Names: []string{"no-such-cluster"}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://" + registry + "/soak/never-fetched", Insecure: true},
				Tag:                 "v1.0.0",
			}},
		},
	}
}

// try applies the case and returns what went wrong, "" when it was
// refused as it should be. An accepted object is deleted again, and
// waited for until gone.
func (b BadInputCase) try(ctx context.Context, c client.Client, registry string) string {
	obj := b.object(registry)
	err := createRetrying(ctx, c, obj)
	if b.Refused {
		if err == nil {
			_ = c.Delete(context.Background(), obj)
			return fmt.Sprintf("the API server accepted %s (%s)", describe(obj), b.Name)
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), b.Want) {
			return fmt.Sprintf("%s (%s): the API server's error %q does not say %q", describe(obj), b.Name, err, b.Want)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("creating %s (%s): %v", describe(obj), b.Name, err)
	}
	defer deleteAndWait(ctx, c, obj)
	key := client.ObjectKeyFromObject(obj)
	var last string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := c.Get(ctx, key, obj); err == nil {
			var conds []metav1.Condition
			switch o := obj.(type) {
			case *tenancyv1alpha1.Tenant:
				conds = o.Status.Conditions
			case *clustersv1alpha1.CapwrightControlPlane:
				conds = o.Status.Conditions
			}
			cond := apimeta.FindStatusCondition(conds, b.Condition)
			last = conditionString(cond)
			if cond != nil && cond.Reason == b.Reason && (cond.ObservedGeneration == 0 || cond.ObservedGeneration == obj.GetGeneration()) {
				if !strings.Contains(cond.Message, b.Want) {
					// The Stalled condition may say less than Ready.
					if r := apimeta.FindStatusCondition(conds, "Ready"); r == nil || !strings.Contains(r.Message, b.Want) {
						return fmt.Sprintf("%s (%s): %s says %q, not %q", describe(obj), b.Name, b.Condition, cond.Message, b.Want)
					}
				}
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("%s (%s): not refused by the manager after 2m: %s %s", describe(obj), b.Name, b.Condition, last)
		}
		time.Sleep(time.Second)
	}
	// Nothing written for it.
	for _, list := range []client.ObjectList{&kustomizev1.KustomizationList{}, &sourcev1.OCIRepositoryList{}, &helmv2.HelmReleaseList{}} {
		if err := c.List(ctx, list, client.InNamespace("default")); err != nil {
			continue
		}
		items, _ := apimeta.ExtractList(list)
		for _, item := range items {
			o := item.(client.Object)
			if owner := metav1.GetControllerOf(o); owner != nil && owner.UID == obj.GetUID() {
				return fmt.Sprintf("%s (%s) was refused, and yet %s was written for it", describe(obj), b.Name, describe(o))
			}
		}
	}
	var tenantObjs kustomizev1.KustomizationList
	if err := c.List(ctx, &tenantObjs, client.MatchingLabels{tenancyv1alpha1.TenantLabel: obj.GetName()}); err == nil && len(tenantObjs.Items) > 0 {
		return fmt.Sprintf("%s (%s) was refused, and yet %d Kustomizations were written for it", describe(obj), b.Name, len(tenantObjs.Items))
	}
	return ""
}

// deleteAndWait deletes obj and waits (up to two minutes) until it is
// gone.
func deleteAndWait(ctx context.Context, c client.Client, obj client.Object) {
	_ = c.Delete(ctx, obj)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(time.Second)
	}
}
