package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// capiFixtureVersions are the Cluster API releases whose provider components
// are rendered for tests: the current line and the one before it, so that
// upgrades can be exercised.
var capiFixtureVersions = []string{"v1.13.6", "v1.14.2"}

// capiProvider is one provider config tree inside the cluster-api module and
// the clusterctl file its rendering becomes.
type capiProvider struct {
	// Tree is the kustomize root, by release line: core moved from config/
	// to core/config/ in v1.14.
	Tree func(version string) string
	// File is the clusterctl components file name.
	File string
	// Image is the development image the tree references; releases point it
	// at registry.k8s.io/cluster-api/<name>:<version>.
	Image string
}

var capiProviders = []capiProvider{
	{
		Tree: func(v string) string {
			if v < "v1.14" {
				return "config/default"
			}
			return "core/config/default"
		},
		File:  "core-components.yaml",
		Image: "cluster-api-controller",
	},
	{
		Tree:  func(string) string { return "bootstrap/kubeadm/config/default" },
		File:  "bootstrap-components.yaml",
		Image: "kubeadm-bootstrap-controller",
	},
	{
		Tree:  func(string) string { return "controlplane/kubeadm/config/default" },
		File:  "control-plane-components.yaml",
		Image: "kubeadm-control-plane-controller",
	},
}

// renderCAPIComponents renders the real provider components of each fixture
// version with kustomize, the way a Cluster API release does, into
// bin/fixtures/capi/<version>/ along with that release's metadata.yaml.
func renderCAPIComponents(b *builder) error {
	for _, version := range capiFixtureVersions {
		modDir, out, err := b.fixtureModule("capi", "sigs.k8s.io/cluster-api", version, "capi", version)
		if err != nil {
			return err
		}
		for _, p := range capiProviders {
			data, err := releaseOverlay(filepath.Join(modDir, p.Tree(version)), "gcr.io/k8s-staging-cluster-api/"+p.Image,
				"registry.k8s.io/cluster-api/"+p.Image, version, "")
			if err != nil {
				return fmt.Errorf("rendering %s of cluster-api %s: %w", p.File, version, err)
			}
			if err := os.WriteFile(filepath.Join(out, p.File), data, 0o644); err != nil {
				return err
			}
		}
		metadata, err := os.ReadFile(filepath.Join(modDir, "metadata.yaml"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "metadata.yaml"), metadata, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// releaseOverlay renders tree as a provider's release does: image (the
// development image the tree references) renamed to newName ("" keeps
// its name) at tag, and, when deployment is set, the pull policy
// IfNotPresent on the first container of that Deployment.
func releaseOverlay(tree, image, newName, tag, deployment string) ([]byte, error) {
	var extra strings.Builder
	if newName != "" {
		extra.WriteString("\n  newName: " + newName)
	}
	extra.WriteString("\n  newTag: " + tag + "\n")
	if deployment != "" {
		fmt.Fprintf(&extra, `patches:
- target:
    group: apps
    version: v1
    kind: Deployment
    name: %s
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/0/imagePullPolicy
      value: IfNotPresent
`, deployment)
	}
	return kustomizeOverlay(tree, func(rel string) string {
		return fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\nimages:\n- name: %s%s", rel, image, extra.String())
	})
}

// fixtureModule fetches module at version through the wrapper module dir
// and creates bin/fixtures/<fixture...>: the source to render and where
// to write.
func (b *builder) fixtureModule(dir, module, version string, fixture ...string) (modDir, out string, err error) {
	if modDir, err = b.moduleDir(dir, module, version); err != nil {
		return "", "", err
	}
	out = filepath.Join(append([]string{b.binDir, "fixtures"}, fixture...)...)
	return modDir, out, os.MkdirAll(out, 0o755)
}

// kustomizeOverlay renders tree with kustomize (krusty) through an overlay
// in a temporary directory, since the module cache is read-only;
// kustomization gets tree's path relative to the overlay (kustomize refuses
// absolute resource paths) and returns the overlay's kustomization.yaml.
func kustomizeOverlay(tree string, kustomization func(rel string) string) ([]byte, error) {
	overlay, err := os.MkdirTemp("", "fixture-render-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(overlay)
	rel, err := filepath.Rel(overlay, tree)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization(rel)), 0o644); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	resMap, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		return nil, err
	}
	return resMap.AsYaml()
}
