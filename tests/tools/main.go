// Command tools builds the pinned third-party components of the local
// management plane into bin/ and copies the files they ship (CRDs, kwok
// stages, Cluster API configs) next to them.
//
// Each component is built from its own wrapper module under tests/tools/<dir>
// because their dependency graphs (Kubernetes, etcd, Flux, kwok, Cluster
// API) cannot share one module resolution; the flux CLI is built from a copy
// of its module's source in bin/.src instead (see fluxcli.go). A component
// is rebuilt only when its pin changes: bin/.stamps/<name> records a hash of
// its wrapper go.mod, go.sum and build settings.
//
// Usage (from the repository root, as `make tools` runs it):
//
//	go -C tests/tools run . -bin ../../bin [component ...]
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// stampVersion changes when the builder's own output layout changes, so old
// bin/ trees are refreshed.
const stampVersion = "3"

// asset copies files matching Glob inside module Module (at the version the
// wrapper module resolves) into bin/<Dest>.
type asset struct {
	Module string
	Glob   string
	Dest   string
}

type component struct {
	Name string
	// Dir is the wrapper module directory, relative to tests/tools.
	Dir string
	// Packages are the main packages to build into bin/.
	Packages []string
	LDFlags  string
	Assets   []asset
	// Outputs are the files that must exist in bin/ after the build.
	Outputs []string
	// Render runs after the build and the assets, for generated files.
	Render func(b *builder) error
	// Build, when set, builds the component instead of a `go build` of
	// Packages in Dir; Packages are then only fetched ahead (prefetch).
	Build func(b *builder) error
	// Pins are inputs that decide the output but live in the builder's
	// code (versions a Build or Render chooses); they join the stamp.
	Pins []string
}

const k8sVersion = "v1.36.3"

var k8sLDFlags = strings.Join([]string{
	"-X k8s.io/component-base/version.gitVersion=" + k8sVersion,
	"-X k8s.io/component-base/version.gitMajor=1",
	"-X k8s.io/component-base/version.gitMinor=36",
	"-X k8s.io/component-base/version.gitTreeState=clean",
	"-X k8s.io/client-go/pkg/version.gitVersion=" + k8sVersion,
	"-X k8s.io/client-go/pkg/version.gitMajor=1",
	"-X k8s.io/client-go/pkg/version.gitMinor=36",
	"-X k8s.io/client-go/pkg/version.gitTreeState=clean",
}, " ")

// capiLDFlags stamp clusterctl with its release, as Cluster API's release
// build does; without them it reports v0.0.0.
var capiLDFlags = strings.Join([]string{
	"-X sigs.k8s.io/cluster-api/version.gitVersion=v1.14.2",
	"-X sigs.k8s.io/cluster-api/version.gitMajor=1",
	"-X sigs.k8s.io/cluster-api/version.gitMinor=14",
	"-X sigs.k8s.io/cluster-api/version.gitTreeState=clean",
}, " ")

func components() []component {
	return []component{
		{
			Name: "etcd", Dir: "etcd",
			Packages: []string{"go.etcd.io/etcd/server/v3"},
			Outputs:  []string{"etcd"},
			// The main package is the module root, so go build names the
			// binary "v3"; it is renamed below.
		},
		{
			Name: "kubernetes", Dir: "kubernetes",
			Packages: []string{
				"k8s.io/kubernetes/cmd/kube-apiserver",
				"k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler",
			},
			LDFlags: k8sLDFlags,
			Outputs: []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"},
		},
		{
			Name: "kwok", Dir: "kwok",
			Packages: []string{"sigs.k8s.io/kwok/cmd/kwok"},
			LDFlags:  "-X sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0",
			Outputs:  []string{"kwok"},
			Assets: []asset{
				{Module: "sigs.k8s.io/kwok", Glob: "kustomize/stage/node/fast/node-initialize.yaml", Dest: "assets/kwok-stages"},
				{Module: "sigs.k8s.io/kwok", Glob: "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml", Dest: "assets/kwok-stages"},
				{Module: "sigs.k8s.io/kwok", Glob: "kustomize/stage/pod/fast/pod-*.yaml", Dest: "assets/kwok-stages"},
			},
		},
		{
			Name: "flux", Dir: "flux",
			Packages: []string{
				"github.com/fluxcd/source-controller",
				"github.com/fluxcd/kustomize-controller",
				"github.com/fluxcd/helm-controller",
				"github.com/fluxcd/notification-controller",
			},
			Outputs: []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"},
			Assets: []asset{
				{Module: "github.com/fluxcd/source-controller", Glob: "config/crd/bases/*.yaml", Dest: "assets/crds/flux"},
				{Module: "github.com/fluxcd/kustomize-controller", Glob: "config/crd/bases/*.yaml", Dest: "assets/crds/flux"},
				{Module: "github.com/fluxcd/helm-controller", Glob: "config/crd/bases/*.yaml", Dest: "assets/crds/flux"},
				// Not installed by the plane: the alerts suite applies them
				// as a user would, with Capwright's Alert patch.
				{Module: "github.com/fluxcd/notification-controller", Glob: "config/crd/bases/*.yaml", Dest: "assets/crds/notification"},
			},
		},
		{
			Name: "cert-manager-crds", Dir: "certmanager",
			Assets: []asset{
				{Module: "github.com/cert-manager/cert-manager", Glob: "deploy/crds/cert-manager.io_*.yaml", Dest: "assets/crds/cert-manager"},
			},
		},
		{
			Name: "capi", Dir: "capi",
			Packages: []string{"sigs.k8s.io/cluster-api/core"},
			Outputs: []string{
				"cluster-api-manager",
				"fixtures/capi/v1.13.6/core-components.yaml",
				"fixtures/capi/v1.14.2/control-plane-components.yaml",
			},
			Assets: []asset{
				{Module: "sigs.k8s.io/cluster-api", Glob: "core/config/crd/bases/*.yaml", Dest: "assets/capi/crds"},
				{Module: "sigs.k8s.io/cluster-api", Glob: "core/config/webhook/manifests.yaml", Dest: "assets/capi/webhook"},
			},
			Render: renderCAPIComponents,
		},
		{
			// The flux CLI v2.9.5, built from a copy of the flux2 source
			// with the manifests it embeds generated (see fluxcli.go).
			Name: "flux-cli", Dir: "fluxcli",
			Packages: []string{flux2Module + "/cmd/flux"},
			LDFlags:  fluxCLILDFlags,
			Build:    buildFluxCLI,
			Pins:     fluxCLIPins(),
			Outputs:  []string{"flux"},
		},
		{
			// clusterctl, built from the same Cluster API module as the
			// manager: the adoption suite installs providers with the real
			// `clusterctl init` (offline, from a local repository) and reads
			// the result with `clusterctl describe` and `upgrade plan`.
			Name: "clusterctl", Dir: "capi",
			Packages: []string{"sigs.k8s.io/cluster-api/cmd/clusterctl"},
			LDFlags:  capiLDFlags,
			Outputs:  []string{"clusterctl"},
		},
		{
			// A real provider from another repository, as a release
			// fixture only (see capa.go); nothing is built.
			Name: "capa", Dir: "capa",
			Outputs: []string{
				"fixtures/capa/" + capaVersion + "/infrastructure-components.yaml",
				"fixtures/capa/" + capaVersion + "/metadata.yaml",
			},
			Render: renderCAPAComponents,
		},
		{
			// Cluster API's test runtime extension, as a release fixture
			// only (see capitest.go); nothing is built.
			Name: "capi-test-extension", Dir: "capitest",
			Outputs: []string{
				"fixtures/capi-test-extension/" + capiTestVersion + "/runtime-extension-components.yaml",
				"fixtures/capi-test-extension/" + capiTestVersion + "/metadata.yaml",
			},
			Render: renderCAPITestExtension,
		},
		{
			// Cluster API's Docker infrastructure provider (CAPD), as a
			// release fixture only (see capitest.go); nothing is built.
			Name: "capd", Dir: "capitest",
			Outputs: []string{"fixtures/capi/" + capiTestVersion + "/" + capdComponentsFile},
			Render:  renderCAPD,
		},
		{
			// The oras CLI, a producer of OCI artifacts that is not
			// Capwright: the providers suite pushes a provider artifact
			// with it and installs it unmodified. Its version is compiled
			// in (internal/version).
			Name: "oras", Dir: "oras",
			Packages: []string{"oras.land/oras/cmd/oras"},
			Outputs:  []string{"oras"},
		},
		{
			// The cosign CLI: the suites sign artifacts with it (key pair,
			// no transparency log) and Flux's source-controller verifies
			// them. v2, whose `cosign sign` writes the sha256-<hex>.sig
			// tag (v3 writes a Sigstore bundle by default) that `capwright
			// mirror` copies and source-controller falls back to when it
			// finds no bundle.
			Name: "cosign", Dir: "cosign",
			Packages: []string{"github.com/sigstore/cosign/v2/cmd/cosign"},
			Outputs:  []string{"cosign"},
		},
		{
			// cyclonedx-gomod: make release writes the CycloneDX SBOM of
			// every manager and CLI binary with it (`bin`: the modules Go
			// recorded in the binary) and attaches it to the image.
			Name: "cyclonedx", Dir: "cyclonedx",
			Packages: []string{"github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"},
			Outputs:  []string{"cyclonedx-gomod"},
		},
		{
			// cluster-api-operator: the adoption suite (tests/e2e/adopt/operator)
			// takes over the providers it installed, and the install benchmark
			// runs it beside Capwright. Its CRDs have a single version, so the
			// bases are installed as they are, without the conversion-webhook
			// and CA-injection patches of config/crd.
			Name: "capi-operator", Dir: "capioperator",
			Packages: []string{"sigs.k8s.io/cluster-api-operator/cmd"},
			Outputs:  []string{"cluster-api-operator"},
			Assets: []asset{
				{Module: "sigs.k8s.io/cluster-api-operator", Glob: "config/crd/bases/*.yaml", Dest: "cluster-api-operator-crds"},
			},
		},
	}
}

type builder struct {
	toolsDir string
	binDir   string
	log      io.Writer
}

func main() {
	binDir := flag.String("bin", "../../bin", "directory that receives binaries and assets")
	list := flag.Bool("list", false, "list the components and exit")
	flag.Parse()
	if *list {
		for _, c := range components() {
			fmt.Println(c.Name)
		}
		return
	}
	toolsDir, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	abs, err := filepath.Abs(*binDir)
	if err != nil {
		fatal(err)
	}
	b := &builder{toolsDir: toolsDir, binDir: abs, log: os.Stderr}
	want := flag.Args()
	var chosen []component
	for _, c := range components() {
		if len(want) == 0 || slices.Contains(want, c.Name) {
			chosen = append(chosen, c)
		}
	}
	b.prefetch(chosen)
	for _, c := range chosen {
		if err := b.ensure(c); err != nil {
			fatal(fmt.Errorf("component %s: %w", c.Name, err))
		}
	}
}

// prefetch downloads, in the background and one component at a time, the
// modules of the components after the first that need building, so that
// on a new machine the module proxy's downloads overlap the compiling of
// the components before them. It is only a head start: it never writes a
// wrapper's go.mod or go.sum (-mod=readonly), and whatever it fails to
// fetch the build fetches itself.
func (b *builder) prefetch(chosen []component) {
	var ahead []component
	for _, c := range chosen {
		if len(c.Packages) > 0 && !b.upToDate(c) {
			ahead = append(ahead, c)
		}
	}
	if len(ahead) < 2 {
		return
	}
	go func() {
		for _, c := range ahead[1:] {
			cmd := exec.Command("go", append([]string{"list", "-e", "-deps", "-f", "{{.ImportPath}}"}, c.Packages...)...)
			cmd.Dir = filepath.Join(b.toolsDir, c.Dir)
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "CGO_ENABLED=0", "GOWORK=off")
			_ = cmd.Run() // best effort; output and errors are the build's to report
		}
	}()
}

// upToDate tells whether c's stamp matches and its outputs exist.
func (b *builder) upToDate(c component) bool {
	stamp, err := b.stamp(c)
	if err != nil {
		return false
	}
	old, err := os.ReadFile(filepath.Join(b.binDir, ".stamps", c.Name))
	return err == nil && string(old) == stamp && b.outputsExist(c)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "tools:", err)
	os.Exit(1)
}

// ensure builds c unless its stamp matches and its outputs exist.
func (b *builder) ensure(c component) error {
	stamp, err := b.stamp(c)
	if err != nil {
		return err
	}
	stampPath := filepath.Join(b.binDir, ".stamps", c.Name)
	if old, err := os.ReadFile(stampPath); err == nil && string(old) == stamp && b.outputsExist(c) {
		return nil
	}
	start := time.Now()
	fmt.Fprintf(b.log, "tools: building %s (pin changed or output missing)\n", c.Name)
	if err := os.MkdirAll(b.binDir, 0o755); err != nil {
		return err
	}
	if c.Build != nil {
		if err := c.Build(b); err != nil {
			return err
		}
	} else if len(c.Packages) > 0 {
		if err := b.build(c); err != nil {
			return err
		}
	}
	for _, a := range c.Assets {
		if err := b.copyAsset(c, a); err != nil {
			return err
		}
	}
	if c.Render != nil {
		if err := c.Render(b); err != nil {
			return err
		}
	}
	if !b.outputsExist(c) {
		return errors.New("build finished but outputs are missing")
	}
	if err := os.MkdirAll(filepath.Dir(stampPath), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "tools: %s ready in %s\n", c.Name, time.Since(start).Round(time.Second))
	return os.WriteFile(stampPath, []byte(stamp), 0o644)
}

func (b *builder) outputsExist(c component) bool {
	for _, o := range c.Outputs {
		if _, err := os.Stat(filepath.Join(b.binDir, o)); err != nil {
			return false
		}
	}
	for _, a := range c.Assets {
		if files, _ := filepath.Glob(filepath.Join(b.binDir, a.Dest, "*")); len(files) == 0 {
			return false
		}
	}
	return true
}

// stamp hashes everything that decides what a component's build produces.
func (b *builder) stamp(c component) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%v\n%v\n", stampVersion, c.Name, c.LDFlags, c.Packages, c.Assets)
	// Only when set, so that the stamps of components without pins stay
	// as they were.
	if len(c.Pins) > 0 {
		fmt.Fprintf(h, "%v\n", c.Pins)
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(b.toolsDir, c.Dir, f))
		// A component without dependencies has no go.sum.
		if err != nil && (f != "go.sum" || !errors.Is(err, os.ErrNotExist)) {
			return "", err
		}
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (b *builder) goCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(b.toolsDir, dir)
	// -mod=mod: wrapper modules list only the component; go fills go.sum.
	// `go mod tidy` is avoided on purpose: it drags in test-only modules
	// that the proxy refuses.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOWORK=off")
	cmd.Stdout = b.log
	cmd.Stderr = b.log
	return cmd
}

func (b *builder) build(c component) error {
	out := b.binDir + string(os.PathSeparator)
	if c.Name == "etcd" || c.Name == "capi" || c.Name == "capi-operator" {
		// Module-root, "core" and "cmd" main packages would be named after
		// their directory; give them their real names.
		out = filepath.Join(b.binDir, c.Outputs[0])
	}
	args := []string{"build", "-trimpath", "-o", out}
	if c.LDFlags != "" {
		args = append(args, "-ldflags", c.LDFlags)
	}
	args = append(args, c.Packages...)
	if err := b.goCmd(c.Dir, args...).Run(); err != nil {
		return fmt.Errorf("go build in tests/tools/%s: %w", c.Dir, err)
	}
	return nil
}

// moduleDir downloads module mod at the version the wrapper resolves (or at
// version, when given) and returns its directory in the module cache.
func (b *builder) moduleDir(dir, mod, version string) (string, error) {
	query := mod
	if version != "" {
		query = mod + "@" + version
	}
	cmd := b.goCmd(dir, "mod", "download", "-json", query)
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", query, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out.String()), &info); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", query, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", query, info.Error)
	}
	return info.Dir, nil
}

func (b *builder) copyAsset(c component, a asset) error {
	modDir, err := b.moduleDir(c.Dir, a.Module, "")
	if err != nil {
		return err
	}
	matches, err := filepath.Glob(filepath.Join(modDir, a.Glob))
	if err != nil {
		return err
	}
	if len(matches) == 0 {
		return fmt.Errorf("no files match %s in %s", a.Glob, a.Module)
	}
	dest := filepath.Join(b.binDir, a.Dest)
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dest, filepath.Base(m)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
