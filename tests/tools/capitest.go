package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// The runtime extension fixture: Cluster API's test runtime extension
// (test/extension in the sigs.k8s.io/cluster-api/test module), the
// RuntimeExtensionProvider that Cluster API's own e2e suite installs with
// clusterctl from its config tree (test/e2e/config/docker.yaml:
// test/extension/config/default with data/shared/main/metadata.yaml). No
// project publishes a runtime extension release the module proxy serves
// here, so this is the real one closest to a release: rendered the way
// clusterctl reads a local provider repository, with kustomize.
//
// The module's packages are not built (v1.14.x needs modules the proxy
// refuses); only its source is read.
const (
	capiTestModule = "sigs.k8s.io/cluster-api/test"
	// capiTestVersion is the release of the test module, which is also
	// the tag the fixture is published under.
	capiTestVersion = "v1.14.2"
)

// renderCAPITestExtension renders test/extension/config/default into
// bin/fixtures/capi-test-extension/<version>/runtime-extension-components.yaml
// through an overlay that pins the image at the release tag with pull
// policy IfNotPresent (what a release overlay does; the pods are kwok's,
// nothing is pulled), beside the metadata.yaml Cluster API's e2e gives it.
func renderCAPITestExtension(b *builder) error {
	modDir, out, err := b.fixtureModule("capitest", capiTestModule, capiTestVersion, "capi-test-extension", capiTestVersion)
	if err != nil {
		return err
	}
	data, err := releaseOverlay(filepath.Join(modDir, "extension", "config", "default"),
		"gcr.io/k8s-staging-cluster-api/test-extension", "", capiTestVersion, "test-extension-controller-manager")
	if err != nil {
		return fmt.Errorf("rendering runtime-extension-components.yaml of %s %s: %w", capiTestModule, capiTestVersion, err)
	}
	if err := os.WriteFile(filepath.Join(out, "runtime-extension-components.yaml"), data, 0o644); err != nil {
		return err
	}
	metadata, err := os.ReadFile(filepath.Join(modDir, "e2e", "data", "shared", "main", "metadata.yaml"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "metadata.yaml"), metadata, 0o644)
}

// capdComponentsFile is the name Cluster API's release gives the Docker
// infrastructure provider (CAPD)'s components, the file clusterctl's
// built-in "docker" provider installs.
const capdComponentsFile = "infrastructure-components-development.yaml"

// renderCAPD renders test/infrastructure/docker/config/default into
// bin/fixtures/capi/<version>/infrastructure-components-development.yaml,
// as Cluster API's release does (release-manifests-dev after
// manifest-modification-dev): the image at the staging registry and the
// release tag, pull policy IfNotPresent. It sits beside the core's files,
// as the release carries it.
func renderCAPD(b *builder) error {
	modDir, out, err := b.fixtureModule("capitest", capiTestModule, capiTestVersion, "capi", capiTestVersion)
	if err != nil {
		return err
	}
	data, err := releaseOverlay(filepath.Join(modDir, "infrastructure", "docker", "config", "default"),
		"gcr.io/k8s-staging-cluster-api/capd-manager", "", capiTestVersion, "capd-controller-manager")
	if err != nil {
		return fmt.Errorf("rendering %s of %s %s: %w", capdComponentsFile, capiTestModule, capiTestVersion, err)
	}
	return os.WriteFile(filepath.Join(out, capdComponentsFile), data, 0o644)
}
