package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
	"github.com/capwright/capwright/internal/providerrelease/releasetest"
)

// releasedProviders serves the real Cluster API core and control-plane
// releases, their images moved to a test registry that holds them, from a
// fake github.com, and the control-plane release once more from an HTTPS
// mirror of another project (https://mirror.example.com/capx). It returns
// the fake hosts and the release files they serve.
func releasedProviders(t *testing.T) (*releasetest.Hosts, map[string][]byte) {
	t.Helper()
	src := registrytest.New(t, registrytest.Options{})
	files := map[string][]byte{}
	for _, p := range mirrortest.CAPIProviders(t, clusterctltest.Current, src.Host) {
		for name, data := range p.Files {
			files[name] = data
		}
		for _, image := range p.Images(t) {
			mirrortest.PushImage(t, src.Access(), mirrortest.ImageReference(t, image), mirrortest.SmallImage(mirrortest.ImageSeed(image)))
		}
	}
	hosts := releasetest.New(t)
	hosts.GitHub("kubernetes-sigs", "cluster-api", clusterctltest.Current, files, "")
	hosts.Files("mirror.example.com", "/capx", clusterctltest.Current, files, nil)
	releaseTransport = hosts.Transport()
	t.Cleanup(func() { releaseTransport = nil })
	return hosts, files
}

// TestMirrorCommandProviders mirrors a catalog provider by name and a
// provider outside the catalog from a providers file with its release
// URL: each pushed as the artifact publish --from-release makes, with its
// images, and the rules send both to their copies.
func TestMirrorCommandProviders(t *testing.T) {
	noDockerCredentials(t)
	releasedProviders(t)
	dst := registrytest.New(t, registrytest.Options{})
	dir := t.TempDir()
	providersFile := filepath.Join(dir, "providers.txt")
	if err := os.WriteFile(providersFile, []byte("# Our own control plane, outside clusterctl's list\n\n"+
		"control-plane/example:"+clusterctltest.Current+" https://mirror.example.com/capx/latest/control-plane-components.yaml  # in-house\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "mirror-rules.txt")
	args := []string{"mirror", "--plain-http", "--to", dst.Host + "/site", "--rules-file", rulesFile,
		"--provider", "core/cluster-api:" + clusterctltest.Current, "--providers-file", providersFile}

	stdout, stderr, code := cliRun(t, args...)
	if code != exitOK {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	core := artifact.Reference{Host: dst.Host, Repository: "site/cluster-api/manifests/core-cluster-api", Tag: clusterctltest.Current}
	example := artifact.Reference{Host: dst.Host, Repository: "site/manifests/control-plane-example", Tag: clusterctltest.Current}
	for _, want := range []string{
		"Mirrored 2 of 2 artifact(s) to " + dst.Host + "/site", "artifacts: 2 copied", "images:    2 copied",
		"  core/cluster-api:v1.14.2 -> " + core.URL() + ":v1.14.2@sha256:",
		"(from the release https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/core-components.yaml)",
		"  control-plane/example:v1.14.2 -> " + example.URL() + ":v1.14.2@sha256:",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{
		"Fetched core-components.yaml sha256:", "(via https://release-assets.githubusercontent.com/",
		"Fetched control-plane-components.yaml sha256:", "from https://mirror.example.com/capx/v1.14.2/control-plane-components.yaml",
		"mirrored core/cluster-api:v1.14.2 to " + dst.Host + "/" + core.Repository,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stdout+stderr, "signed-secret") {
		t.Errorf("the output shows the signed download URL")
	}

	// The artifact is the one publish --from-release pushes.
	stdout, stderr, code = cliRun(t, "publish", "--plain-http", "--from-release", "core/cluster-api", "--version", clusterctltest.Current, "oci://"+dst.Host+"/published/core")
	m := digestRef.FindStringSubmatch(stdout)
	if code != exitOK || m == nil {
		t.Fatalf("publish: exit code %d\n%s%s", code, stdout, stderr)
	}
	if d := mirrortest.Resolve(t, dst.Access(), core); d.Digest.String() != m[3] {
		t.Errorf("mirror pushed %s as %s, publish --from-release as %s", core, d.Digest, m[3])
	}
	if _, err := (&artifact.Fetcher{}).Fetch(t.Context(), example, dst.Access()); err != nil {
		t.Errorf("the mirrored %s: %v", example, err)
	}

	rules, err := catalog.ReadMirrorFile(rulesFile)
	if err != nil {
		t.Fatalf("the rules file: %v", err)
	}
	if got, _ := rules.Rewrite("registry.k8s.io/cluster-api/manifests/core-cluster-api"); got != dst.Host+"/"+core.Repository {
		t.Errorf("the rules send Cluster API's core repository to %q, want %s", got, core.Repository)
	}
	if got, _ := rules.Provider("control-plane", "example"); got != dst.Host+"/"+example.Repository {
		t.Errorf("the rules send control-plane/example to %q, want %s", got, example.Repository)
	}

	// Again: nothing to copy.
	writes := dst.Writes()
	stdout, stderr, code = cliRun(t, args...)
	if code != exitOK || dst.Writes() != writes || !strings.Contains(stdout, "artifacts: 0 copied, 2 already present") {
		t.Errorf("second run: exit %d, %d writes\nstdout:\n%s\nstderr:\n%s", code, dst.Writes()-writes, stdout, stderr)
	}
}

// TestMirrorCommandProvidersFromReleaseMirror fetches a catalog provider's
// release through --release-mirror, never asking github.com.
func TestMirrorCommandProvidersFromReleaseMirror(t *testing.T) {
	noDockerCredentials(t)
	hosts, files := releasedProviders(t)
	hosts.Files("gitlab.example.com", "/gh/kubernetes-sigs/cluster-api/releases/download", clusterctltest.Current, files, nil)
	dst := registrytest.New(t, registrytest.Options{})
	stdout, stderr, code := cliRun(t, "mirror", "--plain-http", "--to", dst.Host, "--provider", "bootstrap/kubeadm:"+clusterctltest.Current,
		"--release-mirror", "github.com=https://gitlab.example.com/gh")
	if code != exitOK || !strings.Contains(stderr, "Fetched bootstrap-components.yaml sha256:") ||
		!strings.Contains(stderr, "from https://gitlab.example.com/gh/kubernetes-sigs/cluster-api/releases/download/v1.14.2/bootstrap-components.yaml\n") {
		t.Errorf("exit code %d, the release should come from the mirror\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	mirrortest.Resolve(t, dst.Access(), artifact.Reference{Host: dst.Host, Repository: "cluster-api/manifests/bootstrap-kubeadm", Tag: clusterctltest.Current})
	for _, req := range hosts.Requests() {
		if req.Host == "github.com" {
			t.Errorf("github.com was asked for %s despite --release-mirror", req.Path)
		}
	}
}

func TestMirrorCommandProvidersRefused(t *testing.T) {
	noDockerCredentials(t)
	releasedProviders(t)
	dst := registrytest.New(t, registrytest.Options{})
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	badLine := file("bad-line.txt", "# providers\ncore/cluster-api:v1.14.2\n\nbootstrap/kubeadm\n")
	badURL := file("bad-url.txt", "infrastructure/in-house:v1.0.0 ftp://example.com/x\n")
	twice := file("twice.txt", "control-plane/example:v1.14.2 https://mirror.example.com/capx/latest/control-plane-components.yaml\n"+
		"control-plane/example:v1.14.2 https://mirror.example.com/other/latest/control-plane-components.yaml\n")
	base := func(more ...string) []string {
		return append([]string{"mirror", "--plain-http", "--to", dst.Host}, more...)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown provider", base("--provider", "infrastructure/nope:v1.0.0"), exitUsage, []string{
			`--provider infrastructure/nope:v1.0.0: clusterctl v1.14.2 knows no infrastructure provider "nope" (it knows aws, azure, byoh,`,
			"give its release URL after it in --providers-file: infrastructure/nope:v1.0.0 https://github.com/{owner}/{repo}/releases/latest/infrastructure-components.yaml"}},
		{"missing version", base("--provider", "infrastructure/aws"), exitUsage, []string{
			`--provider infrastructure/aws: "infrastructure/aws" has no version: want TYPE/NAME:VERSION, e.g. infrastructure/aws:v2.13.0`}},
		{"empty version", base("--provider", "infrastructure/aws:"), exitUsage, []string{`"infrastructure/aws:" has no version`}},
		{"latest", base("--provider", "infrastructure/aws:latest"), exitUsage, []string{
			`--provider infrastructure/aws:latest: version "latest" is not a release of https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml; set the VERSION of TYPE/NAME:VERSION to a release tag`}},
		{"not a type", base("--provider", "cloud/aws:v2.13.0"), exitUsage, []string{`--provider cloud/aws:v2.13.0: "cloud" is not a provider type; use one of core, bootstrap,`}},
		{"not TYPE/NAME", base("--provider", "aws:v2.13.0"), exitUsage, []string{`--provider aws:v2.13.0: "aws:v2.13.0": want TYPE/NAME:VERSION`}},
		{"URL on the flag", base("--provider", "infrastructure/x:v1.0.0 https://example.com/x"), exitUsage, []string{"goes after it in --providers-file"}},
		{"bad line in the file", base("--providers-file", badLine), exitUsage, []string{
			"--providers-file " + badLine + `:4: "bootstrap/kubeadm" has no version`}},
		{"bad URL in the file", base("--providers-file", badURL), exitUsage, []string{"--providers-file " + badURL + ":1: ", "ftp://example.com/x"}},
		{"twice with different URLs", base("--providers-file", twice), exitUsage, []string{
			"--providers-file " + twice + ":2: control-plane/example:v1.14.2 is given twice, from https://mirror.example.com/capx/latest/control-plane-components.yaml and from https://mirror.example.com/other/latest/control-plane-components.yaml"}},
		{"missing file", base("--providers-file", filepath.Join(dir, "none.txt")), exitUsage, []string{"--providers-file: open "}},
		{"with --from-layout", base("--from-layout", dir, "--provider", "core/cluster-api:v1.14.2"), exitUsage, []string{"--from-layout copies an OCI image layout: give no references, --from-file, --provider"}},
		{"a provider rule as --release-mirror", base("--provider", "core/cluster-api:v1.14.2", "--release-mirror", "core/cluster-api=mirror.example.com/x"), exitUsage, []string{
			"--release-mirror core/cluster-api=mirror.example.com/x: a rule for a provider (TYPE/NAME) rewrites no release URL"}},
		{"never released", base("--provider", "core/cluster-api:v1.14.2", "--provider", "core/cluster-api:v1.14.99"), exitNotFound, []string{
			"core/cluster-api:v1.14.99 (nothing was copied): version v1.14.99 was never released at https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.99/metadata.yaml (HTTP 404 Not Found); check the VERSION of TYPE/NAME:VERSION against the project's releases"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cliRun(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if n := dst.Writes(); n != 0 {
				t.Errorf("a refused run wrote %d times", n)
			}
		})
	}
}
