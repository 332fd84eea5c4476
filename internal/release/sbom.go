package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// sbomDir holds the SBOMs under Options.FilesDir.
const sbomDir = "sbom"

// sbomFile is one SBOM written: of which binary, for which platform.
type sbomFile struct {
	// binary is what the SBOM is of: capwright-manager or capwright.
	binary   string
	platform platform
	path     string
}

// writeSBOM writes the CycloneDX SBOM of a Go binary with cyclonedx-gomod
// (`bin`: the modules and versions Go recorded in the binary, as `go
// version -m` lists them, and the binary's hashes). Without serial number
// and timestamp it is the same for the same binary.
func writeSBOM(ctx context.Context, o Options, binaryName string, p platform, binary string) (sbomFile, error) {
	dir := filepath.Join(o.FilesDir, sbomDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sbomFile{}, fmt.Errorf("creating %s: %w", dir, err)
	}
	out := filepath.Join(dir, binaryName+"_"+platformSuffix(p)+".cdx.json")
	o.logf("writing the SBOM %s", out)
	cmd := exec.CommandContext(ctx, o.SBOMGenerator, "bin", "-json", "-noserial", "-notimestamp",
		"-version", o.Version, "-output", out, binary)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return sbomFile{}, fmt.Errorf("cyclonedx-gomod bin %s: %w: %s", binary, err, strings.TrimSpace(stderr.String()))
	}
	return sbomFile{binary: binaryName, platform: p, path: out}, nil
}

// platformSuffix is os_arch[_variant], as in the CLI's file names.
func platformSuffix(p platform) string {
	s := p.os + "_" + p.arch
	if p.variant != "" {
		s += "_" + p.variant
	}
	return s
}
