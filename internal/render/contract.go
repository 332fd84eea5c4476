package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
)

// The backend of a Cluster API contract object (CapwrightControlPlane,
// CapwrightCluster), and why it looks the way it does:
//
//   - It lives in the object's namespace (the Cluster's), on the
//     management cluster, controlled by the object: deleting the object
//     uninstalls it through Flux (and garbage collection finds it even
//     without the controller). Flux objects carry the owner label
//     clusters.capwright.io/owner=<Kind>.<name>.
//   - Their names say which kind they serve: controlplane-<name> or
//     infrastructure-<name>, so a Cluster's control plane and
//     infrastructure of the same name never collide.
//   - A chart's Helm release is named after the Cluster (control plane)
//     or <cluster>-infra (infrastructure), in the Cluster's namespace: a
//     chart's templates name what they create from .Release.Name, and
//     statusFrom.name can say ${CLUSTER_NAME}.
//   - The source follows one chart version or tag; Flux verifies it when
//     asked, and the manager's registry mirror rules have been applied to
//     its URL by the caller.

// ContractInput is a rendered backend's input: the object, its backend
// with every variable substituted, and the Cluster it serves.
type ContractInput struct {
	// Owner is the contract object; Kind is its kind.
	Owner Object
	Kind  string
	// Cluster is the owning Cluster's name.
	Cluster string
	// Backend is the backend, variables substituted.
	Backend clustersv1alpha1.Backend
	// URL is the backend's repository after mirror rules; Insecure says
	// its registry is reached over plain HTTP (the manager's
	// --insecure-registry) whatever the backend says.
	URL      string
	Insecure bool
}

// ContractObjects are the Flux objects of one backend: the source and
// exactly one of HelmRelease or Kustomization.
type ContractObjects struct {
	Source        *sourcev1.OCIRepository
	HelmRelease   *helmv2.HelmRelease
	Kustomization *kustomizev1.Kustomization
}

// Objects lists them, source first.
func (c *ContractObjects) Objects() []Object {
	out := []Object{c.Source}
	if c.HelmRelease != nil {
		out = append(out, c.HelmRelease)
	}
	if c.Kustomization != nil {
		out = append(out, c.Kustomization)
	}
	return out
}

// Applier is the HelmRelease or the Kustomization.
func (c *ContractObjects) Applier() Object {
	if c.HelmRelease != nil {
		return c.HelmRelease
	}
	return c.Kustomization
}

// ContractObjectName names the Flux objects of a contract object of kind.
func ContractObjectName(kind, name string) string {
	prefix := "infrastructure-"
	if kind == clustersv1alpha1.ControlPlaneKind {
		prefix = "controlplane-"
	}
	if len(prefix)+len(name) <= 63 {
		return prefix + name
	}
	return hashedName(prefix+name, kind+"/"+name, 63)
}

// ContractReleaseName is the Helm release of a contract object's chart.
func ContractReleaseName(kind, cluster string) string {
	name := cluster
	if kind != clustersv1alpha1.ControlPlaneKind {
		name = cluster + "-infra"
	}
	if len(name) <= helmReleaseNameMax {
		return name
	}
	return hashedName(name, kind+"/"+cluster, helmReleaseNameMax)
}

// OwnerLabelValue is the value of clustersv1alpha1.BackendLabel for an
// object.
func OwnerLabelValue(kind, name string) string {
	v := kind + "." + name
	if len(v) <= 63 {
		return v
	}
	return hashedName(v, kind+"/"+name, 63)
}

// contractSourceTimeout bounds one pull of a backend artifact.
const contractSourceTimeout = time.Minute

// ContractBackend renders the Flux objects of a backend.
func ContractBackend(in ContractInput) (*ContractObjects, error) {
	b := in.Backend
	name := ContractObjectName(in.Kind, in.Owner.GetName())
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Namespace: in.Owner.GetNamespace(),
			Name:      name,
			Labels:    map[string]string{clustersv1alpha1.BackendLabel: OwnerLabelValue(in.Kind, in.Owner.GetName())},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clustersv1alpha1.GroupVersion.String(), Kind: in.Kind,
				Name: in.Owner.GetName(), UID: in.Owner.GetUID(),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		}
	}
	interval := metav1.Duration{Duration: DefaultInterval}
	if b.Interval != nil && b.Interval.Duration > 0 {
		interval = *b.Interval
	}
	timeout := &metav1.Duration{Duration: DefaultTimeout}
	if b.Timeout != nil && b.Timeout.Duration > 0 {
		timeout = &metav1.Duration{Duration: b.Timeout.Duration}
	}
	var access clustersv1alpha1.OCIRepositoryAccess
	src := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: meta(),
		Spec: sourcev1.OCIRepositorySpec{
			Interval: interval,
			Timeout:  &metav1.Duration{Duration: contractSourceTimeout},
		},
	}
	out := &ContractObjects{Source: src}
	switch {
	case b.Chart != nil:
		access = b.Chart.OCIRepositoryAccess
		// Helm pushes chart version 1.2.3+build under tag 1.2.3_build.
		src.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: strings.ReplaceAll(b.Chart.Version, "+", "_")}
		src.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: artifact.HelmChartMediaType, Operation: sourcev1.OCILayerCopy}
		out.HelmRelease = &helmv2.HelmRelease{
			TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
			ObjectMeta: meta(),
			Spec: helmv2.HelmReleaseSpec{
				ChartRef:           &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: name},
				Interval:           interval,
				Timeout:            timeout,
				ReleaseName:        ContractReleaseName(in.Kind, in.Cluster),
				ServiceAccountName: b.ServiceAccountName,
				Install:            &helmv2.Install{Remediation: &helmv2.InstallRemediation{Retries: tenantInstallRetries}},
				Upgrade:            &helmv2.Upgrade{CRDs: helmv2.CreateReplace, Remediation: &helmv2.UpgradeRemediation{Retries: tenantUpgradeRetries}},
				DriftDetection:     &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled},
				Values:             b.Chart.Values.DeepCopy(),
			},
		}
	case b.Kustomize != nil:
		access = b.Kustomize.OCIRepositoryAccess
		src.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: b.Kustomize.Tag}
		path := b.Kustomize.Path
		if path == "" {
			path = "./"
		}
		ks := &kustomizev1.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
			ObjectMeta: meta(),
			Spec: kustomizev1.KustomizationSpec{
				SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: name},
				Path:               path,
				Prune:              true,
				Wait:               true,
				Interval:           interval,
				RetryInterval:      &metav1.Duration{Duration: min(interval.Duration, tenantMaxRetryInterval)},
				Timeout:            timeout,
				ServiceAccountName: b.ServiceAccountName,
				TargetNamespace:    in.Owner.GetNamespace(),
				DeletionPolicy:     kustomizev1.DeletionPolicyMirrorPrune,
			},
		}
		if len(b.Kustomize.Substitute) > 0 {
			ks.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: b.Kustomize.Substitute}
		}
		out.Kustomization = ks
	default:
		return nil, fmt.Errorf("%s %s/%s: spec.backend: set exactly one of chart or kustomize", in.Kind, in.Owner.GetNamespace(), in.Owner.GetName())
	}
	src.Spec.URL = in.URL
	if src.Spec.URL == "" {
		src.Spec.URL = access.URL
	}
	src.Spec.SecretRef = access.SecretRef.DeepCopy()
	src.Spec.CertSecretRef = access.CertSecretRef.DeepCopy()
	src.Spec.Insecure = access.Insecure || in.Insecure
	src.Spec.Verify = verification(access.Verify)
	// Flux fetches by digest when one is set; the tag stays as what it
	// names, for people reading the object.
	src.Spec.Reference.Digest = access.Digest
	return out, nil
}

// ContractValues is a chart's values as JSON, for a substituted backend.
func ContractValues(v any) (*apiextensionsv1.JSON, error) {
	if v == nil {
		return nil, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: data}, nil
}
