package convert

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
)

// InventoryAPIVersion is the API of clusterctl's inventory: one Provider
// object per installed provider (providers.clusterctl.cluster.x-k8s.io),
// written by clusterctl init and upgrade, and by cluster-api-operator and
// Capwright, which install through the same contract.
const InventoryAPIVersion = "clusterctl.cluster.x-k8s.io/v1alpha3"

// InventoryProvider is one provider of clusterctl's inventory with what
// the cluster and its release show of it.
type InventoryProvider struct {
	// Namespace and Name of the inventory object; Name is clusterctl's
	// provider label value (cluster-api, bootstrap-kubeadm, …).
	Namespace, Name string
	Labels          map[string]string
	// ProviderName, Type (CoreProvider, BootstrapProvider, …) and Version
	// are the inventory's fields.
	ProviderName, Type, Version string
	// Deployments are the provider's running Deployments: those labelled
	// cluster.x-k8s.io/provider: Name in Namespace.
	Deployments []appsv1.Deployment
	// Components is the components file of the installed version as its
	// release publishes it, to find the clusterctl variables it uses and
	// what they were set to; nil when it could not be read, and then
	// ComponentsError says why.
	Components      []byte
	ComponentsError string
}

// InventoryDocument wraps an inventory provider as an input document;
// source names where it was read (e.g. "cluster kind-mgmt").
func InventoryDocument(source string, p InventoryProvider) Document {
	return Document{
		Source: source + ", clusterctl inventory", APIVersion: InventoryAPIVersion, Kind: "Provider",
		Namespace: p.Namespace, Name: p.Name, Inventory: &p,
	}
}

// variablesSecretName is the Secret a converted CR names when clusterctl
// was given variables: the user creates it with the values.
func variablesSecretName(inventoryName string) string { return inventoryName + "-variables" }

// convertInventory converts one provider clusterctl installed: the
// Capwright CR asks for the installed version of the same provider in the
// same namespace, from the catalog (clusterctl's list) or, for a provider
// clusterctl found in its configuration, from a URL the user gives.
func convertInventory(in *InventoryProvider, fs *findings) v1alpha1.Provider {
	if in.Labels[v1alpha1.ProviderKindLabel] != "" {
		fs.note("metadata.labels", "recorded by Capwright's %s %s/%s, which already manages this provider: not converted", in.Labels[v1alpha1.ProviderKindLabel], in.Namespace, in.Labels[v1alpha1.ProviderNameLabel])
		return nil
	}
	providerType := operatorKinds[in.Type]
	if providerType == "" {
		fs.attention("type", "%q is not a clusterctl provider type (CoreProvider, BootstrapProvider, ControlPlaneProvider, InfrastructureProvider, IPAMProvider, RuntimeExtensionProvider, AddonProvider): not converted; check the inventory object", in.Type)
		return nil
	}
	out := newProvider(providerType)
	out.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(in.Type))
	out.SetName(in.ProviderName)
	out.SetNamespace(in.Namespace)
	spec := out.GetSpec()
	spec.Version = in.Version

	if in.ProviderName == "" {
		fs.attention("providerName", "empty: the inventory object does not say which provider it records; set metadata.name to the provider's clusterctl name")
	}
	if providerType == v1alpha1.CoreProviderType && in.ProviderName != "cluster-api" {
		fs.attention("providerName", "Capwright's core provider must be named cluster-api; the API server refuses %q: rename it", in.ProviderName)
	}
	if want := clusterctl.ProviderLabelValue(providerType, in.ProviderName); in.ProviderName != "" && in.Name != want {
		fs.note("metadata.name", "clusterctl names this provider's inventory object %s; Capwright records it under that name, beside this one (%s): delete the old one once the provider is Ready under Capwright", want, in.Name)
	}
	if !semverWithV.MatchString(in.Version) {
		fs.attention("version", "%q is not a semantic version with a leading v (e.g. v1.14.2), which Capwright requires: set spec.version to the release tag running (the manager image's tag)", in.Version)
	}
	if _, ok := catalog.ReleaseURL(providerType, in.ProviderName); !ok {
		fs.attention("providerName", "Capwright's catalog (clusterctl %s's provider list) has no %s provider named %q (it has: %s): clusterctl found it in its configuration (providers: in clusterctl.yaml). Set spec.source.release.url to the URL given there, e.g. https://github.com/{owner}/{repo}/releases/latest/%s",
			catalog.ClusterctlVersion, providerType, in.ProviderName, listOrNone(catalog.KnownReleasesOfType(providerType)), componentsFile(providerType))
	}
	if len(in.Deployments) == 0 {
		fs.attention("deployments", "no Deployment labelled %s=%s in namespace %s: the provider does not run where clusterctl recorded it. Check `kubectl get deployments -A -l %s=%s` before applying: Capwright installs into %s", clusterctl.LabelProvider, in.Name, in.Namespace, clusterctl.LabelProvider, in.Name, in.Namespace)
	}
	for _, d := range in.Deployments {
		if d.Namespace != in.Namespace {
			fs.attention("deployments", "Deployment %s/%s of this provider runs outside the inventory's namespace %s; Capwright would install a second copy into %s: move the CR's metadata.namespace to where the provider runs, or clean up the stray copy", d.Namespace, d.Name, in.Namespace, in.Namespace)
		}
	}

	switch {
	case in.Components != nil:
		needed := checkVariables(in, fs)
		checkImages(in, fs)
		if len(needed) > 0 {
			name := variablesSecretName(in.Name)
			spec.ConfigSecret = &v1alpha1.SecretReference{Name: name}
			fs.attention("spec.configSecret", "names Secret %s/%s, which does not exist yet: create it with the keys %s, set to what clusterctl was given (values are never read nor printed here; see each variable's finding for where the running value shows). Until it exists the provider waits (ConfigSecretMissing) and changes nothing",
				in.Namespace, name, strings.Join(needed, ", "))
		}
	case in.ComponentsError != "":
		fs.attention("variables", "the release of %s could not be read, so the clusterctl variables it was installed with are unknown: %s. Read the components file of %s for ${VAR}s and give the values clusterctl had (environment, clusterctl.yaml) in a configSecret", in.Version, in.ComponentsError, in.Version)
	}
	fs.note("inventory", "clusterctl's inventory object %s/%s stays: Capwright keeps its version current, so `clusterctl describe cluster` and `clusterctl upgrade plan` keep working. Upgrade and delete the provider through its Capwright CR from now on, not with clusterctl", in.Namespace, in.Name)
	return out
}

// checkImages compares the running containers' images with the release's:
// a difference is clusterctl's image override (images: in clusterctl.yaml)
// or a hand edit, which Flux would undo.
func checkImages(in *InventoryProvider, fs *findings) {
	tpl, err := templateDeployments(in.Components)
	if err != nil {
		return
	}
	for _, d := range in.Deployments {
		t, ok := tpl[d.Name]
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			want := t.containers[c.Name].image
			if want == "" || strings.Contains(want, "${") || want == c.Image {
				continue
			}
			fs.attention("images", "Deployment %s/%s, container %s, runs %s; the release's components say %s (clusterctl's images: setting, or a change by hand). Flux applies the release's unless spec.images says otherwise: add {name: %s, newName: …, newTag: …} for the image that runs",
				d.Namespace, d.Name, c.Name, c.Image, want, imageName(want))
		}
	}
}

// imageName is an image reference without its tag or digest.
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

// markOperatorManaged leaves out inventory providers that an operator CR
// in the same input manages: cluster-api-operator installs through
// clusterctl's library, so its providers are in the inventory too, and
// its CR carries their settings.
func markOperatorManaged(list []Converted) {
	operator := map[string]string{}
	for _, c := range list {
		if c.Document.Provider != nil && c.Object != nil {
			operator[c.Object.ProviderType()+"/"+c.Object.GetName()] = c.Document.Label()
		}
	}
	for i := range list {
		c := &list[i]
		if c.Document.Inventory == nil || c.Object == nil {
			continue
		}
		label, ok := operator[c.Object.ProviderType()+"/"+c.Object.GetName()]
		if !ok {
			continue
		}
		// The inventory's own findings give way to the operator CR's.
		c.Object = nil
		c.Findings = []Finding{{
			Object: c.Document.Label(), Field: "providerName", Severity: Note,
			Message: fmt.Sprintf("installed by cluster-api-operator's %s, which is converted instead", label),
		}}
	}
}
