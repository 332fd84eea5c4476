package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// Test credentials of the registries that require basic auth; outputs must
// never show the password.
const (
	testUser     = "publisher"
	testPassword = "pa55-w0rd-never-shown"
)

// TestMain gives the package's runs of the CLI a cache directory of their
// own (capwright mirror keeps one), not the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "capwright-cli-test-cache-")
	if err != nil {
		panic(err)
	}
	if err := os.Setenv("XDG_CACHE_HOME", dir); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// cliRun runs capwright in-process with args, as main does, and returns
// what it printed and its exit code.
func cliRun(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}

// noDockerCredentials points the docker credential chain at an empty
// directory, so that the machine's own credentials play no part.
func noDockerCredentials(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
}

// dockerConfigDir writes a docker config.json holding user:password for
// host in a new directory, as `docker login` does, and points
// DOCKER_CONFIG at it.
func dockerConfigDir(t *testing.T, host, user, password string) {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", filepath.Dir(dockerConfig(t, host, user, password)))
}

// dockerConfig writes a docker config.json holding user:password for host
// in a new directory and returns its path, for --registry-config.
func dockerConfig(t *testing.T, host, user, password string) string {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	config, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// caFile writes the PEM certificate a TLS registry serves, for --ca-file.
func caFile(t testing.TB, reg *registrytest.Registry) string {
	t.Helper()
	conn, err := tls.Dial("tcp", reg.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the test server's own certificate
	if err != nil {
		t.Fatalf("reading the registry's certificate: %v", err)
	}
	defer func() { _ = conn.Close() }()
	cert := conn.ConnectionState().PeerCertificates[0]
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// releaseDir writes release files into a new directory.
func releaseDir(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// capiRelease is a real Cluster API release of one provider type: its
// metadata.yaml and components file.
func capiRelease(t testing.TB, providerType string) map[string][]byte {
	t.Helper()
	components := providerType + "-components.yaml"
	return map[string][]byte{
		"metadata.yaml": clusterctltest.Read(t, clusterctltest.Current, "metadata.yaml"),
		components:      clusterctltest.Read(t, clusterctltest.Current, components),
	}
}

// rawLayer is a layer pushed as-is, to play artifacts other tools publish.
type rawLayer struct {
	mediaType   string
	data        []byte
	annotations map[string]string
}

// pushRawArtifact pushes an image manifest with the empty config and the
// given layers to ref, bypassing capwright's packing.
func pushRawArtifact(t testing.TB, reg *registrytest.Registry, ref artifact.Reference, layers []rawLayer, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	repo, release, err := reg.Access().Repository(ref, artifact.DefaultMaxArtifactSize)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	push := func(mediaType string, data []byte, annotations map[string]string) ocispec.Descriptor {
		desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data)), Annotations: annotations}
		if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatalf("pushing a %s blob: %v", mediaType, err)
		}
		return desc
	}
	m := ocispec.Manifest{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      push(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil),
		Layers:      []ocispec.Descriptor{},
		Annotations: annotations,
	}
	for _, l := range layers {
		m.Layers = append(m.Layers, push(l.mediaType, l.data, l.annotations))
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), ref.Tag); err != nil {
		t.Fatalf("pushing the manifest: %v", err)
	}
}

// assertNoSecret fails when an output shows the test password.
func assertNoSecret(t testing.TB, outputs ...string) {
	t.Helper()
	for _, out := range outputs {
		if strings.Contains(out, testPassword) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPassword))) {
			t.Errorf("the output shows the registry password:\n%s", out)
		}
	}
}
