package convert

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// Converted is one input document and what became of it.
type Converted struct {
	Document Document
	// Object is the Capwright provider CR, nil when the document is not an
	// operator provider or could not be converted.
	Object v1alpha1.Provider
	// Findings about this document (decoding's first).
	Findings []Finding
}

// Convert converts every operator provider and every provider of
// clusterctl's inventory among docs and notes the other documents. Checks
// across objects (a provider both in the inventory and in an operator CR,
// two CRs for one provider) come last.
func Convert(docs []Document) []Converted {
	out := make([]Converted, 0, len(docs))
	for _, d := range docs {
		out = append(out, convertDocument(d))
	}
	markOperatorManaged(out)
	checkDuplicates(out)
	return out
}

func convertDocument(d Document) Converted {
	c := Converted{Document: d, Findings: slices.Clone(d.Findings)}
	if d.Inventory != nil {
		fs := &findings{object: d.Label()}
		c.Object = convertInventory(d.Inventory, fs)
		c.Findings = append(c.Findings, fs.list...)
		return c
	}
	if d.Provider == nil {
		if len(d.Findings) == 0 {
			c.Findings = append(c.Findings, skippedNote(d))
		}
		return c
	}
	fs := &findings{object: d.Label()}
	c.Object = convertProvider(d.Provider, fs)
	c.Findings = append(c.Findings, fs.list...)
	return c
}

// skippedNote explains a document that is not an operator provider.
func skippedNote(d Document) Finding {
	msg := "not a cluster-api-operator provider: not converted"
	switch {
	case d.APIVersion == "v1" && d.Kind == "Secret":
		msg += "; Capwright reads the same Secret (spec.configSecret, in the provider's namespace): keep it as it is (its content was not read)"
	case d.APIVersion == "v1" && d.Kind == "ConfigMap":
		msg += "; a ConfigMap of additional manifests is read by Capwright as it is (key manifests); one holding a provider release (components and metadata, for fetchConfig.selector) is not: see that provider's findings"
	}
	return Finding{Object: d.Label(), Field: "kind", Severity: Note, Message: msg}
}

// checkDuplicates reports two CRs of one provider type and name: Capwright
// refuses the second one anywhere in the cluster (DuplicateProvider), as
// clusterctl allows one instance of a provider.
func checkDuplicates(list []Converted) {
	first := map[string]int{}
	for i := range list {
		o := list[i].Object
		if o == nil {
			continue
		}
		key := o.ProviderType() + "/" + o.GetName()
		j, seen := first[key]
		if !seen {
			first[key] = i
			continue
		}
		list[i].Findings = append(list[i].Findings, Finding{
			Object: list[i].Document.Label(), Field: "metadata.name", Severity: Attention,
			Message: fmt.Sprintf("%s is also converted from %s: Capwright installs one %s provider named %q per cluster and refuses the second (DuplicateProvider); keep one of the two", o.GetName(), list[j].Document.Label(), o.ProviderType(), o.GetName()),
		})
	}
}

// newProvider returns the empty Capwright provider of a clusterctl type.
func newProvider(providerType string) v1alpha1.Provider {
	var p v1alpha1.Provider
	switch providerType {
	case v1alpha1.CoreProviderType:
		p = &v1alpha1.CoreProvider{}
	case v1alpha1.BootstrapProviderType:
		p = &v1alpha1.BootstrapProvider{}
	case v1alpha1.ControlPlaneProviderType:
		p = &v1alpha1.ControlPlaneProvider{}
	case v1alpha1.InfrastructureProviderType:
		p = &v1alpha1.InfrastructureProvider{}
	case v1alpha1.IPAMProviderType:
		p = &v1alpha1.IPAMProvider{}
	case v1alpha1.RuntimeExtensionProviderType:
		p = &v1alpha1.RuntimeExtensionProvider{}
	case v1alpha1.AddonProviderType:
		p = &v1alpha1.AddonProvider{}
	default:
		return nil
	}
	return p
}

// convertProvider converts one operator CR. The Capwright kind is the
// operator's kind; the namespace is kept, as both install the provider
// into the CR's namespace.
func convertProvider(in *OperatorProvider, fs *findings) v1alpha1.Provider {
	providerType := operatorKinds[in.Kind]
	out := newProvider(providerType)
	out.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(in.Kind))
	convertMetadata(in, out, fs)
	spec := out.GetSpec()
	convertVersion(in, spec, fs)
	convertSource(in, providerType, spec, fs)
	convertConfigSecret(in, spec, fs)
	convertAdditionalManifests(in, spec, fs)
	convertPatches(in, spec, fs)
	convertManager(in.Spec.Manager, "spec.manager", spec, fs)
	convertDeployment(in.Spec.Deployment, "spec.deployment", spec, fs)
	resolveManagerArgConflicts(spec, fs)
	convertAdditionalDeployments(in, fs)
	return out
}

// convertMetadata keeps name, namespace and labels; what the API server
// or the operator wrote (uid, finalizers, owner references…) is dropped.
func convertMetadata(in *OperatorProvider, out v1alpha1.Provider, fs *findings) {
	out.SetName(in.Name)
	out.SetNamespace(in.Namespace)
	if len(in.Labels) > 0 {
		out.SetLabels(maps.Clone(in.Labels))
	}
	if in.Name == "" {
		fs.attention("metadata.name", "the CR has no name; Capwright names a provider by its clusterctl name (cluster-api, kubeadm, aws…): set metadata.name")
	}
	if in.Kind == "CoreProvider" && in.Name != "" && in.Name != "cluster-api" {
		fs.attention("metadata.name", "Capwright's core provider must be named cluster-api (its clusterctl name); the API server refuses %q: rename it", in.Name)
	}
	if in.Namespace == "" {
		fs.attention("metadata.namespace", "the CR names no namespace; both the operator and Capwright install the provider into the CR's namespace, so set metadata.namespace to the namespace the provider runs in (kubectl apply would otherwise use the current context's)")
	}
	var dropped []string
	for k := range in.Annotations {
		if k != "kubectl.kubernetes.io/last-applied-configuration" {
			dropped = append(dropped, k)
		}
	}
	if len(dropped) > 0 {
		slices.Sort(dropped)
		fs.note("metadata.annotations", "not copied (%s): they were the operator CR's; add back any a tool of yours reads", strings.Join(dropped, ", "))
	}
}

// convertVersion keeps spec.version. The operator fills a missing version
// with the newest release and may be mid-upgrade; Capwright needs the
// exact version, and adopting means the one running.
func convertVersion(in *OperatorProvider, spec *v1alpha1.ProviderSpec, fs *findings) {
	installed := ""
	if in.Status.InstalledVersion != nil {
		installed = *in.Status.InstalledVersion
	}
	spec.Version = in.Spec.Version
	switch {
	case spec.Version == "" && installed != "":
		spec.Version = installed
		fs.note("spec.version", "not set; the operator installed %s (status.installedVersion), which the Capwright CR asks for", installed)
	case spec.Version == "":
		fs.attention("spec.version", "not set: the operator installs the newest release it finds, Capwright needs the exact version; set spec.version to the version running (the operator CR's status.installedVersion, or the provider's controller image tag)")
		return
	case installed != "" && installed != spec.Version:
		fs.attention("spec.version", "the operator has not finished installing %s: %s is installed (status.installedVersion). Convert once the operator is done, or set spec.version to %s to adopt what runs", spec.Version, installed, installed)
	}
	if !semverWithV.MatchString(spec.Version) {
		fs.attention("spec.version", "%q is not a semantic version with a leading v (e.g. v1.14.2), which Capwright requires: write the release tag", spec.Version)
	}
}

// convertConfigSecret maps spec.configSecret: both substitute its keys as
// clusterctl variables. The Secret is never read.
func convertConfigSecret(in *OperatorProvider, spec *v1alpha1.ProviderSpec, fs *findings) {
	ref := in.Spec.ConfigSecret
	if ref == nil {
		return
	}
	spec.ConfigSecret = &v1alpha1.SecretReference{Name: ref.Name}
	if ref.Namespace != "" && ref.Namespace != in.Namespace {
		fs.attention("spec.configSecret.namespace", "the Secret %s/%s is in another namespace than the provider (%s); Flux reads substitution Secrets from the provider's namespace only (Capwright refuses others: ConfigSecretNotAllowed). Copy the Secret into %s; the converted CR names it there", ref.Namespace, ref.Name, in.Namespace, in.Namespace)
	}
	fs.note("spec.configSecret", "kept: its keys are clusterctl variables for both. Keys the operator reads for itself do nothing under Capwright: images (clusterctl image overrides: write them as spec.images), OCI_USERNAME, OCI_PASSWORD, OCI_ACCESS_TOKEN, OCI_REFRESH_TOKEN (a kubernetes.io/dockerconfigjson Secret in spec.source.oci.secretRef), github-token, gitlab-access-token (key token of a Secret in spec.source.release.secretRef). The Secret was not read: check its keys")
}

// convertAdditionalManifests maps spec.additionalManifests to the same
// ConfigMap, which Capwright reads with the same key (manifests).
func convertAdditionalManifests(in *OperatorProvider, spec *v1alpha1.ProviderSpec, fs *findings) {
	ref := in.Spec.AdditionalManifestsRef
	if ref == nil {
		return
	}
	spec.AdditionalManifests = &v1alpha1.ConfigMapReference{Name: ref.Name}
	if ref.Namespace != "" && ref.Namespace != in.Namespace {
		fs.attention("spec.additionalManifests.namespace", "the ConfigMap %s/%s is in another namespace than the provider (%s); Capwright reads it from the provider's namespace only. Copy it into %s; the converted CR names it there", ref.Namespace, ref.Name, in.Namespace, in.Namespace)
	}
	fs.note("spec.additionalManifests", "kept (same ConfigMap, key manifests). Unlike the operator, which applies them once per release, Flux keeps them in place: it corrects drift and prunes objects removed from the ConfigMap; it refuses Secrets in it; and it needs kustomize-controller's ExternalArtifact feature gate (docs/providers.md, Additional manifests)")
}

// semverWithV is Capwright's spec.version rule.
var semverWithV = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
