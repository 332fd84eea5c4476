package render

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// installerSuffix ends the name of a provider's installer ServiceAccount.
const installerSuffix = "-installer"

// InstallerObjects are the identity Flux applies one provider with: a
// ServiceAccount in the provider's namespace, which the provider's
// Kustomizations or HelmRelease name as spec.serviceAccountName, and the
// ClusterRoleBinding that gives it v1alpha1.InstallerClusterRole.
//
// Under Flux's multi-tenancy lockdown (--default-service-account) a Flux
// object without spec.serviceAccountName applies as the namespace's
// "default" ServiceAccount, which may do nothing; without lockdown it
// applies as the controller itself, cluster-admin. Naming an identity of
// the provider's own makes an install work the same way in both, with
// the same permissions, and under --no-cross-namespace-refs no Flux
// object outside the provider's namespace can name it.
type InstallerObjects struct {
	ServiceAccount     *corev1.ServiceAccount
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
}

// InstallerServiceAccountName names a provider's installer ServiceAccount:
// its Flux objects' name with "-installer", e.g. core-cluster-api-installer.
func InstallerServiceAccountName(providerType, name string) string {
	return ObjectName(providerType, name) + installerSuffix
}

// InstallerBindingName names the ClusterRoleBinding of a provider's
// installer: cluster-scoped, so it carries the provider's namespace.
func InstallerBindingName(p v1alpha1.Provider) string {
	return v1alpha1.InstallerClusterRole + ":" + p.GetNamespace() + ":" + ObjectName(p.ProviderType(), p.GetName())
}

// ProviderInstaller renders a provider's installer identity. The
// ServiceAccount is controlled by the provider, so garbage collection
// removes it with the provider once the provider's finalizer is gone,
// that is after Flux pruned with it. The ClusterRoleBinding cannot name a
// namespaced owner: it carries the provider's kind, name and namespace as
// labels, and the controller deletes it at the same point.
func ProviderInstaller(in Input) (*InstallerObjects, error) {
	om, err := newObjectMeta(in)
	if err != nil {
		return nil, err
	}
	p := in.Provider
	saMeta := om.build()
	saMeta.Name = InstallerServiceAccountName(p.ProviderType(), p.GetName())
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: saMeta,
	}
	labels := map[string]string{
		v1alpha1.ProviderKindLabel:      om.kind,
		v1alpha1.ProviderNameLabel:      p.GetName(),
		v1alpha1.ProviderNamespaceLabel: p.GetNamespace(),
	}
	crb := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: InstallerBindingName(p), Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: v1alpha1.InstallerClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}
	return &InstallerObjects{ServiceAccount: sa, ClusterRoleBinding: crb}, nil
}
