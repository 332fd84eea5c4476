package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// platform is os/arch[/variant], as in an image index.
type platform struct {
	os, arch, variant string
}

func parsePlatform(s string) (platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return platform{}, fmt.Errorf("platform %q is not os/arch[/variant], e.g. linux/amd64", s)
	}
	p := platform{os: parts[0], arch: parts[1]}
	if len(parts) == 3 {
		p.variant = parts[2]
	}
	return p, nil
}

func parsePlatforms(list []string) ([]platform, error) {
	out := make([]platform, 0, len(list))
	for _, s := range list {
		p, err := parsePlatform(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (p platform) String() string {
	if p.variant != "" {
		return p.os + "/" + p.arch + "/" + p.variant
	}
	return p.os + "/" + p.arch
}

// buildSpec is one go build of a main package for one platform.
type buildSpec struct {
	// dir is where go build runs (the repository root).
	dir string
	// pkg is the main package, e.g. ./cmd/manager.
	pkg      string
	platform platform
	ldflags  string
	// out is the binary written.
	out string
}

// buildFunc builds one binary; tests swap in one that writes stand-ins.
type buildFunc func(ctx context.Context, b buildSpec) error

// goBuild runs the go command: static (CGO_ENABLED=0) and with -trimpath,
// so the same commit gives the same binary wherever it is built.
func goBuild(ctx context.Context, b buildSpec) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", b.ldflags, "-o", b.out, b.pkg)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+b.platform.os, "GOARCH="+b.platform.arch)
	if b.platform.arch == "arm" && b.platform.variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(b.platform.variant, "v"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", b.pkg, b.platform, err, out)
	}
	return nil
}
