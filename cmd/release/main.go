// Command release builds and publishes a Capwright release without a
// container runtime: the manager image, the manifests artifact Flux
// consumes, the Helm chart and the CLI binaries (see internal/release). It
// is release tooling run by make image and make release; it is not shipped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/capwright/capwright/internal/release"
)

func main() {
	var (
		o          release.Options
		imageOnly  bool
		imagePlats string
		cliPlats   string
		noCLI      bool
	)
	flag.StringVar(&o.Version, "version", "", "version to release, vX.Y.Z[-pre] (required)")
	flag.StringVar(&o.Registry, "registry", "", "host[:port]/prefix the artifacts are named under (required)")
	flag.BoolVar(&o.PlainHTTP, "plain-http", false, "talk plain HTTP to the registry")
	flag.StringVar(&o.Output, "output", "", "write one OCI image layout here instead of pushing")
	flag.StringVar(&o.RepoRoot, "repo-root", ".", "the repository to release")
	flag.StringVar(&o.ManifestsDir, "manifests-dir", "", "kustomization of the manifests artifact (default <repo-root>/manifests/default)")
	flag.StringVar(&o.ChartDir, "chart-dir", "", "Helm chart (default <repo-root>/charts/capwright)")
	flag.StringVar(&imagePlats, "image-platforms", "", "comma-separated os/arch of the image (default linux/amd64,linux/arm64)")
	flag.StringVar(&cliPlats, "cli-platforms", "", "comma-separated os/arch of the CLI (default linux and darwin, amd64 and arm64)")
	flag.BoolVar(&noCLI, "no-cli", false, "do not build the CLI")
	flag.StringVar(&o.CLIDir, "cli-dir", "", "where the CLI binaries and SHA256SUMS go (default <repo-root>/bin/release/<version>, or <output>/cli)")
	flag.BoolVar(&o.AllowDirty, "allow-dirty", false, "release from a working tree with uncommitted changes")
	flag.BoolVar(&imageOnly, "image", false, "build only the manager image (make image)")
	flag.Parse()

	o.ImagePlatforms = splitList(imagePlats)
	o.CLIPlatforms = splitList(cliPlats)
	if noCLI {
		o.CLIPlatforms = []string{}
	}
	o.Log = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := release.Release
	if imageOnly {
		run = release.Image
	}
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	where := "pushed"
	if o.Output != "" {
		where = "written to " + o.Output
	}
	fmt.Printf("image      %s\n", res.Image.Ref())
	if !imageOnly {
		fmt.Printf("chart      %s\n", res.Chart.Ref())
		fmt.Printf("manifests  %s\n", res.Manifests.Ref())
		for _, f := range res.CLI {
			fmt.Printf("cli        %s\n", f)
		}
	}
	fmt.Printf("(%s)\n", where)
}

// splitList is nil for "" (the default) and the comma-separated items
// otherwise.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
