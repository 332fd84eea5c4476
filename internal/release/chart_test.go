package release

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/artifact"
)

const testImageRepo = "registry.test/capwright/capwright-manager"

func stampedChart(t *testing.T, files map[string][]byte) map[string][]byte {
	t.Helper()
	if err := stampChart(files, "v1.2.3", testImageRepo, testDigest); err != nil {
		t.Fatal(err)
	}
	return files
}

func TestStampChartSetsTheReleaseAndKeepsComments(t *testing.T) {
	files, err := readChart(filepath.Join(testRepo(t), "charts", "capwright"))
	if err != nil {
		t.Fatal(err)
	}
	files = stampedChart(t, files)

	var chart struct {
		Version     string            `json:"version"`
		AppVersion  string            `json:"appVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(files["Chart.yaml"], &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != "v1.2.3" || chart.AppVersion != "v1.2.3" {
		t.Errorf("version %q appVersion %q, want v1.2.3", chart.Version, chart.AppVersion)
	}
	var images []struct{ Name, Image string }
	if err := yaml.Unmarshal([]byte(chart.Annotations[artifact.ChartImagesAnnotation]), &images); err != nil {
		t.Fatalf("%s: %v", artifact.ChartImagesAnnotation, err)
	}
	if len(images) != 1 || images[0].Name != "manager" || images[0].Image != testImageRepo+"@"+testDigest {
		t.Errorf("%s = %+v", artifact.ChartImagesAnnotation, images)
	}

	var values struct {
		Image map[string]any `json:"image"`
	}
	if err := yaml.Unmarshal(files["values.yaml"], &values); err != nil {
		t.Fatal(err)
	}
	if values.Image["repository"] != testImageRepo || values.Image["digest"] != testDigest {
		t.Errorf("values image %v", values.Image)
	}
	for _, comment := range []string{"# The manager image.", "# Registry mirror rules"} {
		if !strings.Contains(string(files["values.yaml"]), comment) {
			t.Errorf("values.yaml lost the comment %q:\n%s", comment, files["values.yaml"])
		}
	}
}

func TestStampChartAddsTheDigestKey(t *testing.T) {
	files := stampedChart(t, map[string][]byte{
		"Chart.yaml":  []byte("apiVersion: v2\nname: capwright\nversion: 0.1.0\n"),
		"values.yaml": []byte("# The manager image.\nimage:\n  repository: ghcr.io/capwright/capwright-manager # upstream\n  tag: \"\"\n"),
	})
	values := string(files["values.yaml"])
	for _, want := range []string{"# The manager image.", "digest: " + testDigest, "repository: " + testImageRepo, "# upstream"} {
		if !strings.Contains(values, want) {
			t.Errorf("values.yaml lacks %q:\n%s", want, values)
		}
	}
}

func TestPackChartIsWhatHelmPushWrites(t *testing.T) {
	files, err := readChart(filepath.Join(testRepo(t), "charts", "capwright"))
	if err != nil {
		t.Fatal(err)
	}
	files = stampedChart(t, files)
	chart, err := packChart(files, commitTime)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := packChart(files, commitTime)
	if !bytes.Equal(chart.manifest, again.manifest) {
		t.Error("the same chart packed twice gave different manifests")
	}

	var config map[string]any
	if err := json.Unmarshal(chart.config, &config); err != nil {
		t.Fatal(err)
	}
	if config["name"] != "capwright" || config["version"] != "v1.2.3" || config["appVersion"] != "v1.2.3" || config["apiVersion"] != "v2" {
		t.Errorf("config %s", chart.config)
	}

	var m ocispec.Manifest
	if err := json.Unmarshal(chart.manifest, &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != artifact.HelmConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != artifact.HelmChartMediaType {
		t.Errorf("config %s layers %v", m.Config.MediaType, m.Layers)
	}
	for k, v := range map[string]string{
		ocispec.AnnotationTitle:        "capwright",
		ocispec.AnnotationVersion:      "v1.2.3",
		ocispec.AnnotationCreated:      "2026-01-02T03:04:05Z",
		artifact.ChartImagesAnnotation: "- name: manager\n  image: " + testImageRepo + "@" + testDigest + "\n",
	} {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
	if m.Annotations[ocispec.AnnotationDescription] == "" {
		t.Error("no description annotation")
	}

	entries := untarGz(t, bytes.NewReader(chart.layer))
	if len(entries) != len(files) {
		t.Errorf("%d entries for %d files", len(entries), len(files))
	}
	for name := range entries {
		if !strings.HasPrefix(name, "capwright/") {
			t.Errorf("entry %s is not under capwright/", name)
		}
	}
	for _, name := range []string{"capwright/Chart.yaml", "capwright/values.yaml", "capwright/templates/manager.yaml", "capwright/templates/metrics.yaml"} {
		if _, ok := entries[name]; !ok {
			t.Errorf("no %s in the chart", name)
		}
	}
	if !bytes.Equal(entries["capwright/values.yaml"], files["values.yaml"]) {
		t.Error("the packed values.yaml is not the stamped one")
	}
}
