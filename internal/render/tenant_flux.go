package render

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
)

// Helm remediation of a tenant's release. The stack is installed as soon
// as a control plane answers, often before the cluster can run workloads
// (no CNI or no worker yet), so a failed install is uninstalled and tried
// again without limit; a failed upgrade is rolled back after three tries
// and left for a person to look at.
const (
	tenantMaxRetryInterval = time.Minute
	tenantInstallRetries   = -1
	tenantUpgradeRetries   = 3
)

// TenantSource renders the tenant's OCIRepository in one namespace,
// shared by the Flux objects of all its clusters there. Unlike a
// provider's, it follows spec.stack's tag or semver range: nothing checks
// the artifact before Flux does, and health folding compares what each
// cluster applied with the revision this source holds.
func TenantSource(t *tenancyv1alpha1.Tenant, namespace string) (*sourcev1.OCIRepository, error) {
	if err := CheckTenantStack(t); err != nil {
		return nil, err
	}
	return tenantSource(t, namespace), nil
}

func tenantSource(t *tenancyv1alpha1.Tenant, namespace string) *sourcev1.OCIRepository {
	stack := t.Spec.Stack
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: tenantMeta(t, namespace, TenantSourceName(t.Name), true),
		Spec: sourcev1.OCIRepositorySpec{
			Interval: tenantInterval(stack),
			Timeout:  &metav1.Duration{Duration: sourceTimeout},
			Suspend:  t.Spec.Suspend,
		},
	}
	var access tenancyv1alpha1.OCIRepositoryAccess
	switch {
	case stack.Chart != nil:
		access = stack.Chart.OCIRepositoryAccess
		// Helm pushes chart version 1.2.3+build under tag 1.2.3_build:
		// OCI tags cannot hold a +.
		repo.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: strings.ReplaceAll(stack.Chart.Version, "+", "_"), SemVer: stack.Chart.SemVer}
		repo.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: artifact.HelmChartMediaType, Operation: sourcev1.OCILayerCopy}
	default:
		access = stack.Kustomize.OCIRepositoryAccess
		repo.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: stack.Kustomize.Tag, SemVer: stack.Kustomize.SemVer}
	}
	repo.Spec.URL = access.URL
	repo.Spec.SecretRef = access.SecretRef.DeepCopy()
	repo.Spec.CertSecretRef = access.CertSecretRef.DeepCopy()
	repo.Spec.Insecure = access.Insecure
	repo.Spec.Verify = tenantVerification(access.Verify)
	return repo
}

// tenantVerification is the OCIRepository's verify for a stack's.
func tenantVerification(v *tenancyv1alpha1.OCIVerification) *sourcev1.OCIRepositoryVerification {
	if v == nil {
		return nil
	}
	out := &sourcev1.OCIRepositoryVerification{Provider: cmp.Or(v.Provider, "cosign"), SecretRef: v.SecretRef.DeepCopy()}
	for _, id := range v.MatchOIDCIdentity {
		out.MatchOIDCIdentity = append(out.MatchOIDCIdentity, sourcev1.OIDCIdentityMatch{Issuer: id.Issuer, Subject: id.Subject})
	}
	return out
}

// TenantCluster renders the Flux objects installing the tenant's stack on
// one eligible cluster, in the Cluster's namespace, reaching the workload
// cluster through the Cluster's kubeconfig Secret: a HelmRelease, or a
// Kustomization and the Kustomization creating its target namespace.
func TenantCluster(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName) (*TenantClusterObjects, error) {
	if err := CheckTenantStack(t); err != nil {
		return nil, err
	}
	return tenantCluster(t, cluster, true)
}

// tenantCluster is TenantCluster for a tenant whose stack was checked;
// createNamespace is false when a kustomize stack's target namespace is
// not rendered (TenantOptions.NoArtifactServer).
func tenantCluster(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName, createNamespace bool) (*TenantClusterObjects, error) {
	if cluster.Namespace == "" || cluster.Name == "" {
		return nil, fmt.Errorf("render: cluster %q has no namespace or name", cluster)
	}
	out := &TenantClusterObjects{Cluster: cluster}
	if t.Spec.Stack.Chart != nil {
		out.HelmRelease = tenantHelmRelease(t, cluster)
		return out, nil
	}
	out.Kustomization = tenantKustomization(t, cluster)
	if createNamespace {
		out.Namespace = tenantNamespaceKustomization(t, cluster, out.Kustomization)
	}
	return out, nil
}

// tenantHelmRelease installs the chart into the target namespace, which
// Helm creates, and keeps the release's storage there too: by default
// helm-controller stores it in the HelmRelease's namespace, on the
// workload cluster, where that namespace (the Cluster's on the management
// cluster) usually does not exist.
func tenantHelmRelease(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName) *helmv2.HelmRelease {
	stack := t.Spec.Stack
	chart := stack.Chart
	target := t.TargetNamespace()
	hr := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: tenantClusterMeta(t, cluster),
		Spec: helmv2.HelmReleaseSpec{
			ChartRef:         &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: TenantSourceName(t.Name), Namespace: cluster.Namespace},
			Interval:         tenantInterval(stack),
			Timeout:          tenantTimeout(stack),
			Suspend:          t.Spec.Suspend,
			KubeConfig:       kubeConfig(cluster),
			ReleaseName:      tenantReleaseName(t.Name),
			TargetNamespace:  target,
			StorageNamespace: target,
			Install: &helmv2.Install{
				CreateNamespace: true,
				Remediation:     &helmv2.InstallRemediation{Retries: tenantInstallRetries},
			},
			// A new chart version brings its new CRDs along; Helm on its
			// own never updates those of crds/.
			Upgrade:        &helmv2.Upgrade{CRDs: helmv2.CreateReplace, Remediation: &helmv2.UpgradeRemediation{Retries: tenantUpgradeRetries}},
			DriftDetection: &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled},
			Values:         chart.Values.DeepCopy(),
			CommonMetadata: &helmv2.CommonMetadata{Labels: workloadLabels(t)},
		},
	}
	for _, v := range chart.ValuesFrom {
		hr.Spec.ValuesFrom = append(hr.Spec.ValuesFrom, *v.DeepCopy())
	}
	return hr
}

// tenantKustomization applies the artifact's path into the target
// namespace, health-checks everything it applied (wait) and prunes what a
// new artifact dropped, or everything when it is deleted.
//
// kustomize-controller does not create the target namespace: the
// Kustomization of tenantNamespaceKustomization does, before this one is
// written (see tenant_createnamespace.go). The artifact may carry a Namespace manifest of its own,
// which kustomize renames to the target namespace (its namespace
// transformer sets metadata.name of Namespace objects); this Kustomization
// then applies it and prunes it as any other object.
func tenantKustomization(t *tenancyv1alpha1.Tenant, cluster types.NamespacedName) *kustomizev1.Kustomization {
	stack := t.Spec.Stack
	k := stack.Kustomize
	path := k.Path
	if path == "" {
		path = "./"
	}
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: tenantClusterMeta(t, cluster),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: TenantSourceName(t.Name)},
			Path:            path,
			Prune:           true,
			Wait:            true,
			Interval:        tenantInterval(stack),
			RetryInterval:   tenantRetryInterval(stack),
			Timeout:         tenantTimeout(stack),
			Suspend:         t.Spec.Suspend,
			KubeConfig:      kubeConfig(cluster),
			TargetNamespace: t.TargetNamespace(),
			// Flux's default, spelled out so that Capwright owns it: an
			// Orphan someone set would leave the objects behind on deletion.
			DeletionPolicy: kustomizev1.DeletionPolicyMirrorPrune,
			CommonMetadata: &kustomizev1.CommonMetadata{Labels: workloadLabels(t)},
		},
	}
	// Without variables there is no postBuild: Flux would otherwise
	// substitute (to nothing) every ${…} the manifests carry on purpose.
	if len(k.Substitute) > 0 || len(k.SubstituteFrom) > 0 {
		pb := &kustomizev1.PostBuild{Substitute: maps.Clone(k.Substitute)}
		for _, ref := range k.SubstituteFrom {
			pb.SubstituteFrom = append(pb.SubstituteFrom, kustomizev1.SubstituteReference{Kind: ref.Kind, Name: ref.Name, Optional: ref.Optional})
		}
		ks.Spec.PostBuild = pb
	}
	return ks
}

// kubeConfig points a Flux object at the Cluster's kubeconfig Secret.
func kubeConfig(cluster types.NamespacedName) *meta.KubeConfigReference {
	return &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{
		Name: KubeconfigSecretName(cluster.Name), Key: kubeconfigSecretKey}}
}

// workloadLabels go on everything Flux installs on a workload cluster, so
// that `kubectl get -l tenancy.capwright.io/tenant=…` there finds it.
func workloadLabels(t *tenancyv1alpha1.Tenant) map[string]string {
	return map[string]string{tenancyv1alpha1.TenantLabel: t.Name}
}

func tenantInterval(stack tenancyv1alpha1.StackSpec) metav1.Duration {
	if stack.Interval != nil && stack.Interval.Duration > 0 {
		return *stack.Interval
	}
	return metav1.Duration{Duration: DefaultInterval}
}

// tenantRetryInterval is how soon Flux tries a failed Kustomization again:
// at most a minute, not the interval (Flux's default). A workload cluster
// fails for passing reasons a whole interval would leave visible: its API
// server not answering yet, or a cluster selected again while the target
// namespace of the earlier uninstall is still terminating there (the
// apply lands in the terminating namespace and the health check then
// finds it gone).
func tenantRetryInterval(stack tenancyv1alpha1.StackSpec) *metav1.Duration {
	return &metav1.Duration{Duration: min(tenantInterval(stack).Duration, tenantMaxRetryInterval)}
}

func tenantTimeout(stack tenancyv1alpha1.StackSpec) *metav1.Duration {
	if stack.Timeout != nil && stack.Timeout.Duration > 0 {
		return &metav1.Duration{Duration: stack.Timeout.Duration}
	}
	return &metav1.Duration{Duration: DefaultTimeout}
}

// CheckTenantStack refuses a stack the API server's validation would
// have refused (for callers like `capwright build` that read YAML without
// it), and what it cannot check: a semver range Flux cannot parse (with
// the library source-controller parses it with, so what Capwright takes
// Flux takes), and keyless signing identities that are not regular
// expressions.
func CheckTenantStack(t *tenancyv1alpha1.Tenant) error {
	stack := t.Spec.Stack
	switch {
	case t.Name == "":
		return errors.New("metadata.name: the Tenant has no name")
	case (stack.Chart == nil) == (stack.Kustomize == nil):
		return fmt.Errorf("spec.stack of Tenant %s: set exactly one of chart (an OCI Helm chart) or kustomize (an OCI artifact of manifests)", t.Name)
	case stack.Chart != nil:
		return checkRef(t.Name, "spec.stack.chart", stack.Chart.OCIRepositoryAccess, "version", stack.Chart.Version, stack.Chart.SemVer)
	default:
		return checkRef(t.Name, "spec.stack.kustomize", stack.Kustomize.OCIRepositoryAccess, "tag", stack.Kustomize.Tag, stack.Kustomize.SemVer)
	}
}

func checkRef(tenant, field string, access tenancyv1alpha1.OCIRepositoryAccess, exactName, exact, semverRange string) error {
	if !strings.HasPrefix(access.URL, "oci://") {
		return fmt.Errorf("%s.url of Tenant %s: %q is not an oci:// URL", field, tenant, access.URL)
	}
	if (exact == "") == (semverRange == "") {
		return fmt.Errorf("%s of Tenant %s: set exactly one of %s or semver", field, tenant, exactName)
	}
	if semverRange != "" {
		if _, err := semver.NewConstraint(semverRange); err != nil {
			return fmt.Errorf("%s.semver of Tenant %s: %q is not a version range (%v); write e.g. \">=1.4.0 <2.0.0\" or \"1.x\"", field, tenant, semverRange, err)
		}
	}
	if err := checkIdentities(field+".verify", tenantVerification(access.Verify)); err != nil {
		return fmt.Errorf("Tenant %s: %w", tenant, err)
	}
	return nil
}
