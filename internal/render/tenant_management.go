package render

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// TenantManagement renders the tenant's objects on the management cluster.
//
// The ServiceAccount, named after the tenant, is what the tenant's own Flux
// Kustomizations in its namespace impersonate (spec.serviceAccountName).
// No Pod needs its token, so none is mounted. It is bound by a RoleBinding
// — a grant that stops at the namespace — to the ClusterRole
// capwright-tenant rather than to rules rendered here: the platform team
// curates one role for all tenants (Capwright ships it as an aggregation of
// the built-in admin role, which cannot change ResourceQuotas, and of
// ClusterRoles labelled tenancy.capwright.io/aggregate-to-tenant for the
// Cluster API kinds), and Capwright's manager only needs the bind verb on
// that one role.
func TenantManagement(t *tenancyv1alpha1.Tenant) TenantManagementObjects {
	ns := t.ManagementNamespace()
	automount := false
	out := TenantManagementObjects{
		Namespace: &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: tenantNamespaceMeta(t, ns),
		},
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   tenantMeta(t, ns, t.Name, true),
			AutomountServiceAccountToken: &automount,
		},
		RoleBinding: &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: tenantMeta(t, ns, TenantObjectName, true),
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: t.Name, Namespace: ns}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: tenancyv1alpha1.TenantClusterRole},
		},
	}
	if m := t.Spec.Management; m != nil && m.Quota != nil {
		out.ResourceQuota = &corev1.ResourceQuota{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: tenantMeta(t, ns, TenantObjectName, true),
			Spec:       *m.Quota.DeepCopy(),
		}
	}
	return out
}

// The Pod Security admission labels
// (https://kubernetes.io/docs/concepts/security/pod-security-admission/).
const (
	PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
	PodSecurityAuditLabel   = "pod-security.kubernetes.io/audit"
	PodSecurityWarnLabel    = "pod-security.kubernetes.io/warn"
)

// tenantNamespaceMeta is the metadata of the tenant's namespace: the
// tenant label, and the tenant's Pod Security level enforced, audited and
// warned about. No version label: the level follows the API server's
// Kubernetes version, as Kubernetes does by default.
func tenantNamespaceMeta(t *tenancyv1alpha1.Tenant, ns string) metav1.ObjectMeta {
	m := tenantMeta(t, "", ns, false)
	level := string(t.PodSecurityLevel())
	for _, l := range []string{PodSecurityEnforceLabel, PodSecurityAuditLabel, PodSecurityWarnLabel} {
		m.Labels[l] = level
	}
	return m
}
