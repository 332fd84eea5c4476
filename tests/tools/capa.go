package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// The extra provider fixture: a real provider outside the cluster-api
// repository, so that tests see a release published by another project
// (its own GitHub repository, its own metadata.yaml release series, an
// infrastructure-components.yaml with clusterctl variables such as
// ${AWS_B64ENCODED_CREDENTIALS}).
//
// Cluster API Provider AWS v2.13.0 is chosen because it is the one such
// provider the module proxy serves here: the metal3 and k0smotron modules,
// and the vSphere, OpenStack and Azure providers, are refused. Its
// metadata.yaml maps v2.13 to the v1beta1 contract; its config tree renders
// with the kustomize the builder already uses.
const (
	capaModule  = "sigs.k8s.io/cluster-api-provider-aws/v2"
	capaVersion = "v2.13.0"
)

// renderCAPAComponents renders CAPA's infrastructure-components.yaml the
// way its `make release` does (kustomize build config/default, then an
// overlay that sets the promoted image at the release tag and the pull
// policy IfNotPresent on capa-controller-manager) into
// bin/fixtures/capa/<version>/, with the release's metadata.yaml.
func renderCAPAComponents(b *builder) error {
	modDir, out, err := b.fixtureModule("capa", capaModule, capaVersion, "capa", capaVersion)
	if err != nil {
		return err
	}
	data, err := releaseOverlay(filepath.Join(modDir, "config", "default"), "gcr.io/k8s-staging-cluster-api-aws/cluster-api-aws-controller",
		"registry.k8s.io/cluster-api-aws/cluster-api-aws-controller", capaVersion, "capa-controller-manager")
	if err != nil {
		return fmt.Errorf("rendering infrastructure-components.yaml of %s %s: %w", capaModule, capaVersion, err)
	}
	if err := os.WriteFile(filepath.Join(out, "infrastructure-components.yaml"), data, 0o644); err != nil {
		return err
	}
	metadata, err := os.ReadFile(filepath.Join(modDir, "metadata.yaml"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "metadata.yaml"), metadata, 0o644)
}
