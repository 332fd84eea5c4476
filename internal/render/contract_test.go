package render

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
)

func TestContractBackend(t *testing.T) {
	cp := &clustersv1alpha1.CapwrightControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-x1", UID: "uid-1"}}
	access := clustersv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/charts/hcp", Insecure: true}
	chart, err := ContractBackend(ContractInput{Owner: cp, Kind: clustersv1alpha1.ControlPlaneKind, Cluster: "alpha",
		URL:     "oci://mirror.example.com/charts/hcp",
		Backend: clustersv1alpha1.Backend{ServiceAccountName: "installer", Chart: &clustersv1alpha1.ChartBackend{OCIRepositoryAccess: access, Version: "1.2.3+build.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	src, hr := chart.Source, chart.HelmRelease
	if src.Name != "controlplane-alpha-x1" || src.Namespace != "team" || src.Spec.URL != "oci://mirror.example.com/charts/hcp" ||
		src.Spec.Reference.Tag != "1.2.3_build.1" || src.Spec.LayerSelector == nil || !src.Spec.Insecure {
		t.Fatalf("chart source: %+v", src)
	}
	if hr == nil || chart.Kustomization != nil || hr.Spec.ReleaseName != "alpha" || hr.Spec.ServiceAccountName != "installer" ||
		hr.Spec.ChartRef.Name != src.Name || hr.Spec.ChartRef.Namespace != "" {
		t.Fatalf("HelmRelease: %+v", hr)
	}
	for _, o := range chart.Objects() {
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != "uid-1" || refs[0].Kind != clustersv1alpha1.ControlPlaneKind || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%s is not controlled by its control plane: %+v", o.GetName(), refs)
		}
		if o.GetLabels()[clustersv1alpha1.BackendLabel] != "CapwrightControlPlane.alpha-x1" {
			t.Errorf("%s labels %v", o.GetName(), o.GetLabels())
		}
	}

	infra := &clustersv1alpha1.CapwrightCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alpha-x1", UID: "uid-2"}}
	access.Digest = "sha256:" + strings.Repeat("ab", 32)
	ks, err := ContractBackend(ContractInput{Owner: infra, Kind: clustersv1alpha1.ClusterKind, Cluster: "alpha",
		Backend: clustersv1alpha1.Backend{Kustomize: &clustersv1alpha1.KustomizeBackend{OCIRepositoryAccess: access, Tag: "v1", Substitute: map[string]string{"CLUSTER_NAME": "alpha"}}}})
	if err != nil {
		t.Fatal(err)
	}
	k := ks.Kustomization
	if k == nil || k.Name != "infrastructure-alpha-x1" || k.Spec.TargetNamespace != "team" || !k.Spec.Prune || !k.Spec.Wait ||
		k.Spec.PostBuild == nil || k.Spec.PostBuild.Substitute["CLUSTER_NAME"] != "alpha" || ks.Source.Spec.URL != access.URL || ks.Source.Spec.LayerSelector != nil {
		t.Fatalf("Kustomization: %+v, source %+v", k, ks.Source.Spec)
	}
	if ref := ks.Source.Spec.Reference; ref.Digest != access.Digest || ref.Tag != "v1" {
		t.Fatalf("a pinned artifact's reference: %+v", ref)
	}
	if chart.Source.Spec.Reference.Digest != "" {
		t.Fatalf("an unpinned chart's reference: %+v", chart.Source.Spec.Reference)
	}
	if _, err := ContractBackend(ContractInput{Owner: infra, Kind: clustersv1alpha1.ClusterKind}); err == nil || !strings.Contains(err.Error(), "team/alpha-x1") {
		t.Fatalf("no backend: %v", err)
	}
}

func TestContractNamesStayValid(t *testing.T) {
	long := strings.Repeat("a", 70)
	if n := ContractObjectName(clustersv1alpha1.ClusterKind, long); len(n) > 63 || !strings.HasPrefix(n, "infrastructure-") {
		t.Fatalf("object name %q", n)
	}
	if n := ContractReleaseName(clustersv1alpha1.ClusterKind, long); len(n) > 53 {
		t.Fatalf("release name %q", n)
	}
	if n := ContractReleaseName(clustersv1alpha1.ClusterKind, "alpha"); n != "alpha-infra" {
		t.Fatalf("release name %q", n)
	}
	if v := OwnerLabelValue(clustersv1alpha1.ControlPlaneKind, long); len(v) > 63 {
		t.Fatalf("label value %q", v)
	}
	if ContractObjectName(clustersv1alpha1.ClusterKind, long) == ContractObjectName(clustersv1alpha1.ClusterKind, long+"b") {
		t.Fatal("two long names collide")
	}
}
