package artifact

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"oras.land/oras-go/v2/registry"

	"github.com/capwright/capwright/internal/clusterctl"
)

// templatePattern matches the optional cluster templates a provider
// artifact may hold next to its components.
const templatePattern = "cluster-template*.yaml"

// providerName is what clusterctl provider names look like (kubeadm,
// cluster-api, in-cluster): it becomes part of a repository name and of the
// provider label.
var providerName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ReleaseError is publish input that does not make a provider artifact:
// Problem says what is wrong, Hint how to fix it. The CLI exits 2 on it.
type ReleaseError struct {
	Problem string
	Hint    string
}

func (e *ReleaseError) Error() string {
	if e.Hint == "" {
		return e.Problem
	}
	return e.Problem + "; " + e.Hint
}

func releaseError(hint, format string, args ...any) error {
	return &ReleaseError{Problem: fmt.Sprintf(format, args...), Hint: hint}
}

// Release is a provider release to publish: the provider, its version and
// the release files, as `capwright publish` gets them.
type Release struct {
	// Type is the clusterctl provider type (core, bootstrap, …).
	Type string
	// Name is the provider name (cluster-api, kubeadm, aws…).
	Name string
	// Version is the release version and tag, e.g. v1.14.2.
	Version string
	// Source is where the release comes from (a repository URL); may be "".
	Source string
	// Annotations are extra manifest annotations; those of the contract
	// must agree with the fields above.
	Annotations map[string]string
	// Files by name: metadata.yaml, the components file and optional
	// cluster templates.
	Files map[string][]byte
}

// Check validates the release before anything is written: provider type
// and name, version, file set, metadata.yaml covering the version, a
// components file Flux can substitute, and annotations agreeing with the
// fields. It returns the Cluster API contract the version implements.
// Errors are *ReleaseError.
func (r *Release) Check() (contract string, err error) {
	if err := r.checkProvider(); err != nil {
		return "", err
	}
	if err := r.checkAnnotations(); err != nil {
		return "", err
	}
	if err := r.checkFileSet(); err != nil {
		return "", err
	}
	metadata, err := clusterctl.ParseMetadata(r.Files[MetadataFile])
	if err != nil {
		return "", releaseError("give the provider's clusterctl metadata.yaml (apiVersion clusterctl.cluster.x-k8s.io/v1alpha3, kind Metadata)", "%v", err)
	}
	contract, err = metadata.ContractFor(r.Version)
	if err != nil {
		v, _ := semver.StrictNewVersion(strings.TrimPrefix(r.Version, "v"))
		return "", releaseError(fmt.Sprintf("add a release series for it to metadata.yaml (e.g. `- {major: %d, minor: %d, contract: v1beta2}` under releaseSeries), or check --version",
			v.Major(), v.Minor()), "%v", err)
	}
	componentsFile := clusterctl.ComponentsFile(r.Type)
	components := r.Files[componentsFile]
	if len(bytes.TrimSpace(components)) == 0 {
		return "", releaseError("give the provider's rendered components (the release manifest clusterctl installs)", "%s is empty", componentsFile)
	}
	// Decoding the variables proves the file is Kubernetes YAML and that
	// Flux's post-build substitution can evaluate it.
	if _, err := clusterctl.ParseVariables(components); err != nil {
		return "", releaseError("fix the components file: Capwright installs it through Flux, which must parse it", "%s: %v", componentsFile, err)
	}
	return contract, nil
}

// checkProvider checks type, name and version.
func (r *Release) checkProvider() error {
	if !clusterctl.IsProviderType(r.Type) {
		return releaseError("use one of core, bootstrap, control-plane, infrastructure, ipam, runtime-extension, addon",
			"provider type %q (--type) is not a clusterctl provider type", r.Type)
	}
	if !providerName.MatchString(r.Name) {
		return releaseError("use the clusterctl provider name, lower case letters, digits and dashes (e.g. cluster-api, kubeadm, aws)",
			"provider name %q (--name) is not a valid provider name", r.Name)
	}
	v, err := semver.StrictNewVersion(strings.TrimPrefix(r.Version, "v"))
	if err != nil || !strings.HasPrefix(r.Version, "v") {
		return releaseError("give the release version as vMAJOR.MINOR.PATCH, e.g. v1.14.2 (pre-releases such as v1.15.0-rc.0 are fine)",
			"version %q (--version) is not a release version", r.Version)
	}
	if v.Metadata() != "" {
		return releaseError("drop the +… part: the version is also the artifact's tag",
			"version %q (--version) has build metadata (+%s), which an OCI tag cannot hold", r.Version, v.Metadata())
	}
	if err := (registry.Reference{Reference: r.Version}).ValidateReferenceAsTag(); err != nil {
		return releaseError("shorten the version: it is also the artifact's tag", "version %q (--version) is not a valid OCI tag: %v", r.Version, err)
	}
	return nil
}

// checkAnnotations refuses extra annotations that contradict the provider,
// version or source the manifest annotations are set from.
func (r *Release) checkAnnotations() error {
	fromFlags := map[string]struct{ value, flag string }{
		AnnotationTitle:        {r.Type + "-" + r.Name, "--type and --name"},
		AnnotationVersion:      {r.Version, "--version"},
		AnnotationProviderType: {r.Type, "--type"},
		AnnotationProviderName: {r.Name, "--name"},
	}
	if r.Source != "" {
		fromFlags[AnnotationSource] = struct{ value, flag string }{r.Source, "--source"}
	}
	for _, key := range slices.Sorted(maps.Keys(r.Annotations)) {
		value := r.Annotations[key]
		if strings.TrimSpace(key) == "" {
			return releaseError("give annotations as key=value", "an annotation has an empty key (value %q)", value)
		}
		expected, set := fromFlags[key]
		if !set || value == expected.value {
			continue
		}
		return releaseError(fmt.Sprintf("drop --annotation %s: publish sets it from %s", key, expected.flag),
			"--annotation %s=%s contradicts %s (%s)", key, value, expected.flag, expected.value)
	}
	return nil
}

// checkFileSet checks that the files are metadata.yaml, the type's
// components file and optional cluster templates, and nothing else.
func (r *Release) checkFileSet() error {
	componentsFile := clusterctl.ComponentsFile(r.Type)
	given := listFiles(r.Files)
	expected := fmt.Sprintf("a %s provider artifact holds %s, %s and optionally %s", r.Type, MetadataFile, componentsFile, templatePattern)
	if _, ok := r.Files[MetadataFile]; !ok {
		return releaseError("add the provider's clusterctl metadata.yaml, which maps release series to Cluster API contracts",
			"%s is missing; the files given are %s", MetadataFile, given)
	}
	if _, ok := r.Files[componentsFile]; !ok {
		return releaseError(componentsHint(r.Type, r.Files), "the %s provider's components file %s is missing; the files given are %s", r.Type, componentsFile, given)
	}
	var unexpected []string
	for _, name := range slices.Sorted(maps.Keys(r.Files)) {
		if matched, _ := path.Match(templatePattern, name); !matched && name != MetadataFile && name != componentsFile {
			unexpected = append(unexpected, name)
		}
	}
	if len(unexpected) > 0 {
		return releaseError(expected+": give only those files as arguments, or remove the others from the directory",
			"unexpected %s among the files (%s)", strings.Join(unexpected, ", "), given)
	}
	return nil
}

// componentsHint guesses why the components file is missing.
func componentsHint(providerType string, files map[string][]byte) string {
	want := clusterctl.ComponentsFile(providerType)
	if _, ok := files["components.yaml"]; ok {
		return "rename components.yaml to " + want
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if other, ok := strings.CutSuffix(name, "-components.yaml"); ok && clusterctl.IsProviderType(other) {
			return fmt.Sprintf("%s is the components file of a provider of type %s: check --type, or give the %s provider's %s", name, other, providerType, want)
		}
	}
	return fmt.Sprintf("the components file of a %s provider is named %s: add it or rename it", providerType, want)
}

// ManifestAnnotations are the manifest annotations of the release: the
// contract's (ProviderAnnotations) and the extra ones. Check them first.
func (r *Release) ManifestAnnotations() map[string]string {
	out := maps.Clone(r.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, ProviderAnnotations(r.Type, r.Name, r.Version, r.Source))
	return out
}

// RepositoryNote says when a repository's last path element is not the
// {type}-{name} the contract names provider repositories by, and is ""
// otherwise. It is advice, not an error: any repository works.
func (r *Release) RepositoryNote(ref Reference) string {
	want := r.Type + "-" + r.Name
	if last := path.Base(ref.Repository); last != want {
		return fmt.Sprintf("the contract names provider repositories {registry}/{project}/manifests/%s; this one ends in %s", want, last)
	}
	return ""
}
