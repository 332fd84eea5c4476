package clusterctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// fromVersion is what clusterctl installs; toVersion is the newer release
// its local repository also holds, which `clusterctl upgrade plan` offers
// and Capwright upgrades to.
const (
	fromVersion = "v1.13.6"
	toVersion   = "v1.14.2"
)

// diagnosticsAddress is the value `clusterctl init` is given for the core
// components' variable CAPI_DIAGNOSTICS_ADDRESS (default :8443): a
// variable the conversion must name without printing its value.
const diagnosticsAddress = ":18443"

// clusterName is the Cluster that exists before the adoption and must
// come through it untouched.
const clusterName = "adopted"

// localProviders are the providers clusterctl's local repository holds:
// the directory clusterctl wants ({provider-label}, its
// ManifestLabel()), the components file and the clusterctl type.
var localProviders = []struct {
	label, file, name, clusterctlType, initFlag string
}{
	{"cluster-api", "core-components.yaml", "cluster-api", "CoreProvider", "--core"},
	{"bootstrap-kubeadm", "bootstrap-components.yaml", "kubeadm", "BootstrapProvider", "--bootstrap"},
	{"control-plane-kubeadm", "control-plane-components.yaml", "kubeadm", "ControlPlaneProvider", "--control-plane"},
}

// clusterctlInstall is how the suite runs clusterctl: its configuration
// file and an environment of its own (HOME, no version check).
type clusterctlInstall struct {
	binary, config string
	env            []string
	// initOutput is what `clusterctl init` printed.
	initOutput string
}

// writeLocalRepository lays the real releases out as clusterctl's local
// repository reads them, {basepath}/{provider-label}/{version}/{file}
// beside metadata.yaml, and writes a clusterctl.yaml whose providers: name
// it with file:// URLs. clusterctl reaches nothing else:
//   - cert-manager: clusterctl init installs it from GitHub unless it
//     finds it working, which it checks by creating a test Issuer and
//     Certificate (cert-manager-test-resources.yaml). The plane has
//     cert-manager's CRDs and certsim, its stand-in, so the check passes;
//     externallyProvisioned: "true" says the same in the configuration, so
//     a failing check is an error instead of a download.
//   - its own version check (a GitHub API call) is turned off with
//     CLUSTERCTL_DISABLE_VERSIONCHECK.
func writeLocalRepository(dir, fixtures string) (string, error) {
	repo := filepath.Join(dir, "repository")
	var cfg strings.Builder
	cfg.WriteString("providers:\n")
	for _, p := range localProviders {
		for _, version := range []string{fromVersion, toVersion} {
			dest := filepath.Join(repo, p.label, version)
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return "", err
			}
			for _, f := range []string{p.file, "metadata.yaml"} {
				data, err := os.ReadFile(filepath.Join(fixtures, version, f))
				if err != nil {
					return "", fmt.Errorf("reading the release fixtures (run make tools): %w", err)
				}
				if err := os.WriteFile(filepath.Join(dest, f), data, 0o644); err != nil {
					return "", err
				}
			}
		}
		fmt.Fprintf(&cfg, "- name: %s\n  type: %s\n  url: file://%s\n", p.name, p.clusterctlType, filepath.Join(repo, p.label, "latest", p.file))
	}
	cfg.WriteString("cert-manager:\n  externallyProvisioned: \"true\"\n")
	path := filepath.Join(dir, "clusterctl.yaml")
	return path, os.WriteFile(path, []byte(cfg.String()), 0o600)
}

// run runs clusterctl against the plane and returns what it printed.
func (c *clusterctlInstall) run(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	args = append(args, "--config", c.config, "--kubeconfig", kubeconfig)
	cmd := exec.CommandContext(ctx, c.binary, args...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("clusterctl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// initWithClusterctl runs `clusterctl init` offline for the core, kubeadm
// bootstrap and kubeadm control plane providers at fromVersion, with one
// variable set, then serves the core's webhooks with the real Cluster API
// manager and creates a Cluster.
func initWithClusterctl(ctx context.Context, p *plane.Plane) (*clusterctlInstall, error) {
	dir := filepath.Join(p.RunDir, "clusterctl")
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	config, err := writeLocalRepository(dir, filepath.Join(p.RepoRoot(), "bin", "fixtures", "capi"))
	if err != nil {
		return nil, err
	}
	c := &clusterctlInstall{
		binary: filepath.Join(p.RepoRoot(), "bin", "clusterctl"),
		config: config,
		env: []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
		},
	}
	if _, err := os.Stat(c.binary); err != nil {
		return nil, fmt.Errorf("clusterctl is not built (run make tools): %w", err)
	}
	args := []string{"init", "--wait-providers", "--wait-provider-timeout", "120"}
	for _, lp := range localProviders {
		args = append(args, lp.initFlag, lp.name+":"+fromVersion)
	}
	start := time.Now()
	initEnv := c.env
	c.env = append(c.env, "CAPI_DIAGNOSTICS_ADDRESS="+diagnosticsAddress)
	c.initOutput, err = c.run(ctx, p.Kubeconfig, args...)
	c.env = initEnv
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "e2e: clusterctl init installed three providers in %s\n", time.Since(start).Round(time.Millisecond))

	// Cluster API's webhooks (the Cluster's defaulting and validation,
	// the CRDs' conversion) are served by the real manager.
	if _, err := p.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: "capi-system"}); err != nil {
		return nil, err
	}
	if err := p.InstallTestInfraClusterCRD(ctx); err != nil {
		return nil, err
	}
	kc, err := framework.NewClient(p.Config)
	if err != nil {
		return nil, err
	}
	if err := framework.CreateWithRetry(ctx, kc, plane.NewTestCluster("default", clusterName)); err != nil {
		return nil, fmt.Errorf("creating Cluster default/%s: %w", clusterName, err)
	}
	return c, nil
}
