package render

import (
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
)

// The target namespace of a kustomize stack, created the way Helm's
// createNamespace creates a chart's: kustomize-controller does not create
// the namespace a Kustomization applies into, and Capwright never writes
// to a workload cluster itself. So Capwright hands Flux a Namespace
// manifest as the artifact of an ExternalArtifact — packed and served by
// the manager, as for a provider's additional manifests — and per cluster
// a small Kustomization applies it. The controller writes the stack's
// Kustomization once that one is Ready (health.TenantNamespaceCreated),
// not with dependsOn: kustomize-controller enqueues a Kustomization's
// dependencies with it whenever its source has a new revision, so every
// new version of the stack would run every cluster's namespace
// Kustomization again against its workload cluster, ahead of the stacks.
//
//   - One ExternalArtifact per namespace with selected clusters, shared by
//     the tenant's clusters there (as the stack's OCIRepository is): with
//     Flux's --no-cross-namespace-refs a Kustomization may only use a
//     source of its own namespace. Its artifact does not depend on the
//     cluster: thousands of clusters share a handful of them.
//   - The Namespace carries kustomize.toolkit.fluxcd.io/ssa: IfNotPresent:
//     kustomize-controller creates it when it is missing and otherwise
//     leaves it alone. A Namespace manifest of the artifact itself
//     (kustomize renames it to the target namespace, which was the way
//     before) is then the stack's alone to apply — its labels and
//     annotations are never fought over by two Kustomizations of the same
//     field manager — and pruned with the stack, as it always was.
//   - The namespace is never deleted by Capwright: prune false and
//     deletionPolicy Orphan, as Helm never deletes a namespace it created.
//     It may hold what else the team put there.
const (
	// TenantNamespaceFile is the one file of the namespace's artifact.
	TenantNamespaceFile = "namespace.yaml"
	// tenantNamespaceSuffix names the ExternalArtifact and the
	// Kustomizations of the target namespace.
	tenantNamespaceSuffix = "-namespace"
	// tenantNamespaceInterval is how often Flux re-checks that the
	// namespace exists: it only ever creates it, so an hour (or the
	// stack's interval when longer) is plenty, and a thousand clusters
	// add a thousand cheap reconciles an hour, not one per stack
	// interval. A failed one is retried as the stack is
	// (tenantRetryInterval), and Capwright asks for one at once when the
	// stack finds the namespace gone.
	tenantNamespaceInterval = time.Hour
	// ssaAnnotation and ssaIfNotPresent are kustomize-controller's
	// per-object apply policy: create, never update.
	ssaAnnotation   = "kustomize.toolkit.fluxcd.io/ssa"
	ssaIfNotPresent = "IfNotPresent"
)

// TenantNamespaceArtifactName names a tenant's ExternalArtifact of the
// target namespace in each namespace with selected clusters:
// "<tenant>-namespace".
func TenantNamespaceArtifactName(tenant string) string { return tenant + tenantNamespaceSuffix }

// TenantNamespaceObjectName names the Kustomization that creates the
// tenant's target namespace on one cluster: the name of the stack's Flux
// object there with "-namespace" after the hash, at most 63 characters
// (Flux labels what it applies with it). It cannot be another stack's
// name: those end in the hash.
func TenantNamespaceObjectName(tenant string, cluster types.NamespacedName) string {
	return hashedName(tenant+"-"+cluster.Name, tenant+"/"+cluster.Namespace+"/"+cluster.Name, maxLabelValue-len(tenantNamespaceSuffix)) + tenantNamespaceSuffix
}

// TenantNamespaceArtifact packs the artifact of a kustomize stack's target
// namespace: one Namespace manifest, created only if it is missing. The
// same tenant always gives the same bytes, so the controller stores and
// announces it once; nil for a chart stack (Helm creates its namespace).
func TenantNamespaceArtifact(t *tenancyv1alpha1.Tenant) ([]byte, error) {
	if t.Spec.Stack.Kustomize == nil {
		return nil, nil
	}
	ns := map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":        t.TargetNamespace(),
			"annotations": map[string]any{ssaAnnotation: ssaIfNotPresent},
		},
	}
	data, err := yaml.Marshal(ns)
	if err != nil {
		return nil, err
	}
	return artifact.PackTarGz(map[string][]byte{TenantNamespaceFile: data})
}

// tenantNamespaceArtifact is the ExternalArtifact of the target namespace
// in one namespace. Its status — the artifact — is the controller's to
// write once it stored the artifact.
func tenantNamespaceArtifact(t *tenancyv1alpha1.Tenant, namespace string) *sourcev1.ExternalArtifact {
	return &sourcev1.ExternalArtifact{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.ExternalArtifactKind},
		ObjectMeta: tenantMeta(t, namespace, TenantNamespaceArtifactName(t.Name), true),
		Spec: sourcev1.ExternalArtifactSpec{SourceRef: &meta.NamespacedObjectKindReference{
			APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: tenancyv1alpha1.TenantKind, Name: t.Name,
		}},
	}
}

// tenantNamespaceKustomization creates the target namespace on one
// cluster, as the stack's Kustomization reaches it: the same kubeconfig,
// the same identity (neither sets spec.serviceAccountName: under Flux's
// lockdown both impersonate --default-service-account), suspended with
// it. wait makes it Ready only once the namespace exists.
func tenantNamespaceKustomization(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName, stack *kustomizev1.Kustomization) *kustomizev1.Kustomization {
	m := tenantClusterMeta(t, cluster)
	m.Name = TenantNamespaceObjectName(t.Name, cluster)
	return &kustomizev1.Kustomization{
		TypeMeta:   stack.TypeMeta,
		ObjectMeta: m,
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: TenantNamespaceArtifactName(t.Name)},
			Path:               "./",
			Prune:              false,
			Wait:               true,
			Interval:           metav1.Duration{Duration: max(tenantNamespaceInterval, stack.Spec.Interval.Duration)},
			RetryInterval:      stack.Spec.RetryInterval.DeepCopy(),
			Timeout:            stack.Spec.Timeout.DeepCopy(),
			Suspend:            stack.Spec.Suspend,
			KubeConfig:         stack.Spec.KubeConfig.DeepCopy(),
			ServiceAccountName: stack.Spec.ServiceAccountName,
			// Never deleted with the Kustomization: see above.
			DeletionPolicy: kustomizev1.DeletionPolicyOrphan,
			CommonMetadata: &kustomizev1.CommonMetadata{Labels: workloadLabels(t)},
		},
	}
}
