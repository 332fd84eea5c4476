package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
)

// publishedProviders pushes the three Cluster API providers with their
// images to a plain HTTP registry.
func publishedProviders(t *testing.T) (*registrytest.Registry, []mirrortest.PushedProvider) {
	t.Helper()
	src := registrytest.New(t, registrytest.Options{})
	var pushed []mirrortest.PushedProvider
	for _, p := range mirrortest.CAPIProviders(t, clusterctltest.Current, src.Host) {
		pushed = append(pushed, mirrortest.PushProvider(t, src.Access(), src.Ref(p.Repository("cluster-api"), ""), p, nil))
	}
	return src, pushed
}

func TestMirrorCommand(t *testing.T) {
	_, providers := publishedProviders(t)
	dst := registrytest.New(t, registrytest.Options{Username: "mirror", Password: "s3cret"})
	config := dockerConfig(t, dst.Host, "mirror", "s3cret")
	dir := t.TempDir()
	refsFile := filepath.Join(dir, "providers.txt")
	refs := "# Cluster API " + clusterctltest.Current + "\n\n" + providers[0].URL() + "\n  " + providers[1].URL() + "  \n"
	if err := os.WriteFile(refsFile, []byte(refs), 0o644); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "mirror-rules.txt")
	args := []string{"mirror", "--plain-http", "--registry-config", config, "--to", dst.Host + "/airgap",
		"--from-file", refsFile, "--rules-file", rulesFile, "--concurrency", "3", providers[2].URL()}

	stdout, stderr, code := cliRun(t, args...)
	if code != exitOK {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"Mirrored 3 of 3 artifact(s) to " + dst.Host + "/airgap", "artifacts: 3 copied, 0 already present, 0 failed",
		"images:    3 copied", "Mirror rules written to " + rulesFile} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// Not a terminal: plain lines, no redrawn bar.
	if strings.Contains(stderr, "\r") || !strings.Contains(stderr, "mirrored "+providers[0].Ref.String()) {
		t.Errorf("stderr should hold plain progress lines:\n%s", stderr)
	}
	rules, err := catalog.ReadMirrorFile(rulesFile)
	if err != nil {
		t.Fatalf("the rules file: %v", err)
	}
	for _, p := range providers {
		want := dst.Host + "/airgap/" + p.Ref.Repository
		if got, _ := rules.Rewrite(p.Ref.Host + "/" + p.Ref.Repository); got != want {
			t.Errorf("rules rewrite %s to %s, want %s", p.Ref, got, want)
		}
		to := artifact.Reference{Host: dst.Host, Repository: "airgap/" + p.Ref.Repository, Tag: p.Ref.Tag}
		if d := mirrortest.Resolve(t, dst.Access(), to); d.Digest.String() != p.Digest {
			t.Errorf("%s is %s at the target, want %s", to, d.Digest, p.Digest)
		}
	}

	// Again: nothing to copy, and from the cache nothing to walk either:
	// one read at the target per reference, its tag.
	writes, reads := dst.Writes(), dst.Reads()
	stdout, stderr, code = cliRun(t, args...)
	if code != exitOK || dst.Writes() != writes || !strings.Contains(stdout, "artifacts: 0 copied, 3 already present, 0 failed") ||
		strings.Count(stdout, "(unchanged since the last complete run: tags checked, content not walked)") != 3 || dst.Reads()-reads > 3 {
		t.Errorf("second run: exit %d, %d writes, %d reads at the target\nstdout:\n%s\nstderr:\n%s", code, dst.Writes()-writes, dst.Reads()-reads, stdout, stderr)
	}
	// --no-cache walks everything again.
	reads = dst.Reads()
	stdout, stderr, code = cliRun(t, append(args, "--no-cache")...)
	if code != exitOK || dst.Writes() != writes || !strings.Contains(stdout, "artifacts: 0 copied, 3 already present, 0 failed") ||
		strings.Contains(stdout, "unchanged since") || dst.Reads()-reads < 10 {
		t.Errorf("--no-cache run: exit %d, %d writes, %d reads at the target\nstdout:\n%s\nstderr:\n%s", code, dst.Writes()-writes, dst.Reads()-reads, stdout, stderr)
	}
}

func TestMirrorCommandExitCodes(t *testing.T) {
	src, providers := publishedProviders(t)
	dst := registrytest.New(t, registrytest.Options{Username: "mirror", Password: "s3cret"})
	good := dockerConfig(t, dst.Host, "mirror", "s3cret")
	wrong := dockerConfig(t, dst.Host, "mirror", "wrong")
	missing := providers[0].Ref.URL() + ":v9.9.9"

	perFile := src.Ref("operator/core-cluster-api", clusterctltest.Current)
	mirrortest.PushPerFileArtifact(t, src.Access(), perFile, providers[0].Provider.Files, "")
	perFileURL := perFile.URL() + ":" + perFile.Tag

	base := func(config string, more ...string) []string {
		return append([]string{"mirror", "--plain-http", "--registry-config", config, "--to", dst.Host}, more...)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no --to", []string{"mirror", providers[0].URL()}, exitUsage, "--to is required"},
		{"no reference", base(good), exitUsage, "nothing to mirror: give references"},
		{"reference without tag", base(good, providers[0].Ref.URL()), exitUsage, "tag"},
		{"bad target", []string{"mirror", "--to", "https://x", providers[0].URL()}, exitUsage, "--to"},
		{"bad size", base(good, "--max-artifact-size", "lots", providers[0].URL()), exitUsage, "--max-artifact-size"},
		{"missing refs file", base(good, "--from-file", filepath.Join(t.TempDir(), "none.txt")), exitUsage, "--from-file"},
		{"tag not found", base(good, missing), exitNotFound, "not found"},
		{"one of two not found", base(good, missing, providers[0].URL()), exitFailure, "1 of 2 references not mirrored"},
		{"wrong target credentials", base(wrong, providers[0].URL()), exitAuth, "refused access"},
		{"artifact too large", base(good, "--max-artifact-size", "16Ki", providers[0].URL()), exitContract, "exceeds the limit"},
		{"one file per layer", base(good, perFileURL), exitContract, "--repack"},
		{"repacked", base(good, "--repack", perFileURL), exitOK, "repacked: digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cliRun(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("exit code %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.want, stdout, stderr)
			}
			if strings.Contains(stdout+stderr, "s3cret") || strings.Contains(stdout+stderr, `"wrong"`) {
				t.Errorf("the output shows a password")
			}
		})
	}
}

// TestMirrorCommandPlainHTTPTarget mirrors from HTTPS sources to a plain
// HTTP target with --target-plain-http, and without it is told so.
func TestMirrorCommandPlainHTTPTarget(t *testing.T) {
	src := registrytest.New(t, registrytest.Options{TLS: true})
	p := mirrortest.CAPIProviders(t, clusterctltest.Current, src.Host)[0]
	pushed := mirrortest.PushProvider(t, src.Access(), src.Ref(p.Repository("cluster-api"), ""), p, nil)
	dst := registrytest.New(t, registrytest.Options{})
	config := dockerConfig(t, "example.invalid", "nobody", "none")
	// Without the flag, the error says which one reaches it.
	_, stderr, code := cliRun(t, "mirror", "--insecure", "--registry-config", config, "--to", dst.Host, pushed.URL())
	if code != exitNetwork || !strings.Contains(stderr, "a registry speaks plain HTTP, without TLS: pass --target-plain-http if it is the target") {
		t.Errorf("without --target-plain-http: exit code %d, want %d with the flag named\nstderr:\n%s", code, exitNetwork, stderr)
	}
	stdout, stderr, code := cliRun(t, "mirror", "--insecure", "--registry-config", config, "--to", dst.Host, "--target-plain-http", pushed.URL())
	if code != exitOK {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	to := artifact.Reference{Host: dst.Host, Repository: pushed.Ref.Repository, Tag: pushed.Ref.Tag}
	if d := mirrortest.Resolve(t, dst.Access(), to); d.Digest.String() != pushed.Digest {
		t.Errorf("%s is %s at the target, want %s", pushed.Ref.Repository, d.Digest, pushed.Digest)
	}
}

func TestMirrorCommandConflict(t *testing.T) {
	_, providersA := publishedProviders(t)
	b := registrytest.New(t, registrytest.Options{})
	p := mirrortest.CAPIProviders(t, clusterctltest.Current, b.Host)[0]
	clash := mirrortest.PushProvider(t, b.Access(), b.Ref(p.Repository("cluster-api"), ""), p, nil)
	dst := registrytest.New(t, registrytest.Options{})
	config := dockerConfig(t, "example.invalid", "nobody", "none")
	stdout, stderr, code := cliRun(t, "mirror", "--plain-http", "--registry-config", config, "--to", dst.Host, providersA[0].URL(), clash.URL())
	if code != exitUsage || !strings.Contains(stderr, "share a target repository") || dst.Writes() != 0 {
		t.Errorf("exit code %d, %d writes\nstdout:\n%s\nstderr:\n%s", code, dst.Writes(), stdout, stderr)
	}
}

// publishedRelease pushes a Capwright release under capwright/ of src: the
// manager image, the Flux artifact of the manifests and the chart, both
// naming the image by digest under imageHost.
func publishedRelease(t *testing.T, src *registrytest.Registry, imageHost string) (manifests, chart artifact.Reference, image mirrortest.PushedImage) {
	t.Helper()
	image = mirrortest.PushImage(t, src.Access(), src.Ref("capwright/capwright-manager", "v0.1.0"), mirrortest.SmallImage(mirrortest.SeedOf("capwright-manager")))
	written := imageHost + "/capwright/capwright-manager@" + image.Index.Digest.String()
	manifests = src.Ref("capwright/capwright-manifests", "v0.1.0")
	mirrortest.PushFluxArtifact(t, src.Access(), manifests, map[string][]byte{"capwright.yaml": mirrortest.CapwrightManifests(written)})
	chart = src.Ref("capwright/charts/capwright", "v0.1.0")
	mirrortest.PushChart(t, src.Access(), chart, map[string]string{artifact.ChartImagesAnnotation: mirrortest.ArtifactHubImages("manager", written)})
	return manifests, chart, image
}

func urlOf(ref artifact.Reference) string { return ref.URL() + ":" + ref.Tag }

// TestMirrorCommandCapwrightRelease mirrors Capwright's release in the
// same run as a provider, then the same release from a bundle.
func TestMirrorCommandCapwrightRelease(t *testing.T) {
	src, providers := publishedProviders(t)
	manifests, chart, image := publishedRelease(t, src, src.Host)
	plain := src.Ref("charts/plain", "1.0.0")
	mirrortest.PushChart(t, src.Access(), plain, nil)
	dst := registrytest.New(t, registrytest.Options{Username: "mirror", Password: "s3cret"})
	config := dockerConfig(t, dst.Host, "mirror", "s3cret")
	rulesFile := filepath.Join(t.TempDir(), "mirror-rules.txt")

	stdout, stderr, code := cliRun(t, "mirror", "--plain-http", "--registry-config", config, "--to", dst.Host+"/site", "--rules-file", rulesFile,
		providers[0].URL(), urlOf(manifests), urlOf(chart), urlOf(plain))
	if code != exitOK {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"Mirrored 4 of 4 artifact(s)", "images:    2 copied", "(Flux artifact)", "(Helm chart)",
		"note: the chart lists no images", "capwright-manifests:v0.1.0: Flux artifact, 1 image(s)"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	rules, err := catalog.ReadMirrorFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rules.Rewrite(image.Ref.Host + "/" + image.Ref.Repository); got != dst.Host+"/site/"+image.Ref.Repository {
		t.Errorf("rules rewrite the manager image to %q", got)
	}
	if d := mirrortest.Resolve(t, dst.Access(), artifact.Reference{Host: dst.Host, Repository: "site/" + image.Ref.Repository, Digest: image.Index.Digest.String()}); d.Digest != image.Index.Digest {
		t.Errorf("the manager image is %s at the target", d.Digest)
	}

	// The same release carried as a bundle.
	bundle := filepath.Join(t.TempDir(), "release")
	ghcrManifests, ghcrChart, _ := publishedRelease(t, registrytest.New(t, registrytest.Options{}), "ghcr.io")
	mirrortest.WriteLayout(t, bundle, artifact.Access{PlainHTTP: true}, map[string]artifact.Reference{
		"ghcr.io/capwright/capwright-manager:v0.1.0":   {Host: ghcrManifests.Host, Repository: "capwright/capwright-manager", Tag: "v0.1.0"},
		"ghcr.io/capwright/capwright-manifests:v0.1.0": ghcrManifests,
		"ghcr.io/capwright/charts/capwright:v0.1.0":    ghcrChart,
	})
	stdout, stderr, code = cliRun(t, "mirror", "--registry-config", config, "--target-plain-http", "--to", dst.Host+"/bundle", "--from-layout", bundle)
	if code != exitOK || !strings.Contains(stdout, "Mirrored 3 of 3 artifact(s)") || !strings.Contains(stdout, "images:    1 copied") {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, path := range []string{"capwright/capwright-manager", "capwright/capwright-manifests", "capwright/charts/capwright"} {
		mirrortest.Resolve(t, dst.Access(), artifact.Reference{Host: dst.Host, Repository: "bundle/" + path, Tag: "v0.1.0"})
	}
	// The image is an entry of its own: no entry claims "0 image(s)".
	if strings.Contains(stderr, "image(s)") {
		t.Errorf("a layout run counts images per entry:\n%s", stderr)
	}
}

func TestMirrorCommandReleaseExitCodes(t *testing.T) {
	src := registrytest.New(t, registrytest.Options{})
	manifests, chart, _ := publishedRelease(t, src, "ghcr.io")
	broken := src.Ref("broken/capwright-manifests", "v0.1.0")
	mirrortest.PushFluxArtifact(t, src.Access(), broken, map[string][]byte{"capwright.yaml": mirrortest.CapwrightManifests(src.Host + "/capwright/gone:v0.1.0")})
	badNames := t.TempDir()
	mirrortest.WriteLayout(t, badNames, src.Access(), map[string]artifact.Reference{"v0.1.0": chart, "ghcr.io/capwright/capwright-manifests:v0.1.0": manifests})
	dst := registrytest.New(t, registrytest.Options{})
	config := dockerConfig(t, "example.invalid", "nobody", "none")
	base := func(more ...string) []string {
		return append([]string{"mirror", "--plain-http", "--registry-config", config, "--to", dst.Host}, more...)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"layout and reference", base("--from-layout", badNames, urlOf(chart)), exitUsage, "--from-layout"},
		{"not a layout", base("--from-layout", t.TempDir()), exitUsage, "not an OCI image layout"},
		{"entry without a full reference", base("--from-layout", badNames), exitUsage, `named "v0.1.0", not a full reference`},
		{"image missing from the source", base(urlOf(broken)), exitNotFound, src.Host + "/capwright/gone:v0.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cliRun(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("exit code %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.want, stdout, stderr)
			}
			if n := dst.Writes(); code == exitUsage && n != 0 {
				t.Errorf("a refused run wrote %d times", n)
			}
		})
	}
	if _, err := (&artifact.Fetcher{}).Resolve(context.Background(), artifact.Reference{Host: dst.Host, Repository: broken.Repository, Tag: broken.Tag}, dst.Access()); err == nil {
		t.Errorf("%s has its tag at the target though its image is missing", broken)
	}
}
