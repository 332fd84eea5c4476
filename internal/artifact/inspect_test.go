package artifact_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// bootstrapFetched is the real kubeadm bootstrap provider as Fetch returns
// it, with the contract annotations.
func bootstrapFetched(t *testing.T) *artifact.Fetched {
	return &artifact.Fetched{
		Ref:         artifact.Reference{Host: "registry.example.com", Repository: "capi/manifests/bootstrap-kubeadm", Tag: clusterctltest.Current},
		Digest:      "sha256:0123",
		Annotations: artifact.ProviderAnnotations("bootstrap", "kubeadm", clusterctltest.Current, "https://github.com/kubernetes-sigs/cluster-api"),
		Files: map[string][]byte{
			"metadata.yaml":             clusterctltest.Read(t, clusterctltest.Current, "metadata.yaml"),
			"bootstrap-components.yaml": clusterctltest.Read(t, clusterctltest.Current, "bootstrap-components.yaml"),
		},
	}
}

func TestInspectRealProvider(t *testing.T) {
	f := bootstrapFetched(t)
	report, err := artifact.Inspect("oci://registry.example.com/capi/manifests/bootstrap-kubeadm:v1.14.2", f)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	want := artifact.ReportProvider{Type: "bootstrap", Name: "kubeadm", Version: "v1.14.2", Source: "https://github.com/kubernetes-sigs/cluster-api"}
	if report.Provider != want || report.Contract != "v1beta2" || report.Digest != "sha256:0123" || report.ComponentsFile != "bootstrap-components.yaml" {
		t.Errorf("provider %+v contract %q digest %q components %q", report.Provider, report.Contract, report.Digest, report.ComponentsFile)
	}
	if !maps.Equal(report.Annotations, f.Annotations) {
		t.Errorf("annotations %v", report.Annotations)
	}
	if len(report.Files) != 2 || report.Files[0].Name != "bootstrap-components.yaml" || report.Files[0].Size != int64(len(f.Files["bootstrap-components.yaml"])) ||
		report.Files[1].Name != "metadata.yaml" {
		t.Errorf("files %+v", report.Files)
	}

	var current []artifact.ReportSeries
	for _, s := range report.ReleaseSeries {
		if s.Current {
			current = append(current, s)
		}
	}
	if len(report.ReleaseSeries) < 10 || len(current) != 1 || current[0] != (artifact.ReportSeries{Major: 1, Minor: 14, Contract: "v1beta2", Current: true}) {
		t.Errorf("release series %+v", report.ReleaseSeries)
	}

	vars := map[string]artifact.ReportVariable{}
	for _, v := range report.Variables {
		vars[v.Name] = v
	}
	if v := vars["KUBEADM_BOOTSTRAP_TOKEN_TTL"]; v.Required || v.Default != "15m" {
		t.Errorf("KUBEADM_BOOTSTRAP_TOKEN_TTL: %+v", v)
	}
	if want := []string{"registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.14.2"}; !slices.Equal(report.Images, want) {
		t.Errorf("images %v, want %v", report.Images, want)
	}

	var names []string
	for _, crd := range report.CRDs {
		names = append(names, crd.Name)
	}
	if want := []string{"kubeadmconfigs.bootstrap.cluster.x-k8s.io", "kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io"}; !slices.Equal(names, want) {
		t.Fatalf("CRDs %v, want %v", names, want)
	}
	crd := report.CRDs[0]
	if crd.Group != "bootstrap.cluster.x-k8s.io" || crd.Kind != "KubeadmConfig" || !slices.Equal(crd.Versions, []string{"v1beta1", "v1beta2"}) ||
		len(crd.Contracts) != 2 || !slices.Equal(crd.Contracts["v1beta2"], []string{"v1beta2"}) || !slices.Equal(crd.Contracts["v1beta1"], []string{"v1beta1"}) {
		t.Errorf("CRD %+v", crd)
	}
}

func TestInspectWithoutAnnotations(t *testing.T) {
	f := bootstrapFetched(t)
	f.Annotations = nil
	report, err := artifact.Inspect("x", f)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if want := (artifact.ReportProvider{Type: "bootstrap", Name: "kubeadm", Version: "v1.14.2"}); report.Provider != want {
		t.Errorf("provider %+v, want %+v (from the files, repository and tag)", report.Provider, want)
	}
	if report.Annotations == nil || report.Contract != "v1beta2" {
		t.Errorf("annotations %v contract %q", report.Annotations, report.Contract)
	}

	// By digest, without annotations: the version is unknown, every series
	// is listed and none is marked.
	f.Ref.Tag, f.Ref.Digest = "", "sha256:0123"
	report, err = artifact.Inspect("x", f)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if report.Provider.Version != "" || report.Contract != "" || len(report.ReleaseSeries) == 0 {
		t.Errorf("provider %+v contract %q series %d", report.Provider, report.Contract, len(report.ReleaseSeries))
	}
	for _, s := range report.ReleaseSeries {
		if s.Current {
			t.Errorf("series %+v marked current for an unknown version", s)
		}
	}
}

func TestInspectRequiredVariables(t *testing.T) {
	components := `apiVersion: v1
kind: Namespace
metadata:
  name: x-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: manager
  namespace: x-system
spec:
  template:
    spec:
      containers:
      - name: manager
        image: ${REGISTRY}/manager:${TAG:=v0.1.0}
        args: ["--flag=${FLAG:=}"]
`
	f := &artifact.Fetched{
		Ref: artifact.Reference{Host: "r", Repository: "infrastructure-x", Tag: "v0.1.0"},
		Files: map[string][]byte{
			"metadata.yaml":                  []byte("apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- {major: 0, minor: 1, contract: v1beta2}\n"),
			"infrastructure-components.yaml": []byte(components),
		},
	}
	report, err := artifact.Inspect("x", f)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	want := []artifact.ReportVariable{{Name: "FLAG"}, {Name: "REGISTRY", Required: true}, {Name: "TAG", Default: "v0.1.0"}}
	if !slices.Equal(report.Variables, want) {
		t.Errorf("variables %+v, want %+v", report.Variables, want)
	}
	if want := []string{"${REGISTRY}/manager:v0.1.0"}; !slices.Equal(report.Images, want) {
		t.Errorf("images %v, want %v", report.Images, want)
	}
	if report.Provider.Name != "x" || report.CRDs == nil || len(report.CRDs) != 0 {
		t.Errorf("provider %+v, CRDs %v", report.Provider, report.CRDs)
	}
}

func TestInspectRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *artifact.Fetched)
		want   string
	}{
		{"no components", func(f *artifact.Fetched) {
			f.Annotations = nil
			delete(f.Files, "bootstrap-components.yaml")
			f.Files["components.yaml"] = []byte("x")
		}, "no {type}-components.yaml; it holds components.yaml, metadata.yaml"},
		{"two providers", func(f *artifact.Fetched) {
			f.Annotations = nil
			f.Files["core-components.yaml"] = f.Files["bootstrap-components.yaml"]
		}, "several provider types (bootstrap, core)"},
		{"unknown type annotation", func(f *artifact.Fetched) { f.Annotations[artifact.AnnotationProviderType] = "plugin" }, `"plugin", not a provider type`},
		{"tag and version annotation disagree", func(f *artifact.Fetched) { f.Ref.Tag = "v1.14.3" }, `annotation org.opencontainers.image.version is "v1.14.2", expected "v1.14.3"`},
		{"components file of the annotated type missing", func(f *artifact.Fetched) {
			f.Annotations[artifact.AnnotationProviderType] = "core"
			f.Annotations[artifact.AnnotationTitle] = "core-kubeadm"
		}, "lacks core-components.yaml"},
		{"version outside the release series", func(f *artifact.Fetched) {
			f.Ref.Tag = "v2.0.0"
			f.Annotations[artifact.AnnotationVersion] = "v2.0.0"
		}, "no release series for version v2.0.0"},
		{"broken metadata", func(f *artifact.Fetched) { f.Files["metadata.yaml"] = []byte("kind: [") }, "metadata.yaml is not valid YAML"},
		{"broken components", func(f *artifact.Fetched) { f.Files["bootstrap-components.yaml"] = []byte("a: [") }, "bootstrap-components.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := bootstrapFetched(t)
			tt.change(f)
			_, err := artifact.Inspect("oci://example/x:v1", f)
			var layoutErr *artifact.LayoutError
			if !errors.As(err, &layoutErr) {
				t.Fatalf("got %v (%T), want a *LayoutError", err, err)
			}
			if layoutErr.Ref != "oci://example/x:v1" || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q (ref %q) lacks %q", err, layoutErr.Ref, tt.want)
			}
		})
	}
}
