package render

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

func TestCheckTenantObject(t *testing.T) {
	tenant := chartTenant()
	objs, err := TenantCluster(tenant, prodEU1)
	if err != nil {
		t.Fatal(err)
	}
	desired := objs.HelmRelease
	ns := TenantManagement(tenant).Namespace
	tests := []struct {
		name     string
		kind     string
		existing metav1.ObjectMeta
		desired  metav1.Object
		want     string // substring of the conflict; "" = ours
	}{{
		name:     "created by Capwright for this tenant",
		kind:     "HelmRelease",
		existing: *desired.ObjectMeta.DeepCopy(),
		desired:  desired,
	}, {
		name: "ours, with its label taken off by someone",
		kind: "HelmRelease",
		existing: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name,
			Labels: map[string]string{"app": "edited"}, OwnerReferences: desired.OwnerReferences},
		desired: desired,
	}, {
		name:     "a user's HelmRelease with the same name",
		kind:     "HelmRelease",
		existing: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name, Labels: map[string]string{"app": "mine"}},
		desired:  desired,
		want:     "HelmRelease tenant-team-a/" + desired.Name + " exists and was not created by Capwright for Tenant team-a (it has no tenancy.capwright.io/tenant label); Capwright leaves it alone: rename or delete it",
	}, {
		name: "another tenant's",
		kind: "HelmRelease",
		existing: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name,
			Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-b"}, OwnerReferences: wantOwner("team-b", "b0b")},
		desired: desired,
		want:    "it is labelled for Tenant team-b",
	}, {
		name: "left over from an earlier Tenant of the same name",
		kind: "HelmRelease",
		existing: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name,
			Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}, OwnerReferences: wantOwner("team-a", "old-uid")},
		desired: desired,
		want:    "it is not owned by this Tenant (uid " + tenantUID + ")",
	}, {
		name:     "the label copied by hand does not make it ours",
		kind:     "HelmRelease",
		existing: metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name, Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}},
		desired:  desired,
		want:     "it is not owned by this Tenant",
	}, {
		name:     "the tenant's namespace, labelled (not owned: it holds the Clusters)",
		kind:     "Namespace",
		existing: metav1.ObjectMeta{Name: "tenant-team-a", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}},
		desired:  ns,
	}, {
		name:     "a namespace that existed before",
		kind:     "Namespace",
		existing: metav1.ObjectMeta{Name: "tenant-team-a"},
		desired:  ns,
		want:     "Namespace tenant-team-a exists and was not created by Capwright for Tenant team-a (it has no tenancy.capwright.io/tenant label); Capwright leaves it alone: set spec.management.namespace to a namespace that does not exist, or label this one tenancy.capwright.io/tenant=team-a to hand it over",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTenantObject(tt.kind, &tt.existing, tt.desired)
			if tt.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			var conflict *ConflictError
			if !errors.As(err, &conflict) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want a ConflictError containing %q", err, tt.want)
			}
		})
	}
}

func TestStaleTenantObjects(t *testing.T) {
	tenant := chartTenant()
	eligible := types.NamespacedName{Namespace: "tenant-team-a", Name: "eligible"}
	paused := types.NamespacedName{Namespace: "tenant-team-a", Name: "paused"}
	dropped := types.NamespacedName{Namespace: "shared-clusters", Name: "dropped"}
	sel := ClusterSelection{Clusters: []ClusterDecision{
		{Cluster: eligible, Selected: true, Eligible: true},
		{Cluster: paused, Selected: true, Reason: tenancyv1alpha1.ClusterPausedReason},
		{Cluster: dropped},
	}}
	out, err := Tenant(tenant, sel, TenantOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// What the controller finds labelled for the tenant.
	clusterObject := func(kind string, c types.NamespacedName) ExistingObject {
		m := tenantClusterMeta(tenant, c)
		return ExistingObject{Kind: kind, Object: &m}
	}
	owned := func(kind, namespace, name string) ExistingObject {
		m := tenantMeta(tenant, namespace, name, true)
		return ExistingObject{Kind: kind, Object: &m}
	}
	foreign := owned("HelmRelease", "shared-clusters", "not-ours")
	foreign.Object.SetOwnerReferences(wantOwner("team-a", "someone-else"))
	existing := []ExistingObject{
		{Kind: "Namespace", Object: &metav1.ObjectMeta{Name: "tenant-team-a", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}}},
		owned("ServiceAccount", "tenant-team-a", "team-a"),
		owned("RoleBinding", "tenant-team-a", TenantObjectName),
		owned("ResourceQuota", "tenant-team-a", TenantObjectName), // spec.management.quota was removed
		owned("OCIRepository", "tenant-team-a", "team-a-stack"),
		owned("OCIRepository", "shared-clusters", "team-a-stack"), // no selected cluster there any more
		clusterObject("HelmRelease", eligible),
		clusterObject("Kustomization", eligible), // the stack used to be a kustomize artifact
		clusterObject("Kustomization", paused),   // kept while the cluster is paused
		clusterObject("HelmRelease", dropped),
		foreign,
		owned("ConfigMap", "tenant-team-a", "labelled-by-hand"), // not a kind Capwright writes
	}
	var got []string
	for _, e := range StaleTenantObjects(tenant, out, sel, existing) {
		got = append(got, e.Kind+" "+e.Object.GetNamespace()+"/"+e.Object.GetName())
	}
	want := []string{
		"ResourceQuota tenant-team-a/capwright-tenant",
		"OCIRepository shared-clusters/team-a-stack",
		"Kustomization tenant-team-a/" + TenantClusterObjectName("team-a", eligible),
		"HelmRelease shared-clusters/" + TenantClusterObjectName("team-a", dropped),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stale =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// With the quota back in the spec it is kept.
	tenant.Spec.Management = &tenancyv1alpha1.ManagementSpec{Quota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("1")}}}
	out, _ = Tenant(tenant, sel, TenantOptions{})
	for _, e := range StaleTenantObjects(tenant, out, sel, existing) {
		if e.Kind == "ResourceQuota" {
			t.Error("the quota is stale although spec.management.quota is set")
		}
	}
}
