package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The flux CLI of the Flux release the product targets, for suites that
// drive Flux the way its users do (`flux install`, `flux create …
// --export`, `flux bootstrap`).
//
// flux2 embeds the install manifests of its controllers
// (cmd/flux/manifests.embed.go: `//go:embed manifests/*.yaml`). Its release
// generates them (manifests/scripts/bundle.sh: `kustomize build` of
// manifests/bases/<controller>, manifests/rbac and manifests/policies), so
// the module zip has none and a plain `go build` of cmd/flux fails. The
// bases pull each controller's release assets from GitHub, unreachable
// here. So the builder renders those assets as the controllers' release
// workflow does (fluxcd/gha-workflows controller-release.yaml:
// `kustomize build config/crd` > <controller>.crds.yaml and
// `kustomize build config/manager` > <controller>.deployment.yaml, image
// left at fluxcd/<controller>:<version>, which `flux install` points at
// ghcr.io/fluxcd) from the controller modules on the proxy, puts them
// beside the bases in a writable copy of the flux2 source under bin/.src,
// points the bases at them, bundles as bundle.sh does and builds cmd/flux
// in the copy, as the release does: flux2 is the main module, with its own
// go.mod and go.sum (they build here without replaces).
//
// Only flux2's default components are rendered; image-reflector-controller,
// image-automation-controller and source-watcher are not, so this build
// does not support `flux install --components-extra` (it finds no manifests
// for them).
const (
	flux2Module = "github.com/fluxcd/flux2/v2"
	// fluxCLIVersion must match the requirement in tests/tools/fluxcli/go.mod
	// (the build checks).
	fluxCLIVersion = "v2.9.5"
)

// fluxCLILDFlags stamp the version as flux2's release does (.goreleaser.yml):
// `flux version --client` reports it, and `flux install` and `flux
// bootstrap` use the embedded manifests only when asked for this version
// (isEmbeddedVersion in cmd/flux/version_utils.go); otherwise they download
// them from GitHub.
var fluxCLILDFlags = "-X main.VERSION=" + strings.TrimPrefix(fluxCLIVersion, "v")

// fluxDefaultComponents are flux2's default install components
// (pkg/manifestgen/install/options.go), the bases that are bundled.
var fluxDefaultComponents = []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"}

// fluxControllerSources maps a controller release that flux2's bases pin to
// the module version its assets are rendered from, where the proxy refuses
// the pinned one. notification-controller v1.9.4 is refused; v1.9.3 has the
// same API types (its api module differs from v1.9.4's only in go.mod), so
// the same CRDs, and its config/manager has changed only in the image tag
// along the v1.9 line (v1.9.0 to v1.9.3); the tag is set to v1.9.4.
var fluxControllerSources = map[string]string{
	"notification-controller@v1.9.4": "v1.9.3",
}

// fluxCLIPins are the inputs of the flux CLI build that live in this file
// rather than in the wrapper's go.mod; they join the component's stamp.
func fluxCLIPins() []string {
	pins := []string{"render 1", strings.Join(fluxDefaultComponents, ",")}
	for _, release := range slices.Sorted(maps.Keys(fluxControllerSources)) {
		pins = append(pins, release+"="+fluxControllerSources[release])
	}
	return pins
}

// releaseAssetURL matches the GitHub release assets the bases list.
var releaseAssetURL = regexp.MustCompile(`https://github\.com/fluxcd/([a-z0-9-]+)/releases/download/(v[0-9][^/]*)/([a-z0-9-]+)\.(crds|deployment)\.yaml`)

// buildFluxCLI copies the flux2 source into bin/.src, generates the
// manifests it embeds and builds bin/flux from the copy.
func buildFluxCLI(b *builder) error {
	modDir, err := b.moduleDir("fluxcli", flux2Module, fluxCLIVersion)
	if err != nil {
		return err
	}
	if pinned, err := b.moduleDir("fluxcli", flux2Module, ""); err != nil {
		return err
	} else if pinned != modDir {
		return fmt.Errorf("tests/tools/fluxcli/go.mod resolves %s to %s, but fluxCLIVersion is %s: change both together", flux2Module, filepath.Base(pinned), fluxCLIVersion)
	}
	src := filepath.Join(b.binDir, ".src", "flux2@"+fluxCLIVersion)
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	if err := copyTree(modDir, src); err != nil {
		return err
	}
	if err := b.bundleFluxManifests(src); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", fluxCLILDFlags,
		// The copy lies inside this repository's work tree: without
		// -buildvcs=false go would stamp this repository's commit into
		// flux, or fail where git is missing.
		"-buildvcs=false",
		"-o", filepath.Join(b.binDir, "flux"), "./cmd/flux")
	cmd.Dir = src
	// flux2's go.sum is complete for cmd/flux: nothing is written to it.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "CGO_ENABLED=0", "GOWORK=off")
	cmd.Stdout = b.log
	cmd.Stderr = b.log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/flux in %s: %w", src, err)
	}
	return nil
}

// bundleFluxManifests does what flux2's manifests/scripts/bundle.sh does for
// the default components, in the copy at src: each base, rbac and policies
// rendered into cmd/flux/manifests/<name>.yaml.
func (b *builder) bundleFluxManifests(src string) error {
	out := filepath.Join(src, "cmd", "flux", "manifests")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	trees := map[string]string{
		"rbac.yaml":     filepath.Join(src, "manifests", "rbac"),
		"policies.yaml": filepath.Join(src, "manifests", "policies"),
	}
	for _, c := range fluxDefaultComponents {
		base := filepath.Join(src, "manifests", "bases", c)
		if err := b.localizeFluxBase(base); err != nil {
			return fmt.Errorf("flux2 base %s: %w", c, err)
		}
		trees[c+".yaml"] = base
	}
	for file, tree := range trees {
		data, err := kustomizeBuild(tree)
		if err != nil {
			return fmt.Errorf("kustomize build %s: %w", tree, err)
		}
		if err := os.WriteFile(filepath.Join(out, file), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// localizeFluxBase renders the controller release assets that the base's
// kustomization.yaml downloads into the base directory and points the
// kustomization at those files instead of GitHub.
func (b *builder) localizeFluxBase(base string) error {
	path := filepath.Join(base, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var renderErr error
	localized := releaseAssetURL.ReplaceAllStringFunc(string(data), func(url string) string {
		m := releaseAssetURL.FindStringSubmatch(url)
		controller, version, file, kind := m[1], m[2], m[3], m[4]
		if file != controller {
			renderErr = errors.Join(renderErr, fmt.Errorf("unexpected release asset %s", url))
			return url
		}
		asset, err := b.renderControllerAsset(controller, version, kind)
		if err != nil {
			renderErr = errors.Join(renderErr, err)
			return url
		}
		name := controller + "." + kind + ".yaml"
		if err := os.WriteFile(filepath.Join(base, name), asset, 0o644); err != nil {
			renderErr = errors.Join(renderErr, err)
		}
		return name
	})
	if renderErr != nil {
		return renderErr
	}
	if strings.Contains(localized, "://") {
		return fmt.Errorf("%s still lists a remote resource after localizing:\n%s", path, localized)
	}
	return os.WriteFile(path, []byte(localized), 0o644)
}

// renderControllerAsset renders one release asset of a Flux controller as
// its release workflow does: kind "crds" from config/crd, "deployment" from
// config/manager.
func (b *builder) renderControllerAsset(controller, version, kind string) ([]byte, error) {
	module := "github.com/fluxcd/" + controller
	if major := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[0]; major != "0" && major != "1" {
		module += "/v" + major
	}
	source := version
	if s, ok := fluxControllerSources[controller+"@"+version]; ok {
		source = s
	}
	modDir, err := b.moduleDir("fluxcli", module, source)
	if err != nil {
		return nil, err
	}
	if kind == "crds" {
		return kustomizeBuild(filepath.Join(modDir, "config", "crd"))
	}
	manager := filepath.Join(modDir, "config", "manager")
	if source == version {
		return kustomizeBuild(manager)
	}
	// Rendered from another release: give the image the pinned tag.
	overlay, err := os.MkdirTemp("", "flux-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(overlay)
	rel, err := filepath.Rel(overlay, manager)
	if err != nil {
		return nil, err
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: fluxcd/%s
  newTag: %s
`, rel, controller, version)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	return kustomizeBuild(overlay)
}

// kustomizeBuild renders dir as `kustomize build dir` does by default:
// resources in kustomize's legacy order (Namespaces and CRDs first) unless
// the kustomization sets sortOptions, loads restricted to its root.
func kustomizeBuild(dir string) ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionUnspecified
	resMap, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return resMap.AsYaml()
}

// copyTree copies the regular files under from (a read-only module cache
// directory) into a writable tree at to.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dest := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dest, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dest, data, info.Mode().Perm()|0o200)
	})
}
