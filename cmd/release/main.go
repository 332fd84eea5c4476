// Command release builds and publishes a Capwright release without a
// container runtime: the manager image, the manifests artifact Flux
// consumes, the Helm chart and the CLI binaries (see internal/release). It
// is release tooling run by make image and make release; it is not shipped.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/capwright/capwright/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// releaseFunc is release.Release or release.Image.
type releaseFunc func(context.Context, release.Options) (*release.Result, error)

// run parses args into release.Options, releases, prints the artifacts to
// stdout and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, imageOnly, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	do := releaseFunc(release.Release)
	if imageOnly {
		do = release.Image
	}
	res, err := do(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "release:", err)
		return 1
	}
	fmt.Fprintf(stdout, "image      %s\n", res.Image.Ref())
	if !imageOnly {
		fmt.Fprintf(stdout, "chart      %s\n", res.Chart.Ref())
		fmt.Fprintf(stdout, "manifests  %s\n", res.Manifests.Ref())
		for _, f := range res.CLI {
			fmt.Fprintf(stdout, "cli        %s\n", f)
		}
		for _, f := range res.SBOMs {
			fmt.Fprintf(stdout, "sbom       %s\n", f)
		}
		if res.Provenance != "" {
			fmt.Fprintf(stdout, "provenance %s\n", res.Provenance)
		}
		if res.PublicKey != "" {
			fmt.Fprintf(stdout, "public key %s (publish it with the release: users verify with it)\n", res.PublicKey)
		}
		if res.Signed {
			fmt.Fprintln(stdout, "signed     image (index and platforms), chart, manifests; SBOMs and provenance attached to the image")
		}
	}
	if o.Output != "" {
		fmt.Fprintf(stdout, "written to the OCI layout %s\n", o.Output)
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (o release.Options, imageOnly bool, err error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var imagePlats, cliPlats string
	var noCLI, keyless bool
	var cosign, cosignKey string
	fs.StringVar(&o.Version, "version", "", "version to release, vX.Y.Z[-pre] (required)")
	fs.StringVar(&o.Registry, "registry", "", "host[:port]/prefix the artifacts are named under (required)")
	fs.BoolVar(&o.PlainHTTP, "plain-http", false, "talk plain HTTP to the registry")
	fs.StringVar(&o.Output, "output", "", "write one OCI image layout here instead of pushing")
	fs.StringVar(&o.RepoRoot, "repo-root", ".", "the repository to release")
	fs.StringVar(&o.ManifestsDir, "manifests-dir", "", "kustomization of the manifests artifact (default <repo-root>/manifests/default)")
	fs.StringVar(&o.ChartDir, "chart-dir", "", "Helm chart (default <repo-root>/charts/capwright)")
	fs.StringVar(&imagePlats, "image-platforms", "", "comma-separated os/arch of the image (default linux/amd64,linux/arm64)")
	fs.StringVar(&cliPlats, "cli-platforms", "", "comma-separated os/arch of the CLI (default linux and darwin, amd64 and arm64)")
	fs.BoolVar(&noCLI, "no-cli", false, "do not build the CLI")
	fs.StringVar(&o.CLIDir, "cli-dir", "", "where the CLI binaries and SHA256SUMS go (default <repo-root>/bin/release/<version>, or <output>/cli)")
	fs.BoolVar(&o.AllowDirty, "allow-dirty", false, "release from a working tree with uncommitted changes")
	fs.BoolVar(&imageOnly, "image", false, "build only the manager image (make image)")
	fs.StringVar(&cosign, "cosign", "", "the cosign CLI that signs (make release: bin/cosign)")
	fs.StringVar(&cosignKey, "cosign-key", "", "sign with this cosign private key (a cosign.key file, env://VAR or a KMS URI; its password from COSIGN_PASSWORD)")
	fs.BoolVar(&keyless, "keyless", false, "sign keyless with cosign: the identity of the hosted CI's OIDC token, logged in Sigstore's transparency log")
	fs.StringVar(&o.SBOMGenerator, "sbom-generator", "", "cyclonedx-gomod, which writes the binaries' SBOMs (make release: bin/cyclonedx-gomod); empty writes none")
	fs.StringVar(&o.FilesDir, "files-dir", "", "where the SBOMs and provenance go (default <output>, or <repo-root>/bin/release/<version>)")
	fs.StringVar(&o.BuilderID, "builder-id", "", "who builds, as the provenance names it (a CI workflow's URL)")
	fs.StringVar(&o.InvocationID, "invocation-id", "", "this run, as the provenance names it (a CI run's URL)")
	if err := fs.Parse(args); err != nil {
		return o, false, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments %q; every option is a flag\n", fs.Args())
		return o, false, fmt.Errorf("unexpected arguments")
	}
	if cosignKey != "" && keyless {
		fmt.Fprintln(stderr, "-cosign-key and -keyless: sign with a key or keyless, not both")
		return o, false, fmt.Errorf("conflicting signing flags")
	}
	if cosignKey != "" || keyless {
		o.Signing = &release.Signing{Cosign: cosign, Key: cosignKey}
	}
	o.ImagePlatforms = splitList(imagePlats)
	o.CLIPlatforms = splitList(cliPlats)
	if noCLI {
		o.CLIPlatforms = []string{}
	}
	o.Log = stderr
	return o, imageOnly, nil
}

// splitList is nil for "" (the default) and the comma-separated items
// otherwise.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
