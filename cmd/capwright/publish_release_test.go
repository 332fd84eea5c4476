package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/providerrelease/releasetest"
)

const releaseToken = "ghp_cli-test-token-never-shown"

// fakeGitHub serves the real Cluster API release of the current version as
// github.com does and points the CLI's release requests at it.
func fakeGitHub(t *testing.T, token string) *releasetest.Hosts {
	t.Helper()
	hosts := releasetest.New(t)
	files := capiRelease(t, "core")
	for name, data := range capiRelease(t, "control-plane") {
		files[name] = data
	}
	hosts.GitHub("kubernetes-sigs", "cluster-api", clusterctltest.Current, files, token)
	releaseTransport = hosts.Transport()
	t.Cleanup(func() { releaseTransport = nil })
	return hosts
}

// TestPublishFromReleaseIsThePublishOfItsFiles publishes clusterctl's
// well-known core provider by TYPE/NAME from a fake github.com, with a
// token from the environment, and the same files from a directory: same
// digest.
func TestPublishFromReleaseIsThePublishOfItsFiles(t *testing.T) {
	noDockerCredentials(t)
	hosts := fakeGitHub(t, releaseToken)
	t.Setenv("TEST_GITHUB_TOKEN", releaseToken)
	reg := registrytest.New(t, registrytest.Options{})
	repo := "oci://" + reg.Host + "/capi/manifests/core-cluster-api"

	stdout, stderr, code := cliRun(t, "publish", "--plain-http", "--from-release", "core/cluster-api", "--version", clusterctltest.Current,
		"--release-token-env", "TEST_GITHUB_TOKEN", repo)
	if code != exitOK {
		t.Fatalf("publish --from-release: exit code %d\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, releaseToken) || strings.Contains(stdout+stderr, "signed-secret") {
		t.Errorf("the output shows the token or the signed download URL:\n%s%s", stdout, stderr)
	}
	for _, want := range []string{
		"Fetched metadata.yaml sha256:", "from https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/metadata.yaml (via https://release-assets.githubusercontent.com/",
		"Fetched core-components.yaml sha256:", "Published core provider cluster-api v1.14.2 (contract v1beta2)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	m := digestRef.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("stdout %q is not a digest reference", stdout)
	}
	for _, req := range hosts.Requests() {
		if req.Host != "github.com" && req.Authorization != "" {
			t.Errorf("the token went to %s", req.Host)
		}
	}

	// The same files from a directory, with the source --from-release
	// defaults to: the same artifact.
	dir := releaseDir(t, capiRelease(t, "core"))
	stdout2, stderr, code := cliRun(t, "publish", "--plain-http", dir, "--type", "core", "--name", "cluster-api", "--version", clusterctltest.Current,
		"--source", "https://github.com/kubernetes-sigs/cluster-api", "oci://"+reg.Host+"/other/core-cluster-api")
	if code != exitOK {
		t.Fatalf("publish DIR: exit code %d\n%s", code, stderr)
	}
	if m2 := digestRef.FindStringSubmatch(stdout2); m2 == nil || m2[3] != m[3] {
		t.Errorf("publishing the files from a directory gives %q, --from-release gave %s", stdout2, m[3])
	}
}

// TestPublishFromReleaseURL fetches from a plain HTTPS mirror by URL, with
// its CA, into an OCI layout; the type and name come from flags.
func TestPublishFromReleaseURL(t *testing.T) {
	hosts := releasetest.New(t)
	hosts.Files("127.0.0.1", "/capi/control-plane-kubeadm", clusterctltest.Current, capiRelease(t, "control-plane"), nil)
	base := "https://" + hosts.OriginHost() + "/capi/control-plane-kubeadm"
	layout := filepath.Join(t.TempDir(), "layout")
	stdout, stderr, code := cliRun(t, "publish", "--from-release", base+"/latest/control-plane-components.yaml", "--name", "kubeadm",
		"--version", clusterctltest.Current, "--release-ca-file", hosts.CAFile(t), "--output", layout)
	if code != exitOK {
		t.Fatalf("exit code %d\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, layout+":v1.14.2@sha256:") || !strings.Contains(stderr, "Wrote control-plane provider kubeadm v1.14.2") {
		t.Errorf("stdout %q\nstderr:\n%s", stdout, stderr)
	}
	// The source annotation defaults to the base URL.
	stdout, stderr, code = cliRun(t, "inspect", "-o", "json", "--layout", layout)
	if code != exitOK || !strings.Contains(stdout, `"source": "`+base+`"`) {
		t.Errorf("inspect: exit code %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestPublishFromReleaseRefuses(t *testing.T) {
	noDockerCredentials(t)
	t.Setenv("EMPTY_TOKEN", "")
	t.Setenv("WRONG_TOKEN", "ghp_wrong-token-never-shown")
	hosts := fakeGitHub(t, releaseToken)
	mirror := "https://" + hosts.DownloadHost() + "/capi/core"
	// A mirror that redirects to the other server: another host:port.
	hosts.Handle(hosts.OriginHost(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/moved/") {
			http.Redirect(w, r, "https://"+hosts.DownloadHost()+"/capi/core/"+strings.TrimPrefix(r.URL.Path, "/moved/"), http.StatusFound)
			return
		}
		http.NotFound(w, r)
	}))
	hosts.Files(hosts.DownloadHost(), "/capi/core", clusterctltest.Current, capiRelease(t, "core"), nil)
	out := "--output=" + t.TempDir()
	ca := "--release-ca-file=" + hosts.CAFile(t)

	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown provider", []string{"--from-release", "infrastructure/nope", "--version", "v1.0.0", out}, exitUsage,
			[]string{"--from-release infrastructure/nope: clusterctl v1.14.2 knows no infrastructure provider \"nope\" (it knows aws, azure,", "give the provider's release URL instead"}},
		{"not TYPE/NAME", []string{"--from-release", "aws", "--version", "v1.0.0", out}, exitUsage,
			[]string{`--from-release "aws": give TYPE/NAME of a provider clusterctl knows (e.g. infrastructure/aws), or a release URL`}},
		{"contradicting --type", []string{"--from-release", "core/cluster-api", "--type", "bootstrap", "--version", "v1.14.2", out}, exitUsage,
			[]string{"--type bootstrap contradicts --from-release core/cluster-api: drop --type"}},
		{"latest", []string{"--from-release", "core/cluster-api", "--version", "latest", out}, exitUsage,
			[]string{`version "latest" is not a release of https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml; set --version to a release tag, e.g. v1.14.2`}},
		{"never released", []string{"--from-release", "core/cluster-api", "--version", "v1.14.99", "--release-token-env", "TOKEN_SET_BELOW", out}, exitNotFound,
			[]string{"version v1.14.99 was never released at https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.99/metadata.yaml (HTTP 404 Not Found), or the host does not accept the credentials sent (a bearer token)",
				"check the credentials in --release-token-env (or --release-username and --release-password-env) and that they may read this project's releases, and --version against the project's releases at https://github.com/kubernetes-sigs/cluster-api/releases"}},
		{"bad token", []string{"--from-release", "core/cluster-api", "--version", "v1.14.2", "--release-token-env", "WRONG_TOKEN", out}, exitAuth,
			[]string{"answered HTTP 401 Unauthorized: the host refused the credentials sent (a bearer token); check the credentials in --release-token-env"}},
		{"no token", []string{"--from-release", "core/cluster-api", "--version", "v1.14.2", out}, exitAuth,
			[]string{"the host requires credentials; give a token or basic auth with --release-token-env"}},
		{"empty token variable", []string{"--from-release", "core/cluster-api", "--version", "v1.14.2", "--release-token-env", "EMPTY_TOKEN", out}, exitUsage,
			[]string{"--release-token-env EMPTY_TOKEN: the environment variable EMPTY_TOKEN is empty or unset"}},
		{"files and --from-release", []string{"--from-release", "core/cluster-api", "--version", "v1.14.2", "./somewhere", out}, exitUsage,
			[]string{"give either release files (./somewhere) or --from-release, not both"}},
		{"plain HTTP", []string{"--from-release", "http://127.0.0.1:1/capi/core", "--type", "core", "--name", "cluster-api", "--version", "v1.14.2", out}, exitUsage,
			[]string{"release URL http://127.0.0.1:1/capi/core is plain HTTP; use https://, or allow plain HTTP explicitly with --release-plain-http"}},
		{"no name for an unknown URL", []string{"--from-release", mirror + "/latest/core-components.yaml", "--version", "v1.14.2", ca, out}, exitUsage,
			[]string{"--name is required: " + mirror + "/latest/core-components.yaml is not in clusterctl's list of well-known providers"}},
		{"unknown CA", []string{"--from-release", mirror, "--type", "core", "--name", "cluster-api", "--version", "v1.14.2", out}, exitNetwork,
			[]string{"fetching " + mirror + "/v1.14.2/metadata.yaml: ", "trust the host's certificate authority with --release-ca-file"}},
		{"redirect to another host", []string{"--from-release", "https://" + hosts.OriginHost() + "/moved", "--type", "core", "--name", "cluster-api", "--version", "v1.14.2", ca, out}, exitUsage,
			[]string{"redirects to https://" + hosts.DownloadHost() + "/capi/core/v1.14.2/metadata.yaml, a host the redirect rules do not allow; if " + hosts.DownloadHost() + " is the project's download host, allow it with --release-redirect-host"}},
		{"over the size bound", []string{"--from-release", mirror, "--type", "core", "--name", "cluster-api", "--version", "v1.14.2", ca, "--max-artifact-size", "100Ki", out}, exitUsage,
			[]string{mirror + "/v1.14.2/core-components.yaml does not fit the size limit of 102400 bytes", "raise --max-artifact-size"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "never released" {
				t.Setenv("TOKEN_SET_BELOW", releaseToken)
			}
			if strings.Contains(strings.Join(tc.args, " "), "127.0.0.1:") {
				// The mirror is dialled for real, with the flags' CA.
				releaseTransport = nil
				t.Cleanup(func() { releaseTransport = hosts.Transport() })
			}
			stdout, stderr, code := cliRun(t, append([]string{"publish"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\n%s", code, tc.code, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if stdout != "" || strings.Contains(stderr, releaseToken) || strings.Contains(stderr, "never-shown") {
				t.Errorf("stdout %q; stderr shows a token:\n%s", stdout, stderr)
			}
		})
	}

	// The redirect, allowed: published.
	releaseTransport = nil
	stdout, stderr, code := cliRun(t, "publish", "--from-release", "https://"+hosts.OriginHost()+"/moved", "--type", "core", "--name", "cluster-api",
		"--version", "v1.14.2", ca, "--release-redirect-host", hosts.DownloadHost(), out)
	if code != exitOK || !strings.Contains(stderr, "(via https://"+hosts.DownloadHost()+"/capi/core/v1.14.2/metadata.yaml)") {
		t.Errorf("allowed redirect: exit code %d\n%s%s", code, stdout, stderr)
	}
}
