package tenant

import (
	"errors"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/health"
	"github.com/capwright/capwright/internal/plan"
)

// TestPlanRefusesAnUnusableSpecWhateverItSelects: a stack or selector
// that could never be used stalls the Tenant (ClustersReady and Ready
// False, the refusal Stalls) as soon as it is applied — with no Cluster
// selected yet, and before Cluster API is served — not only once a
// Cluster comes; the message names the field. What Flux takes (a range
// with wildcards) is taken.
func TestPlanRefusesAnUnusableSpecWhateverItSelects(t *testing.T) {
	teamB := []clusterapi.Facts{ready("team-b-clusters", "prod-1", nil)}
	selections := []struct {
		name  string
		facts func(*tenancyv1alpha1.Tenant) Facts
	}{
		{"no Cluster selected", func(tn *tenancyv1alpha1.Tenant) Facts { return facts(tn, nil) }},
		{"Cluster API not served", func(tn *tenancyv1alpha1.Tenant) Facts {
			f := facts(tn, nil)
			f.ClusterAPIMissing = errors.New("no Clusters")
			return f
		}},
		{"a Cluster selected", func(tn *tenancyv1alpha1.Tenant) Facts { return facts(tn, teamB) }},
	}
	specs := []struct {
		name   string
		change func(*tenancyv1alpha1.Tenant)
		reason string
		want   string // "" accepts the spec
	}{
		{"kustomize semver range Flux cannot parse", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Stack.Kustomize.Tag, tn.Spec.Stack.Kustomize.SemVer = "", ">= one"
		}, tenancyv1alpha1.InvalidStackReason, `spec.stack.kustomize.semver of Tenant team-b: ">= one" is not a version range`},
		{"chart semver range Flux cannot parse", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Stack.Kustomize = nil
			tn.Spec.Stack.Chart = &tenancyv1alpha1.ChartStack{OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://ghcr.io/example/charts/stack"}, SemVer: "1.2.3.4"}
		}, tenancyv1alpha1.InvalidStackReason, `spec.stack.chart.semver of Tenant team-b: "1.2.3.4" is not a version range`},
		{"keyless identity that is no regular expression", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Stack.Kustomize.Verify = &tenancyv1alpha1.OCIVerification{MatchOIDCIdentity: []tenancyv1alpha1.OIDCIdentityMatch{
				{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/example/(stack/.*$"}}}
		}, tenancyv1alpha1.InvalidStackReason, "Tenant team-b: spec.stack.kustomize.verify.matchOIDCIdentity[0].subject is not a regular expression"},
		{"selector with a label value Kubernetes does not allow", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Clusters.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod eu"}}
		}, tenancyv1alpha1.InvalidSelectorReason, "spec.clusters.selector of Tenant team-b:"},
		// Masterminds/semver, as source-controller, takes wildcards in
		// a comparison: >=1.x is >=1.0.0.
		{"range with a wildcard", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Stack.Kustomize.Tag, tn.Spec.Stack.Kustomize.SemVer = "", ">=1.x"
		}, "", ""},
	}
	for _, spec := range specs {
		for _, sel := range selections {
			t.Run(spec.name+", "+sel.name, func(t *testing.T) {
				tn := kustomizeTenant()
				spec.change(tn)
				f := sel.facts(tn)
				d, err := Plan(f)
				r, refused := plan.AsRefusal(err)
				if spec.want == "" {
					if refused && r.Reason != tenancyv1alpha1.ClusterAPIMissingReason {
						t.Fatalf("refused %v, want it accepted", err)
					}
					return
				}
				if !refused || !r.Stalls || r.Condition != tenancyv1alpha1.ClustersReadyCondition || r.Reason != spec.reason || !strings.Contains(r.Message, spec.want) {
					t.Fatalf("Plan = %+v, want a stalling %s refusal of ClustersReady saying %q", err, spec.reason, spec.want)
				}
				for _, w := range d.Writes {
					if w.Group != managementGroup {
						t.Errorf("a refused tenant writes %s %s, beyond its namespace and RBAC", plan.KindOf(w.Object), plan.ObjectRef(w.Object))
					}
				}

				// What the Tenant then says.
				folded := Fold(tn, Reconciled{Desired: &d, Refusal: err, Result: plan.Result{Observed: plan.Observed{}}, Now: metav1.NewTime(time.Now())})
				if fr, ok := plan.AsRefusal(folded); !ok || !fr.Stalls {
					t.Errorf("Fold = %v, want the stalling refusal", folded)
				}
				if c := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ClustersReadyCondition); c == nil ||
					c.Status != metav1.ConditionFalse || c.Reason != spec.reason {
					t.Errorf("ClustersReady = %+v", c)
				}
				ready := health.TenantSummary(tn.Generation, tn.Status.Conditions, false, metav1.Now())
				if ready.Status != metav1.ConditionFalse || ready.Reason != spec.reason || !strings.Contains(ready.Message, spec.want) {
					t.Errorf("Ready = %+v, want False %s", ready, spec.reason)
				}
			})
		}
	}
}
