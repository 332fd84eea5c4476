package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

var digestRef = regexp.MustCompile(`^oci://(\S+):(v[0-9.]+)@(sha256:[0-9a-f]{64})\n$`)

// TestPublishInspectRoundTrip publishes the real Cluster API providers to
// a TLS registry with basic auth, with credentials from a docker config,
// and inspects them back.
func TestPublishInspectRoundTrip(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{TLS: true, Username: testUser, Password: testPassword})
	dockerConfigDir(t, reg.Host, testUser, testPassword)
	ca := caFile(t, reg)

	providers := []struct{ providerType, name string }{{"core", "cluster-api"}, {"bootstrap", "kubeadm"}, {"control-plane", "kubeadm"}}
	for _, p := range providers {
		t.Run(p.providerType, func(t *testing.T) {
			files := capiRelease(t, p.providerType)
			dir := releaseDir(t, files)
			repo := "oci://" + reg.Host + "/capi/manifests/" + p.providerType + "-" + p.name
			stdout, stderr, code := cliRun(t, "publish", "--ca-file", ca, dir,
				"--type", p.providerType, "--name", p.name, "--version", clusterctltest.Current,
				"--source", "https://github.com/kubernetes-sigs/cluster-api",
				"--annotation", "org.opencontainers.image.licenses=Apache-2.0", repo)
			assertNoSecret(t, stdout, stderr)
			if code != exitOK {
				t.Fatalf("publish: exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			m := digestRef.FindStringSubmatch(stdout)
			if m == nil || "oci://"+m[1] != repo || m[2] != clusterctltest.Current {
				t.Fatalf("stdout %q is not the digest reference of %s", stdout, repo)
			}
			if !strings.Contains(stderr, "Published "+p.providerType+" provider "+p.name+" v1.14.2 (contract v1beta2)") || strings.Contains(stderr, "Note:") {
				t.Errorf("stderr:\n%s", stderr)
			}

			// Inspect by the printed digest reference, as JSON.
			stdout, stderr, code = cliRun(t, "inspect", "--ca-file", ca, "-o", "json", strings.TrimSpace(stdout))
			assertNoSecret(t, stdout, stderr)
			if code != exitOK {
				t.Fatalf("inspect: exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var report artifact.ArtifactReport
			if err := json.Unmarshal([]byte(stdout), &report); err != nil {
				t.Fatalf("inspect -o json: %v\n%s", err, stdout)
			}
			wantProvider := artifact.ReportProvider{Type: p.providerType, Name: p.name, Version: clusterctltest.Current, Source: "https://github.com/kubernetes-sigs/cluster-api"}
			if report.Digest != m[3] || report.Provider != wantProvider || report.Contract != "v1beta2" ||
				report.Annotations["org.opencontainers.image.licenses"] != "Apache-2.0" {
				t.Errorf("report digest %s provider %+v contract %q annotations %v", report.Digest, report.Provider, report.Contract, report.Annotations)
			}
			var names []string
			for _, f := range report.Files {
				names = append(names, f.Name)
				if f.Size != int64(len(files[f.Name])) {
					t.Errorf("file %s: size %d, want %d", f.Name, f.Size, len(files[f.Name]))
				}
			}
			if !slices.Equal(names, slices.Sorted(maps.Keys(files))) {
				t.Errorf("files %v", names)
			}
			components := files[clusterctl.ComponentsFile(p.providerType)]
			images, err := clusterctl.Images(components)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(report.Images, images) || len(images) == 0 {
				t.Errorf("images %v, want %v", report.Images, images)
			}
			vars, err := clusterctl.ParseVariables(components)
			if err != nil {
				t.Fatal(err)
			}
			if len(report.Variables) != len(vars) {
				t.Errorf("%d variables, want %d", len(report.Variables), len(vars))
			}
			kinds, err := clusterctl.CRDKinds(components)
			if err != nil {
				t.Fatal(err)
			}
			if len(report.CRDs) != len(kinds) {
				t.Errorf("%d CRDs, want %d", len(report.CRDs), len(kinds))
			}
			if p.providerType != "core" {
				// Provider CRDs declare the contracts they implement.
				for _, crd := range report.CRDs {
					if !slices.Equal(crd.Contracts["v1beta2"], []string{"v1beta2"}) {
						t.Errorf("CRD %s: contracts %v", crd.Name, crd.Contracts)
					}
				}
			}

			// The table, by tag.
			stdout, stderr, code = cliRun(t, "inspect", "--ca-file", ca, repo+":"+clusterctltest.Current)
			if code != exitOK {
				t.Fatalf("inspect: exit code %d\n%s", code, stderr)
			}
			for _, want := range []string{"Digest:    " + m[3], "Contract:  v1beta2", "Files: 2", "v1.14   v1beta2   <- v1.14.2",
				"Images: 1", images[0], "CAPI_DIAGNOSTICS_ADDRESS", ":8443"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("the table lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// TestPublishIsReproducible publishes the same release from files in
// another order, with other times and modes, to another repository: the
// digest is the same.
func TestPublishIsReproducible(t *testing.T) {
	noDockerCredentials(t)
	reg := registrytest.New(t, registrytest.Options{})
	files := capiRelease(t, "core")
	files["cluster-template.yaml"] = []byte("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: ${CLUSTER_NAME}\n")
	a, b := releaseDir(t, files), releaseDir(t, files)
	old := time.Date(2019, 5, 1, 12, 0, 0, 0, time.UTC)
	for name := range files {
		if err := os.Chtimes(filepath.Join(b, name), old, old); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(b, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"--plain-http", "--type", "core", "--name", "cluster-api", "--version", "v1.14.2"}
	runs := [][]string{
		{a, "oci://" + reg.Host + "/one/core-cluster-api"},
		{filepath.Join(b, "metadata.yaml"), filepath.Join(b, "cluster-template.yaml"), filepath.Join(b, "core-components.yaml"), "oci://" + reg.Host + "/two/core-cluster-api"},
		{"oci://" + reg.Host + "/one/core-cluster-api", filepath.Join(b, "core-components.yaml"), filepath.Join(a, "cluster-template.yaml"), filepath.Join(b, "metadata.yaml")},
	}
	var digests []string
	for _, args := range runs {
		stdout, stderr, code := cliRun(t, append(append([]string{"publish"}, args...), flags...)...)
		m := digestRef.FindStringSubmatch(stdout)
		if code != exitOK || m == nil {
			t.Fatalf("publish %v: exit code %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
		digests = append(digests, m[3])
	}
	if digests[0] != digests[1] || digests[1] != digests[2] {
		t.Errorf("the same release gave digests %v", digests)
	}

	// The OCI image layout holds the very same artifact.
	layout := filepath.Join(t.TempDir(), "layout")
	stdout, stderr, code := cliRun(t, append([]string{"publish", a, "--output", layout}, flags...)...)
	if want := layout + ":v1.14.2@" + digests[0] + "\n"; code != exitOK || stdout != want {
		t.Errorf("publish --output: exit code %d, stdout %q, want %q\nstderr:\n%s", code, stdout, want, stderr)
	}
}

func TestPublishLayoutThenInspect(t *testing.T) {
	noDockerCredentials(t)
	layout := filepath.Join(t.TempDir(), "layout")
	dir := releaseDir(t, capiRelease(t, "bootstrap"))
	stdout, stderr, code := cliRun(t, "publish", dir, "--type", "bootstrap", "--name", "kubeadm", "--version", "v1.14.2", "--output", layout)
	if code != exitOK {
		t.Fatalf("publish --output: exit code %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "into the OCI image layout "+layout) {
		t.Errorf("stderr:\n%s", stderr)
	}
	for _, name := range []string{"oci-layout", "index.json", "blobs/sha256"} {
		if _, err := os.Stat(filepath.Join(layout, name)); err != nil {
			t.Errorf("the layout lacks %s: %v", name, err)
		}
	}
	digest := strings.TrimSpace(stdout[strings.Index(stdout, "@")+1:])

	for _, args := range [][]string{{}, {"v1.14.2"}, {digest}} {
		stdout, stderr, code = cliRun(t, append([]string{"inspect", "-o", "yaml", "--layout", layout}, args...)...)
		if code != exitOK {
			t.Fatalf("inspect --layout %v: exit code %d\n%s", args, code, stderr)
		}
		var report map[string]any
		if err := yaml.Unmarshal([]byte(stdout), &report); err != nil {
			t.Fatalf("inspect -o yaml: %v", err)
		}
		// The field names scripts rely on.
		for _, field := range []string{"artifact", "digest", "provider", "contract", "annotations", "files", "componentsFile", "releaseSeries", "variables", "images", "crds"} {
			if _, ok := report[field]; !ok {
				t.Errorf("inspect -o yaml lacks field %s:\n%s", field, stdout)
			}
		}
		if report["digest"] != digest || report["contract"] != "v1beta2" {
			t.Errorf("digest %v contract %v", report["digest"], report["contract"])
		}
	}
}

func TestPublishRefuses(t *testing.T) {
	noDockerCredentials(t)
	reg := registrytest.New(t, registrytest.Options{})
	repo := "oci://" + reg.Host + "/capi/manifests/core-cluster-api"
	good := releaseDir(t, capiRelease(t, "core"))
	withDir := releaseDir(t, capiRelease(t, "core"))
	if err := os.Mkdir(filepath.Join(withDir, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	withLink := releaseDir(t, capiRelease(t, "core"))
	if err := os.Symlink("/etc/passwd", filepath.Join(withLink, "cluster-template.yaml")); err != nil {
		t.Fatal(err)
	}
	onlyMetadata := filepath.Join(good, "metadata.yaml")
	flags := func(version string, more ...string) []string {
		return append([]string{"--plain-http", "--type", "core", "--name", "cluster-api", "--version", version}, more...)
	}

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"invalid version", append([]string{good, repo}, flags("1.14")...), []string{`version "1.14" (--version) is not a release version`, "vMAJOR.MINOR.PATCH"}},
		{"version outside the release series", append([]string{good, repo}, flags("v1.99.0")...), []string{"no release series for version v1.99.0", "add a release series"}},
		{"missing components file", append([]string{onlyMetadata, repo}, flags("v1.14.2")...), []string{"core-components.yaml is missing", "the files given are metadata.yaml"}},
		{"wrong type for the files", []string{good, repo, "--plain-http", "--type", "infrastructure", "--name", "docker", "--version", "v1.14.2"},
			[]string{"infrastructure-components.yaml is missing", "core-components.yaml is the components file of a provider of type core"}},
		{"contradicting annotation", append([]string{good, repo, "--annotation", "cluster-api.sigs.k8s.io/provider-name=kubeadm"}, flags("v1.14.2")...),
			[]string{"contradicts --name (cluster-api)", "drop --annotation cluster-api.sigs.k8s.io/provider-name"}},
		{"contradicting version annotation", append([]string{good, repo, "--annotation", "org.opencontainers.image.version=v1.0.0"}, flags("v1.14.2")...),
			[]string{"contradicts --version (v1.14.2)"}},
		{"annotation without value", append([]string{good, repo, "--annotation", "novalue"}, flags("v1.14.2")...), []string{`--annotation "novalue": give key=value`}},
		{"subdirectory", append([]string{withDir, repo}, flags("v1.14.2")...), []string{"old/ (a directory)"}},
		{"symlink", append([]string{withLink, repo}, flags("v1.14.2")...), []string{"cluster-template.yaml (a symlink)"}},
		{"no repository", append([]string{good}, flags("v1.14.2")...), []string{"no repository given", "--output DIR"}},
		{"repository and --output", append([]string{good, repo, "--output", t.TempDir()}, flags("v1.14.2")...), []string{"not both"}},
		{"repository with another tag", append([]string{good, repo + ":v1.0.0"}, flags("v1.14.2")...), []string{"without a tag: the tag is the version"}},
		{"repository with a digest", append([]string{good, repo + "@sha256:" + strings.Repeat("0", 64)}, flags("v1.14.2")...), []string{"without a digest"}},
		{"no files", append([]string{repo}, flags("v1.14.2")...), []string{"no release files given"}},
		{"no --name", []string{good, repo, "--type", "core", "--version", "v1.14.2"}, []string{"--name is required"}},
		{"bad size", append([]string{good, repo, "--max-artifact-size", "big"}, flags("v1.14.2")...), []string{"--max-artifact-size"}},
		{"over the size limit", append([]string{good, repo, "--max-artifact-size", "100Ki"}, flags("v1.14.2")...), []string{"more than the artifact size limit"}},
		{"unknown flag", append([]string{good, repo, "--tpye", "core"}, flags("v1.14.2")...), []string{"unknown flag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cliRun(t, append([]string{"publish"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
	if reg.Writes() != 0 {
		t.Errorf("refused publishes wrote %d times to the registry", reg.Writes())
	}
}

func TestPublishRegistryErrors(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{TLS: true, Username: testUser, Password: testPassword})
	ca := caFile(t, reg)
	dir := releaseDir(t, capiRelease(t, "core"))
	args := func(more ...string) []string {
		return append([]string{"publish", dir, "--type", "core", "--name", "cluster-api", "--version", "v1.14.2",
			"oci://" + reg.Host + "/capi/manifests/core-cluster-api"}, more...)
	}
	tests := []struct {
		name     string
		password string
		args     []string
		code     int
		want     string
	}{
		{"wrong password", "not-" + testPassword, args("--ca-file", ca), exitAuth, "registry refused access"},
		{"no credentials", "", args("--ca-file", ca), exitAuth, "requires credentials"},
		{"TLS without the CA", testPassword, args(), exitNetwork, "certificate"},
		{"with the CA", testPassword, args("--ca-file", ca), exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.password == "" {
				noDockerCredentials(t)
			} else {
				dockerConfigDir(t, reg.Host, testUser, tt.password)
			}
			stdout, stderr, code := cliRun(t, tt.args...)
			assertNoSecret(t, stdout, stderr)
			if strings.Contains(stdout+stderr, tt.password) && tt.password != "" {
				t.Errorf("the output shows the password given")
			}
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit code %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.want, stdout, stderr)
			}
		})
	}
}

// A registry without TLS reached over HTTPS (the default): the error says
// which flag talks to it, as the stranger on the local plane needs.
func TestPublishToAPlainHTTPRegistryNamesTheFlag(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	dir := releaseDir(t, capiRelease(t, "core"))
	noDockerCredentials(t)
	args := []string{"publish", dir, "--type", "core", "--name", "cluster-api", "--version", "v1.14.2",
		"oci://" + reg.Host + "/capi/manifests/core-cluster-api"}
	_, stderr, code := cliRun(t, args...)
	if code != exitNetwork || !strings.Contains(stderr, "server gave HTTP response to HTTPS client") ||
		!strings.Contains(stderr, "the registry speaks plain HTTP, without TLS: pass --plain-http") {
		t.Errorf("exit code %d, want %d with the --plain-http hint\nstderr:\n%s", code, exitNetwork, stderr)
	}
	if _, stderr, code := cliRun(t, append(args, "--plain-http")...); code != exitOK {
		t.Errorf("with --plain-http: exit code %d\nstderr:\n%s", code, stderr)
	}
}
