package render

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestProviderInstaller: the installer ServiceAccount is the provider's
// (controlled by it, in its namespace), its binding names the installer
// role and that ServiceAccount only, and every Flux object that applies
// something for the provider names the ServiceAccount.
func TestProviderInstaller(t *testing.T) {
	p := coreProvider()
	p.Spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: "extra"}
	in := inputFor(t, p)
	inst, err := ProviderInstaller(in)
	if err != nil {
		t.Fatal(err)
	}
	sa, crb := inst.ServiceAccount, inst.ClusterRoleBinding
	if sa.Namespace != "capi-system" || sa.Name != "core-cluster-api-installer" || sa.Kind != "ServiceAccount" || sa.APIVersion != "v1" {
		t.Errorf("ServiceAccount %s %s/%s", sa.APIVersion+"/"+sa.Kind, sa.Namespace, sa.Name)
	}
	if !ControlledBy(sa, p.UID) || sa.Labels[v1alpha1.ProviderKindLabel] != "CoreProvider" || sa.Labels[v1alpha1.ProviderNameLabel] != "cluster-api" {
		t.Errorf("ServiceAccount metadata %+v, want it controlled by and labelled for the provider", sa.ObjectMeta)
	}
	if crb.Name != "capwright-provider-installer:capi-system:core-cluster-api" || crb.Namespace != "" || len(crb.OwnerReferences) != 0 {
		t.Errorf("ClusterRoleBinding %q (namespace %q, owners %v), want cluster-scoped, named for the provider, no namespaced owner", crb.Name, crb.Namespace, crb.OwnerReferences)
	}
	for k, v := range map[string]string{v1alpha1.ProviderKindLabel: "CoreProvider", v1alpha1.ProviderNameLabel: "cluster-api", v1alpha1.ProviderNamespaceLabel: "capi-system"} {
		if crb.Labels[k] != v {
			t.Errorf("ClusterRoleBinding label %s = %q, want %q", k, crb.Labels[k], v)
		}
	}
	if crb.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: v1alpha1.InstallerClusterRole}) {
		t.Errorf("roleRef %+v", crb.RoleRef)
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}) {
		t.Errorf("subjects %+v, want only the installer ServiceAccount", crb.Subjects)
	}

	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kustomization.Spec.ServiceAccountName != sa.Name || out.AdditionalKustomization.Spec.ServiceAccountName != sa.Name {
		t.Errorf("serviceAccountName: Kustomization %q, additional manifests' %q, want %q",
			out.Kustomization.Spec.ServiceAccountName, out.AdditionalKustomization.Spec.ServiceAccountName, sa.Name)
	}
	chart, err := Provider(chartInput(chartProvider()))
	if err != nil {
		t.Fatal(err)
	}
	if want := InstallerServiceAccountName(v1alpha1.AddonProviderType, chartProvider().Name); chart.HelmRelease.Spec.ServiceAccountName != want {
		t.Errorf("HelmRelease serviceAccountName %q, want %q", chart.HelmRelease.Spec.ServiceAccountName, want)
	}
}
