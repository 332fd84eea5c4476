package convert

import (
	"errors"
	"slices"
	"strings"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/providerrelease"
)

// convertSource maps spec.fetchConfig to spec.source, or to the catalog
// when the operator fetched from clusterctl's list.
func convertSource(in *OperatorProvider, providerType string, spec *v1alpha1.ProviderSpec, fs *findings) {
	fc := in.Spec.FetchConfig
	if fc != nil {
		var set []string
		for name, on := range map[string]bool{"url": fc.URL != "", "oci": fc.OCI != "", "selector": fc.Selector != nil} {
			if on {
				set = append(set, name)
			}
		}
		if len(set) > 1 {
			slices.Sort(set)
			fs.attention("spec.fetchConfig", "sets %s: the operator's API takes exactly one (its API server refuses the CR); converted from the first of url, oci, selector: check which source the provider really comes from", strings.Join(set, " and "))
		}
	}
	switch {
	case fc == nil || (fc.URL == "" && fc.OCI == "" && fc.Selector == nil):
		convertCatalogSource(in, providerType, fs)
	case fc.URL != "":
		convertReleaseURL(in, providerType, spec, fs)
	case fc.OCI != "":
		convertOCI(in, providerType, spec, fs)
	default:
		convertSelector(in, providerType, fs)
	}
}

// convertCatalogSource: without fetchConfig the operator uses clusterctl's
// provider list, which Capwright's catalog copies.
func convertCatalogSource(in *OperatorProvider, providerType string, fs *findings) {
	if _, ok := catalog.ReleaseURL(providerType, in.Name); ok {
		return
	}
	known := catalog.KnownReleasesOfType(providerType)
	fs.attention("spec.fetchConfig", "not set, and Capwright's catalog (clusterctl %s's provider list) has no %s provider named %q (it has: %s): the operator found it in its own clusterctl's list or configuration. Set spec.source.release.url to the provider's release, e.g. https://github.com/{owner}/{repo}/releases/latest/%s",
		catalog.ClusterctlVersion, providerType, in.Name, listOrNone(known), componentsFile(providerType))
}

// convertReleaseURL maps fetchConfig.url: both read clusterctl's release
// URL forms, and both fetch spec.version whatever version the URL names.
func convertReleaseURL(in *OperatorProvider, providerType string, spec *v1alpha1.ProviderSpec, fs *findings) {
	const field = "spec.fetchConfig.url"
	raw := strings.TrimSpace(in.Spec.FetchConfig.URL)
	src, err := providerrelease.ParseURL(raw)
	if err != nil {
		spec.Source = &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: raw}}
		var perr *providerrelease.Error
		msg := err.Error()
		if errors.As(err, &perr) {
			msg = perr.Error()
		}
		fs.attention(field, "copied to spec.source.release.url, which does not take it: %s. (The operator itself reads GitHub and GitLab release URLs only, in clusterctl's forms.)", msg)
		return
	}
	url := raw
	if src.Version != "" && src.Version != providerrelease.Latest && spec.Version != "" && src.Version != spec.Version {
		// The version in a clusterctl URL is only its default; both fetch
		// spec.version. Capwright refuses a URL naming another version.
		url = replaceVersionSegment(raw, src.Version, providerrelease.Latest)
		fs.note(field, "names version %s; the operator fetched spec.version (%s) from it anyway. Capwright requires the two to agree, so the URL says %q instead", src.Version, spec.Version, providerrelease.Latest)
	}
	spec.Source = &v1alpha1.ProviderSource{Release: &v1alpha1.ReleaseSource{URL: url}}
	if src.Kind == providerrelease.GitHub && src.ComponentsPath == "" {
		fs.note(field, "a GitHub repository's releases, without the file: Capwright fetches %s of spec.version. (The operator's clusterctl wants the file in the URL, https://github.com/%s/%s/releases/latest/%s; if it installed this provider, check the URL it really used)",
			src.ComponentsFile(providerType), src.Owner, src.Repository, componentsFile(providerType))
	}
	if src.Kind == providerrelease.Plain {
		fs.note(field, "not a GitHub or GitLab URL, which is all the operator reads; Capwright reads {URL}/{version}/metadata.yaml and {URL}/{version}/%s: check the server serves them", src.ComponentsFile(providerType))
	}
	fs.note(field, "the release host must be reachable from the Capwright manager; credentials the operator took from the configSecret (github-token, gitlab-access-token) go into a Secret named by spec.source.release.secretRef (key token)")
}

// replaceVersionSegment replaces the path segment version of a release URL.
func replaceVersionSegment(raw, version, with string) string {
	segments := strings.Split(raw, "/")
	for i := len(segments) - 1; i >= 0; i-- {
		if segments[i] == version {
			segments[i] = with
			// clusterctl's download link form: releases/download/TAG/file.
			if i > 0 && segments[i-1] == "download" {
				segments = append(segments[:i-1], segments[i:]...)
			}
			break
		}
	}
	return strings.Join(segments, "/")
}

// convertOCI maps fetchConfig.oci. The operator's reference may carry a
// tag (which it fetches instead of spec.version) and an http:// prefix
// (plain HTTP); its artifacts hold one file per layer, which Flux cannot
// extract, so they must be repacked.
func convertOCI(in *OperatorProvider, providerType string, spec *v1alpha1.ProviderSpec, fs *findings) {
	const field = "spec.fetchConfig.oci"
	raw := strings.TrimSpace(in.Spec.FetchConfig.OCI)
	ref, plainHTTP := strings.CutPrefix(raw, "http://")
	repo, tag := splitOCIReference(ref)
	oci := &v1alpha1.OCISource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://" + repo, Insecure: plainHTTP}}
	spec.Source = &v1alpha1.ProviderSource{OCI: oci}
	if tag != "" && tag != spec.Version {
		fs.attention(field, "names tag %s, which the operator fetched instead of spec.version (%s); Capwright fetches the tag spec.version. Set spec.version to the version the artifact holds, or publish it under that tag", tag, spec.Version)
	}
	if repo != strings.ToLower(repo) {
		fs.attention(field, "repository %s is not lower case, as OCI repositories must be: fix spec.source.oci.url", repo)
	}
	if plainHTTP {
		fs.note(field, "http:// means plain HTTP to the registry: kept as spec.source.oci.insecure")
	}
	version := spec.Version
	if version == "" {
		version = "VERSION"
	}
	name := in.Name
	fs.attention(field, "cluster-api-operator's OCI artifacts hold one file per layer, which Flux cannot extract; Capwright needs the provider artifact layout (one tar+gzip layer). Repack it: `capwright mirror --repack --to REGISTRY/PREFIX oci://%s:%s` (it lands at REGISTRY/PREFIX/%s), or publish the release anew: `capwright publish --from-release %s/%s --version %s oci://REGISTRY/PREFIX/manifests/%s-%s` (or --from-release URL for a provider clusterctl's list lacks). Then set spec.source.oci.url to the new repository; the converted CR still names the operator's",
		repo, version, pathOf(repo), providerType, name, version, providerType, name)
	fs.note(field, "registry credentials: the operator read OCI_USERNAME/OCI_PASSWORD/OCI_ACCESS_TOKEN/OCI_REFRESH_TOKEN from the configSecret; Capwright reads a kubernetes.io/dockerconfigjson Secret in the provider's namespace named by spec.source.oci.secretRef (and a CA from certSecretRef)")
}

// splitOCIReference splits host[:port]/path[:tag][@digest] into the
// repository and the tag, as the operator does (a digest is dropped with
// the tag: Capwright pins digests in spec.source.oci.digest).
func splitOCIReference(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash && slash >= 0 {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

// pathOf is a repository without its host.
func pathOf(repo string) string {
	if _, path, ok := strings.Cut(repo, "/"); ok {
		return path
	}
	return repo
}

// convertSelector: ConfigMaps as a release source have no equivalent.
func convertSelector(in *OperatorProvider, providerType string, fs *findings) {
	version := in.Spec.Version
	if version == "" {
		version = "VERSION"
	}
	fs.attention("spec.fetchConfig.selector", "Capwright reads no provider release from ConfigMaps: publish the release the ConfigMaps hold as a provider artifact and name it in spec.source.oci. In %s, the ConfigMap matching the selector (and labelled with, or named after, version %s) holds keys metadata and components (gunzip components when it is annotated provider.cluster.x-k8s.io/compressed: \"true\"): save them as metadata.yaml and %s, then `capwright publish DIR --type %s --name %s --version %s oci://REGISTRY/PREFIX/manifests/%s-%s`. Until spec.source is set, Capwright looks the provider up in its catalog",
		nsOr(in.Namespace), version, componentsFile(providerType), providerType, in.Name, version, providerType, in.Name)
}

func componentsFile(providerType string) string { return providerType + "-components.yaml" }

func nsOr(ns string) string {
	if ns == "" {
		return "the provider's namespace"
	}
	return "namespace " + ns
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
