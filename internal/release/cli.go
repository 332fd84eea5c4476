package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// checksumsFile lists the CLI binaries' SHA-256 in sha256sum -c format.
const checksumsFile = "SHA256SUMS"

// buildCLI builds ./cmd/capwright for each platform into dir as
// capwright_<os>_<arch> and writes SHA256SUMS; it returns the files
// written.
func buildCLI(ctx context.Context, o Options, platforms []platform) ([]string, error) {
	if len(platforms) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(o.CLIDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the CLI directory: %w", err)
	}
	ldflags := "-s -w -X main.version=" + o.Version
	var files []string
	var sums strings.Builder
	for _, p := range platforms {
		name := "capwright_" + platformSuffix(p)
		if p.os == "windows" {
			name += ".exe"
		}
		out := filepath.Join(o.CLIDir, name)
		o.logf("building ./cmd/capwright for %s", p)
		if err := o.build(ctx, buildSpec{dir: o.RepoRoot, pkg: "./cmd/capwright", platform: p, ldflags: ldflags, out: out}); err != nil {
			return nil, err
		}
		sum, err := fileSHA256(out)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&sums, "%s  %s\n", sum, name)
		files = append(files, out)
	}
	sumsPath := filepath.Join(o.CLIDir, checksumsFile)
	if err := os.WriteFile(sumsPath, []byte(sums.String()), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", sumsPath, err)
	}
	return append(files, sumsPath), nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
