package tenant

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// The tenants of the table: one per stack shape.

func chartTenant() *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "uid-team-a", Generation: 3},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "team-a"}},
				Namespaces: []string{"shared-clusters"},
			},
			Stack: tenancyv1alpha1.StackSpec{Chart: &tenancyv1alpha1.ChartStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://ghcr.io/example/charts/platform-stack",
					SecretRef: &meta.LocalObjectReference{Name: "ghcr-pull"}},
				Version: "1.4.2",
				Values:  &apiextensionsv1.JSON{Raw: []byte(`{"ingress":{"enabled":true}}`)},
			}},
		},
	}
}

func kustomizeTenant() *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-b", UID: "uid-team-b", Generation: 1},
		Spec: tenancyv1alpha1.TenantSpec{
			Management: &tenancyv1alpha1.ManagementSpec{Namespace: "team-b-clusters"},
			Clusters:   tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{}},
			Stack: tenancyv1alpha1.StackSpec{
				Kustomize: &tenancyv1alpha1.KustomizeStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/stacks/base"},
					Tag:                 "v1.2.0",
					Path:                "deploy/prod",
				},
				TargetNamespace: "platform",
				Interval:        &metav1.Duration{Duration: 30 * time.Minute},
			},
		},
	}
}

func ready(ns, name string, labels map[string]string) clusterapi.Facts {
	return clusterapi.Facts{Namespace: ns, Name: name, Labels: labels, ControlPlaneInitialized: true}
}

// kubeconfigsOf are the kubeconfig Secrets of clusters, but those named.
func kubeconfigsOf(clusters []clusterapi.Facts, without ...string) sets.Set[types.NamespacedName] {
	out := sets.New[types.NamespacedName]()
	for _, c := range clusters {
		if !sets.New(without...).Has(c.Name) {
			out.Insert(types.NamespacedName{Namespace: c.Namespace, Name: clusterapi.KubeconfigSecretName(c.Name)})
		}
	}
	return out
}

// facts are the facts of t with clusters, all watched and eligible but
// those without a kubeconfig.
func facts(t *tenancyv1alpha1.Tenant, clusters []clusterapi.Facts, without ...string) Facts {
	return Facts{Tenant: t, Tenants: []tenancyv1alpha1.Tenant{*t}, Forbidden: render.ForbiddenNamespaces{"flux-system": "listed in the manager's --tenant-forbidden-namespaces"},
		Clusters: clusters, Kubeconfigs: kubeconfigsOf(clusters, without...), ClustersWatched: true}
}

// namespaceReady is a namespace Kustomization that created the target
// namespace.
func namespaceReady(ns, name string) health.Observation {
	return health.ObserveKustomization(&kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Status: kustomizev1.KustomizationStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
			{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.ReconciliationSucceededReason, ObservedGeneration: 1}}},
	})
}

// owned is an existing object of kind, labelled for and owned by t.
func owned(t *tenancyv1alpha1.Tenant, kind, ns, name string) render.ExistingObject {
	truth := true
	m := metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{tenancyv1alpha1.TenantLabel: t.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: tenancyv1alpha1.TenantKind, Name: t.Name,
			UID: t.UID, Controller: &truth, BlockOwnerDeletion: &truth}}}
	switch kind {
	case helmv2.HelmReleaseKind:
		m.Labels[tenancyv1alpha1.ClusterNamespaceLabel], m.Labels[tenancyv1alpha1.ClusterNameLabel] = ns, "gone"
		return render.ExistingObject{Kind: kind, Object: &helmv2.HelmRelease{ObjectMeta: m}}
	case sourcev1.OCIRepositoryKind:
		return render.ExistingObject{Kind: kind, Object: &sourcev1.OCIRepository{ObjectMeta: m}}
	case "ResourceQuota":
		return render.ExistingObject{Kind: kind, Object: &corev1.ResourceQuota{ObjectMeta: m}}
	}
	panic(kind)
}

func TestPlan(t *testing.T) {
	teamA := map[string]string{"tenant": "team-a"}
	tests := []struct {
		name  string
		facts func() Facts
	}{
		{"chart-stack", func() Facts {
			return facts(chartTenant(), []clusterapi.Facts{ready("tenant-team-a", "prod-eu-1", teamA), ready("tenant-team-a", "other-team", nil)})
		}},
		{"chart-stack-quota-valuesfrom-multiple-namespaces-and-stale", func() Facts {
			tn := chartTenant()
			tn.Spec.Management = &tenancyv1alpha1.ManagementSpec{Quota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/clusters.cluster.x-k8s.io": resource.MustParse("5")}}}
			tn.Spec.Stack.Chart.ValuesFrom = []meta.ValuesReference{{Kind: "ConfigMap", Name: "stack-values", ValuesKey: "prod.yaml", Optional: true}}
			f := facts(tn, []clusterapi.Facts{ready("tenant-team-a", "prod-eu-1", teamA), ready("shared-clusters", "shared-1", teamA),
				ready("shared-clusters", "shared-2", teamA)})
			f.Existing = []render.ExistingObject{owned(tn, helmv2.HelmReleaseKind, "old-namespace", "team-a-gone-0a1b2c3d"),
				owned(tn, sourcev1.OCIRepositoryKind, "old-namespace", "team-a-stack")}
			return f
		}},
		{"names-not-selector", func() Facts {
			tn := chartTenant()
			tn.Spec.Clusters.Selector = nil
			tn.Spec.Clusters.Names = []string{"legacy-1", "missing-1"}
			return facts(tn, []clusterapi.Facts{ready("shared-clusters", "legacy-1", nil), ready("tenant-team-a", "prod-eu-1", teamA)})
		}},
		{"kustomize-stack-target-namespace", func() Facts {
			tn := kustomizeTenant()
			f := facts(tn, []clusterapi.Facts{ready("team-b-clusters", "new", nil), ready("team-b-clusters", "namespaced", nil), ready("team-b-clusters", "installed", nil)})
			ref := func(name string) types.NamespacedName {
				return types.NamespacedName{Namespace: "team-b-clusters", Name: name}
			}
			f.Stacks = map[types.NamespacedName]StackFacts{
				// Nothing yet: its namespace Kustomization first.
				ref("new"): {Namespace: health.Observation{Kind: kustomizev1.KustomizationKind, Missing: true}},
				// The namespace exists: the stack too.
				ref("namespaced"): {Namespace: namespaceReady("team-b-clusters", render.TenantNamespaceObjectName(tn.Name, ref("namespaced")))},
				// A stack that exists is always written.
				ref("installed"): {StackExists: true, Namespace: health.Observation{Kind: kustomizev1.KustomizationKind, Missing: true}},
			}
			return f
		}},
		{"kustomize-stack-no-artifact-server", func() Facts {
			f := facts(kustomizeTenant(), []clusterapi.Facts{ready("team-b-clusters", "prod-1", nil)})
			f.NoArtifactServer = true
			return f
		}},
		{"suspended", func() Facts {
			tn := chartTenant()
			tn.Spec.Suspend = true
			return facts(tn, []clusterapi.Facts{ready("tenant-team-a", "prod-eu-1", teamA)})
		}},
		{"pending-clusters-not-watched", func() Facts {
			booting := ready("tenant-team-a", "booting", teamA)
			booting.ControlPlaneInitialized = false
			paused := ready("tenant-team-a", "paused", teamA)
			paused.PausedByAnnotation = true
			deleting := ready("tenant-team-a", "deleting", teamA)
			deleting.Deleting = true
			f := facts(chartTenant(), []clusterapi.Facts{booting, paused, deleting, ready("tenant-team-a", "no-kubeconfig", teamA)}, "no-kubeconfig")
			f.ClustersWatched = false
			return f
		}},
		// The refusals.
		{"refused-forbidden-management-namespace", func() Facts {
			tn := chartTenant()
			tn.Spec.Management = &tenancyv1alpha1.ManagementSpec{Namespace: "flux-system"}
			return facts(tn, nil)
		}},
		{"refused-another-tenants-namespace", func() Facts {
			tn := chartTenant()
			f := facts(tn, nil)
			f.Tenants = append(f.Tenants, tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "beta"},
				Spec: tenancyv1alpha1.TenantSpec{Management: &tenancyv1alpha1.ManagementSpec{Namespace: "shared-clusters"}}})
			return f
		}},
		{"refused-cluster-api-missing", func() Facts {
			f := facts(chartTenant(), nil)
			f.ClusterAPIMissing = &apimeta.NoKindMatchError{GroupKind: clusterapi.ClusterGVK.GroupKind(), SearchedVersions: []string{"v1beta2"}}
			return f
		}},
		{"refused-invalid-selector", func() Facts {
			tn := chartTenant()
			tn.Spec.Clusters.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}
			return facts(tn, []clusterapi.Facts{ready("tenant-team-a", "prod-eu-1", teamA)})
		}},
		{"refused-invalid-stack", func() Facts {
			tn := chartTenant()
			tn.Spec.Stack.Chart.URL = "https://ghcr.io/example/charts/platform-stack"
			return facts(tn, []clusterapi.Facts{ready("tenant-team-a", "prod-eu-1", teamA)})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Plan(tt.facts())
			got, merr := yaml.Marshal(golden(t, d, err))
			if merr != nil {
				t.Fatal(merr)
			}
			file := filepath.Join("testdata", tt.name+".yaml")
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, rerr := os.ReadFile(file)
			if rerr != nil {
				t.Fatalf("%v (run go test ./internal/plan/tenant -update to write it)", rerr)
			}
			if string(got) != string(want) {
				t.Errorf("the plan differs from %s (go test -update rewrites it; review the diff):\n%s", file, got)
			}
		})
	}
}

// goldenPlan is a plan as its golden file holds it: every object whole.
type goldenPlan struct {
	Refusal *plan.Refusal `json:"refusal,omitempty"`
	Writes  []goldenWrite `json:"writes,omitempty"`
	// PruneNeeds, Observe and Prune as kind namespace/name.
	PruneNeeds []string `json:"pruneNeeds,omitempty"`
	Prune      []string `json:"prune,omitempty"`
	Observe    []string `json:"observe,omitempty"`
	Nudges     bool     `json:"nudges,omitempty"`
	Poll       bool     `json:"poll,omitempty"`
	Selection  []string `json:"selection,omitempty"`
	Missing    []string `json:"missingNames,omitempty"`
}

type goldenWrite struct {
	Group    string         `json:"group,omitempty"`
	Needs    []string       `json:"needs,omitempty"`
	Uncached bool           `json:"uncached,omitempty"`
	Request  bool           `json:"request,omitempty"`
	Artifact string         `json:"artifact,omitempty"`
	Object   map[string]any `json:"object"`
}

func golden(t *testing.T, d Desired, err error) goldenPlan {
	t.Helper()
	var out goldenPlan
	if err != nil {
		r, ok := plan.AsRefusal(err)
		if !ok {
			t.Fatalf("Plan returned %v, not a refusal", err)
		}
		out.Refusal = r
	}
	for _, w := range d.Writes {
		u, aerr := plan.AsApplied(w.Object, plan.HashAnnotation)
		if aerr != nil {
			t.Fatal(aerr)
		}
		g := goldenWrite{Group: w.Group, Needs: w.Needs, Uncached: w.Uncached, Request: w.Request, Object: u.Object}
		if a := w.Artifact; a != nil {
			sum := sha256.Sum256(a.Data)
			g.Artifact = fmt.Sprintf("%d bytes, sha256:%s, of %s", len(a.Data), hex.EncodeToString(sum[:]), a.Of)
		}
		out.Writes = append(out.Writes, g)
	}
	out.PruneNeeds = d.PruneNeeds
	for _, o := range d.Prune {
		out.Prune = append(out.Prune, plan.KindOf(o)+" "+plan.ObjectRef(o))
	}
	for _, o := range d.Observe {
		out.Observe = append(out.Observe, plan.KindOf(o)+" "+plan.ObjectRef(o))
	}
	out.Nudges, out.Poll = d.Nudges != nil, d.Poll
	if d.Selection != nil {
		for _, c := range d.Selection.Clusters {
			out.Selection = append(out.Selection, c.String())
		}
		out.Missing = d.Selection.MissingNames
	}
	return out
}

// Every write needs the tenant's management; a cluster's needs its
// namespace's source; nothing is written for a refused tenant but its
// own namespace and RBAC, and nothing at all for a forbidden management
// namespace.
func TestPlanRefusals(t *testing.T) {
	tn := chartTenant()
	tn.Spec.Management = &tenancyv1alpha1.ManagementSpec{Namespace: "kube-system"}
	d, err := Plan(facts(tn, nil))
	r, ok := plan.AsRefusal(err)
	if !ok || !r.Stalls || r.Reason != tenancyv1alpha1.NamespaceNotAllowedReason || r.Condition != tenancyv1alpha1.ClustersReadyCondition {
		t.Fatalf("refusal %+v", err)
	}
	if len(d.Writes) != 0 || d.Management != nil || d.Nudges != nil || len(d.Observe) != 0 {
		t.Errorf("a forbidden management namespace plans %+v", d)
	}

	f := facts(chartTenant(), nil)
	f.ClusterAPIMissing = errors.New("no Clusters")
	d, err = Plan(f)
	if r, ok := plan.AsRefusal(err); !ok || r.Stalls || r.RetryAfter != time.Minute || r.Status != metav1.ConditionFalse {
		t.Errorf("Cluster API missing: %+v, want False retried every minute", err)
	}
	kinds := map[string]bool{}
	for _, w := range d.Writes {
		kinds[w.Object.GetObjectKind().GroupVersionKind().Kind] = true
		if w.Group != managementGroup || !w.Uncached {
			t.Errorf("write %s: group %q, uncached %v", plan.ObjectRef(w.Object), w.Group, w.Uncached)
		}
	}
	if len(kinds) != 3 || !kinds["Namespace"] || !kinds["ServiceAccount"] || !kinds["RoleBinding"] || len(d.Prune) != 0 {
		t.Errorf("Cluster API missing writes %v and prunes %d, want the namespace and RBAC only", kinds, len(d.Prune))
	}
}

// The nudges: the stack failed on its missing target namespace and the
// namespace Kustomization has not run since: it is asked to; once it
// ran, the stack is. A pending cluster, or one whose objects are someone
// else's (Needs), is not nudged.
func TestPlanNudges(t *testing.T) {
	tn := kustomizeTenant()
	cluster := types.NamespacedName{Namespace: "team-b-clusters", Name: "prod-1"}
	f := facts(tn, []clusterapi.Facts{ready(cluster.Namespace, cluster.Name, nil)})
	f.Stacks = map[types.NamespacedName]StackFacts{cluster: {StackExists: true}}
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	failed := metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	created := metav1.NewTime(failed.Add(-time.Hour))
	stack := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(tn.Name, cluster), Generation: 1},
		Status: kustomizev1.KustomizationStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: meta.ReconciliationFailedReason, ObservedGeneration: 1, LastTransitionTime: failed, Message: `namespaces "platform" not found`}}}}
	ns := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: render.TenantNamespaceObjectName(tn.Name, cluster), Generation: 1},
		Status: kustomizev1.KustomizationStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: meta.ReconciliationSucceededReason, ObservedGeneration: 1, LastTransitionTime: created}}}}
	observed := plan.Observed{
		plan.ObservedKey(kustomizev1.KustomizationKind, stack.Namespace, stack.Name): stack,
		plan.ObservedKey(kustomizev1.KustomizationKind, ns.Namespace, ns.Name):       ns,
	}
	n := d.Nudges(observed)
	if len(n) != 1 || n[0].Object.GetName() != ns.Name || n[0].Token != "2026-11-22T10:00:00Z" {
		t.Fatalf("nudges %+v, want the namespace Kustomization's, once for the stack's failure", n)
	}
	want := []string{managementGroup, namespaceGroup(cluster.Namespace), clusterGroup(cluster)}
	if fmt.Sprint(n[0].Needs) != fmt.Sprint(want) {
		t.Errorf("needs %v, want %v", n[0].Needs, want)
	}
	ns.Status.Conditions[0].LastTransitionTime = metav1.NewTime(failed.Add(time.Minute))
	if n := d.Nudges(observed); len(n) != 1 || n[0].Object.GetName() != stack.Name || n[0].Token != "2026-11-22T10:01:00Z" {
		t.Errorf("nudges %+v, want the stack's, once for the namespace's run", n)
	}

	tn.Spec.Suspend = true
	if d, _ := Plan(f); d.Nudges != nil {
		t.Error("a suspended tenant nudges Flux, which ignores suspended objects")
	}
}

// The fold, once per reconcile whatever it came to.
func TestFold(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	cluster := types.NamespacedName{Namespace: "tenant-team-a", Name: "prod-eu-1"}
	planOf := func(tn *tenancyv1alpha1.Tenant) (Desired, error) {
		return Plan(facts(tn, []clusterapi.Facts{ready(cluster.Namespace, cluster.Name, map[string]string{"tenant": "team-a"})}))
	}
	cond := func(tn *tenancyv1alpha1.Tenant, typ string) metav1.Condition {
		c := apimeta.FindStatusCondition(tn.Status.Conditions, typ)
		if c == nil {
			return metav1.Condition{}
		}
		return *c
	}

	t.Run("facts not gathered", func(t *testing.T) {
		tn := chartTenant()
		boom := errors.New("boom")
		if err := Fold(tn, Reconciled{Err: boom, Now: now}); err != boom {
			t.Errorf("Fold = %v", err)
		}
		if tn.Status.Namespace != "tenant-team-a" || cond(tn, tenancyv1alpha1.PausedCondition).Status != metav1.ConditionFalse ||
			cond(tn, tenancyv1alpha1.ManagementReadyCondition).Type != "" || cond(tn, tenancyv1alpha1.ClustersReadyCondition).Type != "" {
			t.Errorf("status %+v", tn.Status)
		}
	})
	t.Run("forbidden management namespace", func(t *testing.T) {
		tn := chartTenant()
		tn.Spec.Management = &tenancyv1alpha1.ManagementSpec{Namespace: "flux-system"}
		d, refusal := planOf(tn)
		err := Fold(tn, Reconciled{Desired: &d, Refusal: refusal, Result: plan.Result{Observed: plan.Observed{}}, Now: now})
		if r, ok := plan.AsRefusal(err); !ok || !r.Stalls {
			t.Fatalf("Fold = %v", err)
		}
		for _, typ := range []string{tenancyv1alpha1.ManagementReadyCondition, tenancyv1alpha1.ClustersReadyCondition} {
			if c := cond(tn, typ); c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.NamespaceNotAllowedReason {
				t.Errorf("%s = %+v", typ, c)
			}
		}
		if len(tn.Status.Clusters) != 0 {
			t.Errorf("clusters folded for a refused tenant: %+v", tn.Status.Clusters)
		}
	})
	t.Run("management conflict stalls, the clusters are folded", func(t *testing.T) {
		tn := chartTenant()
		d, _ := planOf(tn)
		err := Fold(tn, Reconciled{Desired: &d, Result: plan.Result{Conflicts: map[string]string{managementGroup: "Namespace tenant-team-a exists"},
			Observed: plan.Observed{}}, Now: now})
		if r, ok := plan.AsRefusal(err); !ok || !r.Stalls || r.Reason != tenancyv1alpha1.ObjectConflictReason || r.Condition != tenancyv1alpha1.ManagementReadyCondition {
			t.Fatalf("Fold = %v", err)
		}
		if c := cond(tn, tenancyv1alpha1.ManagementReadyCondition); c.Reason != tenancyv1alpha1.ObjectConflictReason || c.Message != "Namespace tenant-team-a exists" {
			t.Errorf("ManagementReady = %+v", c)
		}
		if len(tn.Status.Clusters) != 1 || tn.Status.Clusters[0].Phase != tenancyv1alpha1.ClusterPhaseInstalling {
			t.Errorf("clusters %+v", tn.Status.Clusters)
		}
	})
	t.Run("a management write failed", func(t *testing.T) {
		tn := chartTenant()
		d, _ := planOf(tn)
		boom := errors.New("applying Namespace tenant-team-a: boom")
		err := Fold(tn, Reconciled{Desired: &d, Result: plan.Result{Failed: &d.Writes[0]}, Err: boom, Now: now})
		if err != boom {
			t.Fatalf("Fold = %v", err)
		}
		if c := cond(tn, tenancyv1alpha1.ManagementReadyCondition); c.Reason != tenancyv1alpha1.ApplyFailedReason || c.Message != boom.Error() {
			t.Errorf("ManagementReady = %+v", c)
		}
		if len(tn.Status.Clusters) != 0 {
			t.Errorf("clusters folded without an observation: %+v", tn.Status.Clusters)
		}
	})
	t.Run("a Flux API missing", func(t *testing.T) {
		tn := chartTenant()
		d, _ := planOf(tn)
		inner := fmt.Errorf("reading HelmRelease x/y: %w", &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}})
		err := Fold(tn, Reconciled{Desired: &d, Result: plan.Result{Failed: &d.Writes[4]}, Err: fmt.Errorf("the API is not served: %w", inner), Now: now})
		r, ok := plan.AsRefusal(err)
		if !ok || r.Stalls || r.RetryAfter != time.Minute || r.Reason != tenancyv1alpha1.FluxAPIMissingReason {
			t.Fatalf("Fold = %v", err)
		}
		if c := cond(tn, tenancyv1alpha1.ClustersReadyCondition); c.Reason != tenancyv1alpha1.FluxAPIMissingReason ||
			c.Message != "a Flux API the tenant's stack needs is not served; install Flux (source, kustomize and helm controllers): "+inner.Error() {
			t.Errorf("ClustersReady = %+v", c)
		}
		if c := cond(tn, tenancyv1alpha1.ManagementReadyCondition); c.Status != metav1.ConditionTrue {
			t.Errorf("ManagementReady = %+v", c)
		}
	})
	t.Run("a cluster's conflict fails its line", func(t *testing.T) {
		tn := chartTenant()
		d, _ := planOf(tn)
		err := Fold(tn, Reconciled{Desired: &d, Result: plan.Result{Conflicts: map[string]string{namespaceGroup(cluster.Namespace): "OCIRepository x exists"},
			Observed: plan.Observed{}}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if l := tn.Status.Clusters; len(l) != 1 || l[0].Phase != tenancyv1alpha1.ClusterPhaseFailed || l[0].Reason != tenancyv1alpha1.NameConflictReason {
			t.Errorf("clusters %+v", l)
		}
		if c := cond(tn, tenancyv1alpha1.ManagementReadyCondition); c.Status != metav1.ConditionTrue || c.Message !=
			"Namespace tenant-team-a, ServiceAccount tenant-team-a/"+d.Management.ServiceAccount.Name+" and RoleBinding tenant-team-a/capwright-tenant (to ClusterRole capwright-tenant) are in place" {
			t.Errorf("ManagementReady = %+v", c)
		}
	})
}

// TestPlanMirrorsTheStack: the manager's mirror rules send every source
// of the stack (the one following the tag and a rollout's pinned ones
// alike) to the mirror, over plain HTTP where --insecure-registry names
// its host; a URL no rule matches is left alone.
func TestPlanMirrorsTheStack(t *testing.T) {
	rules, err := catalog.MirrorRules([]string{"ghcr.io/example=mirror.site:5000/copies"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		url          string
		insecure     []string
		wantURL      string
		wantInsecure bool
	}{
		{"mirrored, plain HTTP", "oci://ghcr.io/example/charts/platform-stack", []string{"mirror.site:5000"},
			"oci://mirror.site:5000/copies/charts/platform-stack", true},
		{"mirrored, TLS", "oci://ghcr.io/example/charts/platform-stack", nil, "oci://mirror.site:5000/copies/charts/platform-stack", false},
		{"no rule", "oci://quay.io/example/charts/platform-stack", []string{"mirror.site:5000"}, "oci://quay.io/example/charts/platform-stack", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := chartTenant()
			tn.Spec.Stack.Chart.URL = tc.url
			f := facts(tn, []clusterapi.Facts{ready("tenant-team-a", "prod-eu-1", map[string]string{"tenant": "team-a"}), ready("shared-clusters", "shared-1", map[string]string{"tenant": "team-a"})})
			f.Mirrors, f.InsecureRegistries = rules, tc.insecure
			d, err := Plan(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Rendered.Sources) != 2 {
				t.Fatalf("%d sources, want one per namespace (2)", len(d.Rendered.Sources))
			}
			for _, s := range d.Rendered.Sources {
				if s.Spec.URL != tc.wantURL || s.Spec.Insecure != tc.wantInsecure {
					t.Errorf("OCIRepository %s/%s: url %s insecure %v, want %s %v", s.Namespace, s.Name, s.Spec.URL, s.Spec.Insecure, tc.wantURL, tc.wantInsecure)
				}
			}
		})
	}
}
