package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
)

// tarGzipEntries builds a layer holding the given tar entries as they
// are, unsafe ones included.
func tarGzipEntries(t *testing.T, entries map[string]*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for data, hdr := range entries {
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(data))
		}
		hdr.Mode = 0o644
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestInspectExitCodes(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{TLS: true, Username: testUser, Password: testPassword})
	ca := caFile(t, reg)
	ctx := context.Background()
	files := capiRelease(t, "core")
	good := reg.Ref("capi/manifests/core-cluster-api", "v1.14.2")
	if _, err := artifact.Push(ctx, good, files, artifact.ProviderAnnotations("core", "cluster-api", "v1.14.2", ""), reg.Access()); err != nil {
		t.Fatal(err)
	}
	goodURL := good.URL() + ":" + good.Tag

	// The one-file-per-layer layout of cluster-api-operator's publish.
	perFile := reg.Ref("operator/core-cluster-api", "v1.14.2")
	var layers []rawLayer
	for _, name := range []string{"metadata.yaml", "core-components.yaml"} {
		layers = append(layers, rawLayer{mediaType: "application/vnd.test.file", data: files[name], annotations: map[string]string{"org.opencontainers.image.title": name}})
	}
	pushRawArtifact(t, reg, perFile, layers, nil)

	// A tarball escaping the extraction root.
	unsafe := reg.Ref("evil/core-cluster-api", "v1.14.2")
	pushRawArtifact(t, reg, unsafe, []rawLayer{{mediaType: artifact.MediaTypeLayer, data: tarGzipEntries(t, map[string]*tar.Header{
		"kind: Metadata\n": {Typeflag: tar.TypeReg, Name: "metadata.yaml"},
		"owned\n":          {Typeflag: tar.TypeReg, Name: "../../etc/cron.d/x"},
	})}}, nil)
	withLink := reg.Ref("link/core-cluster-api", "v1.14.2")
	pushRawArtifact(t, reg, withLink, []rawLayer{{mediaType: artifact.MediaTypeLayer, data: tarGzipEntries(t, map[string]*tar.Header{
		"": {Typeflag: tar.TypeSymlink, Name: "core-components.yaml", Linkname: "/etc/passwd"},
	})}}, nil)

	// A tarball without the provider files.
	notProvider := reg.Ref("other/thing", "v1.0.0")
	pushRawArtifact(t, reg, notProvider, []rawLayer{{mediaType: artifact.MediaTypeLayer, data: tarGzipEntries(t, map[string]*tar.Header{
		"hello\n": {Typeflag: tar.TypeReg, Name: "README.md"},
	})}}, nil)

	notLayout := t.TempDir()
	tests := []struct {
		name     string
		password string
		args     []string
		code     int
		want     []string
	}{
		{"with the CA", testPassword, []string{"--ca-file", ca, goodURL}, exitOK, []string{"Provider:  core cluster-api v1.14.2"}},
		{"tag not found", testPassword, []string{"--ca-file", ca, good.URL() + ":v9.9.9"}, exitNotFound, []string{"not found", "tag = version"}},
		{"repository not found", testPassword, []string{"--ca-file", ca, "oci://" + reg.Host + "/nothing/here:v1.0.0"}, exitNotFound, []string{"not found"}},
		{"wrong password", "wrong-" + testPassword, []string{"--ca-file", ca, goodURL}, exitAuth, []string{"registry refused access", "HTTP 401", "docker login, or --registry-config"}},
		{"no credentials", "", []string{"--ca-file", ca, goodURL}, exitAuth, []string{"requires credentials"}},
		{"TLS without the CA", testPassword, []string{goodURL}, exitNetwork, []string{"certificate signed by unknown authority", "--ca-file"}},
		{"TLS without verification", testPassword, []string{"--insecure", goodURL}, exitOK, []string{"Digest:"}},
		{"plain HTTP to a TLS registry", testPassword, []string{"--plain-http", goodURL}, exitNetwork, []string{"speaks TLS (https)", "drop --plain-http"}},
		{"one file per layer", testPassword, []string{"--ca-file", ca, perFile.URL() + ":v1.14.2"}, exitContract,
			[]string{"is not a Cluster API provider artifact", "2 layers", "capwright mirror --repack"}},
		{"not a provider", testPassword, []string{"--ca-file", ca, notProvider.URL() + ":v1.0.0"}, exitContract,
			[]string{"holds no {type}-components.yaml; it holds README.md"}},
		{"too large", testPassword, []string{"--ca-file", ca, "--max-artifact-size", "16Ki", goodURL}, exitContract,
			[]string{"exceeds the limit of 16384 bytes", "raise the artifact size limit"}},
		{"unsafe tar entry", testPassword, []string{"--ca-file", ca, unsafe.URL() + ":v1.14.2"}, exitContract,
			[]string{`"../../etc/cron.d/x"`, "leaves the archive root"}},
		{"symlink tar entry", testPassword, []string{"--ca-file", ca, withLink.URL() + ":v1.14.2"}, exitContract, []string{"symlink"}},
		{"no tag", testPassword, []string{"--ca-file", ca, good.URL()}, exitUsage, []string{"give the artifact's tag"}},
		{"two references", testPassword, []string{goodURL, goodURL}, exitUsage, []string{"give one artifact reference"}},
		{"bad output format", testPassword, []string{"-o", "xml", goodURL}, exitUsage, []string{`-o "xml"`}},
		{"bad size", testPassword, []string{"--max-artifact-size", "-1", goodURL}, exitUsage, []string{"--max-artifact-size"}},
		{"not a layout", testPassword, []string{"--layout", notLayout}, exitUsage, []string{"not an OCI image layout"}},
		{"missing CA file", testPassword, []string{"--ca-file", filepath.Join(notLayout, "none.pem"), goodURL}, exitUsage, []string{"--ca-file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.password == "" {
				noDockerCredentials(t)
			} else {
				dockerConfigDir(t, reg.Host, testUser, tt.password)
			}
			stdout, stderr, code := cliRun(t, append([]string{"inspect"}, tt.args...)...)
			assertNoSecret(t, stdout, stderr)
			if strings.Contains(stderr, "secretRef") {
				t.Errorf("the CLI's advice mentions the controller's secretRef:\n%s", stderr)
			}
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(stdout+stderr, want) {
					t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
				}
			}
		})
	}
}

func TestInspectLayoutErrors(t *testing.T) {
	noDockerCredentials(t)
	layout := t.TempDir()
	core := releaseDir(t, capiRelease(t, "core"))
	for _, version := range []string{"v1.14.2", "v1.14.1"} {
		if _, stderr, code := cliRun(t, "publish", core, "--type", "core", "--name", "cluster-api", "--version", version, "--output", layout); code != exitOK {
			t.Fatalf("publish: %s", stderr)
		}
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"several tags", nil, exitUsage, "holds several tags (v1.14.1, v1.14.2): say which artifact to read: add the tag, e.g. capwright inspect --layout"},
		{"missing tag", []string{"v1.0.0"}, exitNotFound, ":v1.0.0 not found: the OCI image layout " + layout + " holds tags v1.14.1, v1.14.2"},
		{"one tag", []string{"v1.14.1"}, exitOK, "Provider:  core cluster-api v1.14.1"},
		{"two arguments", []string{"v1.14.1", "v1.14.2"}, exitUsage, "at most one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cliRun(t, append([]string{"inspect", "--layout", layout}, tt.args...)...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("exit code %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.want, stdout, stderr)
			}
		})
	}
}
