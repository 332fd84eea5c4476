// Package render turns a provider and the facts preflight established into
// the Flux objects that install it. It is pure — no client — so the
// controller, an offline `capwright build` and unit tests share it.
package render

import (
	"errors"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// clusterctl's labels on every object of a provider; clusterctl and CAPI
// tooling select provider objects by them.
const (
	labelProvider   = "cluster.x-k8s.io/provider"
	labelClusterctl = "clusterctl.cluster.x-k8s.io"
	// pruneAnnotation keeps an object when Flux prunes.
	pruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
)

// Defaults of the generated Flux objects.
const (
	DefaultInterval = 10 * time.Minute
	DefaultTimeout  = 5 * time.Minute
)

// Input is a provider and what preflight checked.
type Input struct {
	Provider v1alpha1.Provider
	// Kind of the provider (CoreProvider, …), for owner references.
	Kind string
	// ArtifactURL is oci://… after mirror rules; Tag the version; Digest
	// the manifest digest preflight checked.
	ArtifactURL, Tag, Digest string
	// Insecure reaches the registry over plain HTTP although the provider
	// has no source of its own (a mirror the controller was told is plain
	// HTTP).
	Insecure       bool
	ComponentsFile string
	// ProviderLabel is clusterctl's provider label value (cluster-api,
	// bootstrap-kubeadm, …).
	ProviderLabel    string
	NamespacePatches []kustomize.Patch
	// CoreDependency is the core provider's Kustomization (nil for core).
	CoreDependency *meta.NamespacedObjectReference
	// MirrorImages rewrite images for registry mirrors; spec.images win.
	MirrorImages []kustomize.Image
	// ManagerArgs are the args of the components' "manager" container.
	ManagerArgs []string
}

// RenderedObjects are the Flux objects of one provider.
type RenderedObjects struct {
	OCIRepository *sourcev1.OCIRepository
	// Kustomization installs a components file; HelmRelease a chart.
	Kustomization *kustomizev1.Kustomization
	HelmRelease   *helmv2.HelmRelease
}

// ObjectName names the Flux objects of a provider: <type>-<name>.
func ObjectName(providerType, name string) string { return providerType + "-" + name }

// Provider renders the OCIRepository and Kustomization of a provider whose
// artifact follows the provider-artifact layout.
func Provider(in Input) (*RenderedObjects, error) {
	spec := in.Provider.GetSpec()
	if in.Digest == "" || in.ArtifactURL == "" {
		return nil, errors.New("render: the artifact URL and digest are required (preflight did not run)")
	}
	if spec.Source != nil && spec.Source.Chart != nil {
		return chart(in)
	}
	if in.ComponentsFile == "" {
		return nil, errors.New("render: the components file is required (preflight did not run)")
	}
	repo := componentsRepository(in)
	ks, err := kustomization(in)
	if err != nil {
		return nil, err
	}
	return &RenderedObjects{OCIRepository: repo, Kustomization: ks}, nil
}

func objectMeta(in Input) metav1.ObjectMeta {
	p := in.Provider
	controller, block := true, true
	return metav1.ObjectMeta{
		Name:      ObjectName(p.ProviderType(), p.GetName()),
		Namespace: p.GetNamespace(),
		Labels: map[string]string{
			v1alpha1.ProviderKindLabel: in.Kind,
			v1alpha1.ProviderNameLabel: p.GetName(),
		},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: in.Kind, Name: p.GetName(), UID: p.GetUID(),
			Controller: &controller, BlockOwnerDeletion: &block,
		}},
	}
}

func interval(spec *v1alpha1.ProviderSpec) metav1.Duration {
	if spec.Interval != nil && spec.Interval.Duration > 0 {
		return *spec.Interval
	}
	return metav1.Duration{Duration: DefaultInterval}
}

func timeout(spec *v1alpha1.ProviderSpec) *metav1.Duration {
	if spec.Timeout != nil && spec.Timeout.Duration > 0 {
		return spec.Timeout
	}
	return &metav1.Duration{Duration: DefaultTimeout}
}

// ociRepository pins the checked digest, so a moved tag can never slip past
// preflight, with the provider's registry access settings.
func ociRepository(in Input, access *v1alpha1.OCIRegistryAccess) *sourcev1.OCIRepository {
	spec := in.Provider.GetSpec()
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: objectMeta(in),
		Spec: sourcev1.OCIRepositorySpec{
			URL:       in.ArtifactURL,
			Reference: &sourcev1.OCIRepositoryRef{Digest: in.Digest},
			Interval:  interval(spec),
			Timeout:   &metav1.Duration{Duration: time.Minute},
			Insecure:  in.Insecure,
			Suspend:   spec.Suspend,
		},
	}
	if access != nil {
		repo.Spec.SecretRef = access.SecretRef
		repo.Spec.CertSecretRef = access.CertSecretRef
		repo.Spec.Insecure = access.Insecure || in.Insecure
		repo.Spec.Verify = verification(access.Verify)
	}
	return repo
}

// componentsRepository lets the Kustomization see only the components
// file: the artifact's metadata.yaml has no name and would break
// kustomize's generated kustomization.
func componentsRepository(in Input) *sourcev1.OCIRepository {
	var access *v1alpha1.OCIRegistryAccess
	if src := in.Provider.GetSpec().Source; src != nil && src.OCI != nil {
		access = &src.OCI.OCIRegistryAccess
	}
	repo := ociRepository(in, access)
	ignore := "/*\n!/" + in.ComponentsFile + "\n"
	repo.Spec.Ignore = &ignore
	return repo
}

// verification maps spec verification onto the OCIRepository's.
func verification(v *v1alpha1.OCIVerification) *sourcev1.OCIRepositoryVerification {
	if v == nil {
		return nil
	}
	provider := v.Provider
	if provider == "" {
		provider = "cosign"
	}
	verify := &sourcev1.OCIRepositoryVerification{Provider: provider, SecretRef: v.SecretRef}
	for _, id := range v.MatchOIDCIdentity {
		verify.MatchOIDCIdentity = append(verify.MatchOIDCIdentity, sourcev1.OIDCIdentityMatch{Issuer: id.Issuer, Subject: id.Subject})
	}
	return verify
}

func kustomization(in Input) (*kustomizev1.Kustomization, error) {
	p := in.Provider
	spec := p.GetSpec()
	name := ObjectName(p.ProviderType(), p.GetName())
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: objectMeta(in),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: name},
			Path:            "./",
			Prune:           true,
			Wait:            true,
			Interval:        interval(spec),
			Timeout:         timeout(spec),
			Suspend:         spec.Suspend,
			TargetNamespace: p.GetNamespace(),
			CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{
				labelProvider:   in.ProviderLabel,
				labelClusterctl: "",
			}},
		},
	}
	postBuild, err := postBuild(in)
	if err != nil {
		return nil, err
	}
	ks.Spec.PostBuild = postBuild
	ks.Spec.Images = images(in)
	patches, err := patches(in)
	if err != nil {
		return nil, err
	}
	ks.Spec.Patches = patches
	if in.CoreDependency != nil {
		ks.Spec.DependsOn = append(ks.Spec.DependsOn, kustomizev1.DependencyReference{Name: in.CoreDependency.Name, Namespace: in.CoreDependency.Namespace})
	}
	for _, d := range spec.DependsOn {
		if d.Kind != "" && d.Kind != kustomizev1.KustomizationKind {
			continue // Capwright waits for other kinds itself before writing.
		}
		ns := d.Namespace
		if ns == "" {
			ns = p.GetNamespace()
		}
		ks.Spec.DependsOn = append(ks.Spec.DependsOn, kustomizev1.DependencyReference{Name: d.Name, Namespace: ns})
	}
	return ks, nil
}

// postBuild substitutes clusterctl variables. The strategy is Always:
// without it Flux skips substitution when no variable is given, and
// ${VAR:=default} would reach the cluster as literal text.
func postBuild(in Input) (*kustomizev1.PostBuild, error) {
	spec := in.Provider.GetSpec()
	pb := &kustomizev1.PostBuild{SubstituteStrategy: kustomizev1.SubstituteStrategyAlways}
	if len(spec.Variables) > 0 {
		pb.Substitute = map[string]string{}
		for k, v := range spec.Variables {
			pb.Substitute[k] = v
		}
	}
	if ref := spec.ConfigSecret; ref != nil {
		if ref.Namespace != "" && ref.Namespace != in.Provider.GetNamespace() {
			return nil, fmt.Errorf("spec.configSecret: Secret %s/%s is in another namespace; Flux reads substitution Secrets only from the provider's namespace %s: move or copy the Secret there",
				ref.Namespace, ref.Name, in.Provider.GetNamespace())
		}
		pb.SubstituteFrom = append(pb.SubstituteFrom, kustomizev1.SubstituteReference{Kind: "Secret", Name: ref.Name})
	}
	return pb, nil
}

// images are the mirror rewrites, then spec.images; a spec entry wins over
// a mirror entry of the same name.
func images(in Input) []kustomize.Image {
	spec := in.Provider.GetSpec()
	user := map[string]bool{}
	for _, img := range spec.Images {
		user[img.Name] = true
	}
	var out []kustomize.Image
	for _, img := range in.MirrorImages {
		if !user[img.Name] {
			out = append(out, img)
		}
	}
	return append(out, spec.Images...)
}
