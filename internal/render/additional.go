package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
)

// Additional manifests: cluster-api-operator's spec.additionalManifests, a
// ConfigMap holding more objects to install with the provider. Flux cannot
// read a ConfigMap, so the controller packs the objects as the artifact of
// a Flux ExternalArtifact and a second Kustomization applies them once the
// provider's own Kustomization is Ready.
const (
	// AdditionalManifestsKey is the ConfigMap data key holding the
	// manifests (cluster-api-operator's).
	AdditionalManifestsKey = "manifests"
	// AdditionalManifestsFile is the one file of the packed artifact.
	AdditionalManifestsFile = "manifests.yaml"
	// additionalSuffix names the ExternalArtifact and Kustomization of the
	// additional manifests after the provider's Flux objects.
	additionalSuffix = "-additional"
)

// AdditionalObjectName names the ExternalArtifact and Kustomization of a
// provider's additional manifests: "<type>-<name>-additional".
func AdditionalObjectName(providerType, name string) string {
	return ObjectName(providerType, name) + additionalSuffix
}

// Scope tells whether the API server serves a kind as namespaced; known is
// false when it does not serve the kind (yet).
type Scope func(schema.GroupVersionKind) (namespaced, known bool)

// AdditionalManifests checks the YAML of a provider's additional manifests
// (from source, e.g. "ConfigMap capi-system/extra", named in errors) and
// packs it as the artifact Flux applies: one manifests.yaml with every
// object re-encoded, and a namespaced object without a namespace put into
// namespace, the provider's (Flux applies no default namespace of its own).
// An object whose kind the API server does not serve yet (a CRD the
// provider installs) keeps what it says; the controller packs again once
// the kind is served. The same input always gives the same bytes.
func AdditionalManifests(source, manifests, namespace string, scope Scope) ([]byte, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var out bytes.Buffer
	for doc := 1; ; doc++ {
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: data key %q, document %d is not YAML: %v", source, AdditionalManifestsKey, doc, err)
		}
		if len(raw) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: raw}
		if err := checkAdditionalObject(obj, scope); err != nil {
			return nil, fmt.Errorf("%s: data key %q, document %d: %w", source, AdditionalManifestsKey, doc, err)
		}
		if namespaced, known := scope(obj.GroupVersionKind()); known && namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(namespace)
		}
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("%s: data key %q holds no objects; add the manifests there (multi-document YAML) or drop spec.additionalManifests", source, AdditionalManifestsKey)
	}
	return artifact.PackTarGz(map[string][]byte{AdditionalManifestsFile: out.Bytes()})
}

// checkAdditionalObject refuses what Flux could not apply, or should not
// get from a ConfigMap.
func checkAdditionalObject(obj *unstructured.Unstructured, scope Scope) error {
	gvk := obj.GroupVersionKind()
	switch {
	case obj.GetAPIVersion() == "" || gvk.Kind == "":
		return errors.New("not a Kubernetes object: apiVersion and kind are required")
	case obj.GetName() == "":
		return fmt.Errorf("%s has no metadata.name", gvk.Kind)
	case gvk.Group == "" && gvk.Kind == "Secret":
		return fmt.Errorf("kind Secret (%s) is refused: a ConfigMap is no place for secret data (any reader of the ConfigMap and of Capwright's artifact could read it); commit the Secret encrypted (e.g. with SOPS) to Git for Flux to decrypt, or use spec.configSecret for clusterctl variables", obj.GetName())
	case strings.HasSuffix(gvk.Kind, "List"):
		return fmt.Errorf("%s %s: write the items of a list as separate YAML documents", gvk.Kind, obj.GetName())
	}
	if ns := obj.GetNamespace(); ns != "" {
		if namespaced, known := scope(gvk); known && !namespaced {
			return fmt.Errorf("%s %s is cluster-scoped but says namespace %s; remove metadata.namespace", gvk.Kind, obj.GetName(), ns)
		}
	}
	return nil
}

// CheckAdditionalManifests refuses a spec.additionalManifests Flux cannot
// serve: a ConfigMap outside the provider's namespace, or a chart source.
func CheckAdditionalManifests(p v1alpha1.Provider) error {
	spec := p.GetSpec()
	ref := spec.AdditionalManifests
	switch {
	case ref == nil:
		return nil
	case IsChart(p):
		return errors.New("spec.additionalManifests: not supported with spec.source.chart; add the objects to the chart (or a chart that depends on it), or publish the provider as a provider-artifact (spec.source.oci)")
	case ref.Namespace != "" && ref.Namespace != p.GetNamespace():
		return fmt.Errorf("spec.additionalManifests: ConfigMap %s/%s is outside the provider's namespace %s; move it into %s and drop spec.additionalManifests.namespace",
			ref.Namespace, ref.Name, p.GetNamespace(), p.GetNamespace())
	}
	return nil
}

// externalArtifact is an ExternalArtifact named by om whose source is the
// provider. Its status (the artifact itself) is the controller's to write
// after it stored the artifact.
func externalArtifact(in Input, om objectMeta) *sourcev1.ExternalArtifact {
	p := in.Provider
	return &sourcev1.ExternalArtifact{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.ExternalArtifactKind},
		ObjectMeta: om.build(),
		Spec: sourcev1.ExternalArtifactSpec{SourceRef: &meta.NamespacedObjectKindReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: om.kind, Name: p.GetName(), Namespace: p.GetNamespace(),
		}},
	}
}

// ReleaseComponentsDir is the directory of a release's artifact that
// holds the components file, the only directory its Kustomization builds:
// metadata.yaml, beside it, is no Kubernetes object.
const ReleaseComponentsDir = "components"

// ReleaseArtifact packs the checked files of a release into the artifact
// its ExternalArtifact serves Flux: metadata.yaml and
// components/<componentsFile>. The same files always give the same bytes,
// so its digest identifies the release (status.artifact.digest) and any
// replica packs it again from the same files.
func ReleaseArtifact(metadata []byte, componentsFile string, components []byte) ([]byte, error) {
	return artifact.PackTarGz(map[string][]byte{
		artifact.MetadataFile:                       metadata,
		ReleaseComponentsDir + "/" + componentsFile: components,
	})
}

// renderAdditional renders the ExternalArtifact and Kustomization of
// spec.additionalManifests; nil when the provider has none. The
// ExternalArtifact's status (the artifact itself) is the controller's to
// write after it stored the artifact.
func renderAdditional(in Input, om objectMeta, main *kustomizev1.Kustomization) (*sourcev1.ExternalArtifact, *kustomizev1.Kustomization, error) {
	p := in.Provider
	if p.GetSpec().AdditionalManifests == nil {
		return nil, nil, nil
	}
	name := om.name + additionalSuffix
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return nil, nil, fmt.Errorf("metadata.name: the Flux objects of the additional manifests of %s %s/%s would be named %q, which Flux cannot use as a label value (%s); use a shorter provider name",
			om.kind, p.GetNamespace(), p.GetName(), name, strings.Join(errs, "; "))
	}
	aom := om
	aom.name = name
	ea := externalArtifact(in, aom)
	spec := main.Spec.DeepCopy()
	spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: name}
	// The objects say their namespaces (the artifact defaults them), the
	// components' patches are about the components, and the objects may
	// need the provider's CRDs and namespace: they wait for its
	// Kustomization.
	spec.TargetNamespace = ""
	spec.Patches = nil
	// Their artifact holds manifests.yaml at its root, whatever the
	// components' artifact looks like (a release's is under components/).
	spec.Path = "./"
	spec.DependsOn = []kustomizev1.DependencyReference{{Name: main.Name, Namespace: main.Namespace}}
	ks := &kustomizev1.Kustomization{
		TypeMeta:   main.TypeMeta,
		ObjectMeta: aom.build(),
		Spec:       *spec,
	}
	return ea, ks, nil
}
