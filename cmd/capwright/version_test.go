package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/internal/artifact/registrytest"
)

func managerDeployment(image string, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capwright-system", Name: "capwright-manager", Labels: labels},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Image: "registry.example.com/sidecar:v1"},
			{Name: "manager", Image: image},
		}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 1},
	}
}

// pushIndex pushes an empty image index with annotations, as `make
// release` annotates the manager image, and returns its digest.
func pushIndex(t *testing.T, r *registrytest.Registry, repository string, annotations map[string]string) string {
	t.Helper()
	index, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{}, Annotations: annotations})
	if err != nil {
		t.Fatal(err)
	}
	repo, release, err := r.Access().Repository(r.Ref(repository, ""), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(index), Size: int64(len(index))}
	if err := repo.Push(context.Background(), desc, bytes.NewReader(index)); err != nil {
		t.Fatal(err)
	}
	return desc.Digest.String()
}

func TestVersionOfTheManager(t *testing.T) {
	noDockerCredentials(t)
	r := registrytest.New(t, registrytest.Options{})
	released := pushIndex(t, r, "capwright/capwright-manager", map[string]string{ocispec.AnnotationVersion: "v0.3.0"})
	unannotated := pushIndex(t, r, "capwright/other", nil)
	reg := &registryOptions{plainHTTP: true}
	for _, tc := range []struct {
		what, image     string
		labels          map[string]string
		version, source string
		note            string
	}{
		{what: "the chart's label", image: "ghcr.io/capwright/capwright-manager:v0.2.0", labels: map[string]string{"app.kubernetes.io/version": "v0.3.0"},
			version: "v0.3.0", source: "label app.kubernetes.io/version"},
		{what: "a tag", image: "ghcr.io/capwright/capwright-manager:v0.3.0", version: "v0.3.0", source: "image tag"},
		{what: "a digest, as releases pin it", image: r.Host + "/capwright/capwright-manager@" + released, version: "v0.3.0",
			source: "image annotation org.opencontainers.image.version"},
		{what: "latest", image: "ghcr.io/capwright/capwright-manager:latest", note: `the image's tag "latest" does not say which version runs`},
		{what: "a digest without the annotation", image: r.Host + "/capwright/other@" + unannotated, note: "has no org.opencontainers.image.version annotation"},
		{what: "a digest the registry does not have", image: r.Host + "/capwright/gone@" + released, note: "version not read from the image's registry"},
	} {
		m := managerOf(context.Background(), reg, managerDeployment(tc.image, tc.labels))
		if m.Image != tc.image || m.Version != tc.version || m.VersionSource != tc.source || !strings.Contains(m.Note, tc.note) || m.ReadyReplicas != 1 {
			t.Errorf("%s: %+v; want image %s, version %q from %q, note %q", tc.what, m, tc.image, tc.version, tc.source, tc.note)
		}
	}
}

func TestVersionWithoutACluster(t *testing.T) {
	stdout, stderr, code := cliRun(t, "version", "-o", "json", "--kubeconfig", t.TempDir()+"/none")
	var got versionReport
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("exit code %d, %v, stderr %q:\n%s", code, err, stderr, stdout)
	}
	if got.Client.Version != version || !strings.HasPrefix(got.Client.GoVersion, "go") || len(got.Managers) != 0 || !strings.Contains(got.ManagerNote, "no cluster") {
		t.Errorf("version without a cluster: %s", stdout)
	}
	stdout, _, code = cliRun(t, "version", "--client")
	if code != 0 || !strings.HasPrefix(stdout, "capwright CLI: "+version+" (go") || strings.Contains(stdout, "manager") {
		t.Errorf("version --client: exit code %d:\n%s", code, stdout)
	}
	if _, _, code := cliRun(t, "version", "-o", "wide"); code != exitUsage {
		t.Errorf("version -o wide: exit code %d, want 2", code)
	}
}
