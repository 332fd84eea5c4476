package render

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

const tenantUID = "7e1a0c55-team-a"

func chartTenant() *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: tenantUID, Generation: 3},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "team-a"}},
				Names:      []string{"legacy-1"},
				Namespaces: []string{"shared-clusters"},
			},
			Stack: tenancyv1alpha1.StackSpec{
				Chart: &tenancyv1alpha1.ChartStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{
						URL:       "oci://ghcr.io/example/charts/platform-stack",
						SecretRef: &meta.LocalObjectReference{Name: "ghcr-pull"},
					},
					Version:    "1.4.2+build.7",
					Values:     &apiextensionsv1.JSON{Raw: []byte(`{"ingress":{"enabled":true}}`)},
					ValuesFrom: []meta.ValuesReference{{Kind: "ConfigMap", Name: "stack-values", ValuesKey: "prod.yaml", Optional: true}},
				},
			},
		},
	}
}

func kustomizeTenant() *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-b", UID: "b0b-team-b"},
		Spec: tenancyv1alpha1.TenantSpec{
			Management: &tenancyv1alpha1.ManagementSpec{Namespace: "team-b-clusters"},
			Clusters:   tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{}},
			Stack: tenancyv1alpha1.StackSpec{
				Kustomize: &tenancyv1alpha1.KustomizeStack{
					OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com:5000/stacks/base", Insecure: true},
					SemVer:              ">=1.0.0 <2.0.0",
					Path:                "deploy/prod",
				},
				TargetNamespace: "platform",
				Interval:        &metav1.Duration{Duration: 30 * time.Minute},
				Timeout:         &metav1.Duration{Duration: 2 * time.Minute},
			},
		},
	}
}

var prodEU1 = types.NamespacedName{Namespace: "tenant-team-a", Name: "prod-eu-1"}

func wantOwner(name, uid string) []metav1.OwnerReference {
	truth := true
	return []metav1.OwnerReference{{APIVersion: "tenancy.capwright.io/v1alpha1", Kind: "Tenant", Name: name,
		UID: types.UID(uid), Controller: &truth, BlockOwnerDeletion: &truth}}
}

func TestTenantClusterObjectName(t *testing.T) {
	long := strings.Repeat("t", 56)
	longCluster := types.NamespacedName{Namespace: "ns", Name: strings.Repeat("c", 63)}
	tests := []struct {
		name    string
		tenant  string
		cluster types.NamespacedName
		prefix  string
	}{
		{"readable when short", "team-a", prodEU1, "team-a-prod-eu-1-"},
		{"cut to fit, hash kept", long, longCluster, long[:54]},
		{"no dash before the hash after a cut", strings.Repeat("a", 53) + "-b", longCluster, strings.Repeat("a", 53) + "-"},
		{"cluster names may hold dots", "team-a", types.NamespacedName{Namespace: "ns", Name: "eu.prod.1"}, "team-a-eu.prod.1-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TenantClusterObjectName(tt.tenant, tt.cluster)
			if !strings.HasPrefix(got, tt.prefix) || len(got) > 63 {
				t.Errorf("TenantClusterObjectName = %q (%d chars), want prefix %q and at most 63", got, len(got), tt.prefix)
			}
			if strings.Contains(got, "--") {
				t.Errorf("%q has a doubled dash", got)
			}
			// Flux puts the name in a label on everything it applies; it is
			// also an object name.
			if errs := append(validation.IsValidLabelValue(got), validation.IsDNS1123Subdomain(got)...); len(errs) > 0 {
				t.Errorf("%q: %v", got, errs)
			}
			if again := TenantClusterObjectName(tt.tenant, tt.cluster); again != got {
				t.Errorf("not stable: %q then %q", got, again)
			}
		})
	}

	// The readable part is ambiguous, and cut names share a prefix; the
	// hash keeps them apart.
	seen := map[string]string{}
	for _, c := range []struct {
		tenant  string
		cluster types.NamespacedName
	}{
		{"a-b", types.NamespacedName{Namespace: "shared", Name: "c"}},
		{"a", types.NamespacedName{Namespace: "shared", Name: "b-c"}},
		{"a", types.NamespacedName{Namespace: "other", Name: "b-c"}},
		{long, types.NamespacedName{Namespace: "ns", Name: strings.Repeat("c", 62) + "1"}},
		{long, types.NamespacedName{Namespace: "ns", Name: strings.Repeat("c", 62) + "2"}},
	} {
		name := TenantClusterObjectName(c.tenant, c.cluster)
		key := c.tenant + " " + c.cluster.String()
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s are both named %q", other, key, name)
		}
		seen[name] = key
	}
}

func TestTenantNamesFitFluxAndHelm(t *testing.T) {
	long := strings.Repeat("x", 56) // the longest name the API admits
	if n := TenantSourceName(long); len(n) > 63 {
		t.Errorf("source name %q is %d characters", n, len(n))
	}
	if r := tenantReleaseName("team-a"); r != "team-a" {
		t.Errorf("release name = %q, want the tenant's name", r)
	}
	r := tenantReleaseName(long)
	if len(r) > 53 || !strings.HasPrefix(r, long[:44]) {
		t.Errorf("release name %q (%d chars), want Helm's 53 at most", r, len(r))
	}
	if KubeconfigSecretName("prod-eu-1") != "prod-eu-1-kubeconfig" {
		t.Errorf("kubeconfig Secret name = %q", KubeconfigSecretName("prod-eu-1"))
	}
}

func TestTenantManagement(t *testing.T) {
	tenant := chartTenant()
	tenant.Spec.Management = &tenancyv1alpha1.ManagementSpec{Quota: &corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{"count/clusters.cluster.x-k8s.io": resource.MustParse("5")}}}
	m := TenantManagement(tenant)
	labels := map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}

	wantNS := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-team-a", Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a",
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/audit": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
	if !reflect.DeepEqual(m.Namespace, wantNS) {
		t.Errorf("Namespace = %+v, want %+v (no owner: deleting the Tenant must not delete its Clusters)", m.Namespace, wantNS)
	}
	no := false
	wantSA := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   metav1.ObjectMeta{Name: "team-a", Namespace: "tenant-team-a", Labels: labels, OwnerReferences: wantOwner("team-a", tenantUID)},
		AutomountServiceAccountToken: &no}
	if !reflect.DeepEqual(m.ServiceAccount, wantSA) {
		t.Errorf("ServiceAccount = %+v, want %+v", m.ServiceAccount, wantSA)
	}
	wantRB := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "capwright-tenant", Namespace: "tenant-team-a", Labels: labels, OwnerReferences: wantOwner("team-a", tenantUID)},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "team-a", Namespace: "tenant-team-a"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "capwright-tenant"}}
	if !reflect.DeepEqual(m.RoleBinding, wantRB) {
		t.Errorf("RoleBinding = %+v, want %+v", m.RoleBinding, wantRB)
	}
	q := m.ResourceQuota
	if q == nil || q.Name != "capwright-tenant" || q.Namespace != "tenant-team-a" || q.Kind != "ResourceQuota" ||
		!reflect.DeepEqual(q.Spec, *tenant.Spec.Management.Quota) || !reflect.DeepEqual(q.OwnerReferences, wantOwner("team-a", tenantUID)) {
		t.Errorf("ResourceQuota = %+v", q)
	}

	if q := TenantManagement(chartTenant()).ResourceQuota; q != nil {
		t.Errorf("ResourceQuota without spec.management.quota = %+v", q)
	}
	if ns := TenantManagement(kustomizeTenant()).Namespace.Name; ns != "team-b-clusters" {
		t.Errorf("namespace = %q, want spec.management.namespace", ns)
	}
}

func TestTenantNamespacePodSecurity(t *testing.T) {
	for _, tc := range []struct {
		name       string
		management *tenancyv1alpha1.ManagementSpec
		want       string
	}{
		{"no management: restricted", nil, "restricted"},
		{"management without a level: restricted", &tenancyv1alpha1.ManagementSpec{Namespace: "x"}, "restricted"},
		{"baseline", &tenancyv1alpha1.ManagementSpec{PodSecurity: tenancyv1alpha1.PodSecurityBaseline}, "baseline"},
		{"privileged", &tenancyv1alpha1.ManagementSpec{PodSecurity: tenancyv1alpha1.PodSecurityPrivileged}, "privileged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := chartTenant()
			tenant.Spec.Management = tc.management
			labels := TenantManagement(tenant).Namespace.Labels
			for _, l := range []string{PodSecurityEnforceLabel, PodSecurityAuditLabel, PodSecurityWarnLabel} {
				if labels[l] != tc.want {
					t.Errorf("label %s = %q, want %q", l, labels[l], tc.want)
				}
			}
			if labels[tenancyv1alpha1.TenantLabel] != tenant.Name {
				t.Errorf("the tenant label is lost: %v", labels)
			}
		})
	}
}

func TestTenantChartStack(t *testing.T) {
	tenant := chartTenant()
	src, err := TenantSource(tenant, "shared-clusters")
	if err != nil {
		t.Fatal(err)
	}
	wantSrc := &sourcev1.OCIRepository{
		TypeMeta: metav1.TypeMeta{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "OCIRepository"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-a-stack", Namespace: "shared-clusters",
			Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}, OwnerReferences: wantOwner("team-a", tenantUID)},
		Spec: sourcev1.OCIRepositorySpec{
			URL:           "oci://ghcr.io/example/charts/platform-stack",
			Reference:     &sourcev1.OCIRepositoryRef{Tag: "1.4.2_build.7"},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: "copy"},
			SecretRef:     &meta.LocalObjectReference{Name: "ghcr-pull"},
			Interval:      metav1.Duration{Duration: 10 * time.Minute},
			Timeout:       &metav1.Duration{Duration: time.Minute},
		},
	}
	if !reflect.DeepEqual(src, wantSrc) {
		t.Errorf("OCIRepository =\n%+v\nwant\n%+v", src, wantSrc)
	}

	objs, err := TenantCluster(tenant, prodEU1)
	if err != nil {
		t.Fatal(err)
	}
	if objs.Kustomization != nil || objs.HelmRelease == nil || objs.Object() != objs.HelmRelease {
		t.Fatalf("a chart is installed by a HelmRelease only: %+v", objs)
	}
	hr := objs.HelmRelease
	wantMeta := metav1.ObjectMeta{
		Name: TenantClusterObjectName("team-a", prodEU1), Namespace: "tenant-team-a",
		Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a",
			tenancyv1alpha1.ClusterNamespaceLabel: "tenant-team-a", tenancyv1alpha1.ClusterNameLabel: "prod-eu-1"},
		OwnerReferences: wantOwner("team-a", tenantUID),
	}
	if hr.APIVersion != "helm.toolkit.fluxcd.io/v2" || hr.Kind != "HelmRelease" || !reflect.DeepEqual(hr.ObjectMeta, wantMeta) {
		t.Errorf("HelmRelease meta = %+v %+v", hr.TypeMeta, hr.ObjectMeta)
	}
	wantSpec := helmv2.HelmReleaseSpec{
		ChartRef:         &helmv2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "team-a-stack", Namespace: "tenant-team-a"},
		Interval:         metav1.Duration{Duration: 10 * time.Minute},
		Timeout:          &metav1.Duration{Duration: 5 * time.Minute},
		KubeConfig:       &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "prod-eu-1-kubeconfig", Key: "value"}},
		ReleaseName:      "team-a",
		TargetNamespace:  "team-a",
		StorageNamespace: "team-a",
		Install:          &helmv2.Install{CreateNamespace: true, Remediation: &helmv2.InstallRemediation{Retries: -1}},
		Upgrade:          &helmv2.Upgrade{CRDs: helmv2.CreateReplace, Remediation: &helmv2.UpgradeRemediation{Retries: 3}},
		DriftDetection:   &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled},
		Values:           &apiextensionsv1.JSON{Raw: []byte(`{"ingress":{"enabled":true}}`)},
		ValuesFrom:       []meta.ValuesReference{{Kind: "ConfigMap", Name: "stack-values", ValuesKey: "prod.yaml", Optional: true}},
		CommonMetadata:   &helmv2.CommonMetadata{Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-a"}},
	}
	if !reflect.DeepEqual(hr.Spec, wantSpec) {
		t.Errorf("HelmRelease spec =\n%+v\nwant\n%+v", hr.Spec, wantSpec)
	}

	tenant.Spec.Suspend = true
	tenant.Spec.Stack.Chart.Version, tenant.Spec.Stack.Chart.SemVer = "", "1.x"
	src, _ = TenantSource(tenant, "tenant-team-a")
	objs, _ = TenantCluster(tenant, prodEU1)
	if *src.Spec.Reference != (sourcev1.OCIRepositoryRef{SemVer: "1.x"}) || !src.Spec.Suspend || !objs.HelmRelease.Spec.Suspend {
		t.Errorf("semver range and suspend: ref %+v, suspend %v/%v", *src.Spec.Reference, src.Spec.Suspend, objs.HelmRelease.Spec.Suspend)
	}
}

func TestTenantKustomizeStack(t *testing.T) {
	tenant := kustomizeTenant()
	cluster := types.NamespacedName{Namespace: "team-b-clusters", Name: "edge-7"}
	src, err := TenantSource(tenant, cluster.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	wantSrc := sourcev1.OCIRepositorySpec{
		URL:       "oci://registry.example.com:5000/stacks/base",
		Reference: &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0 <2.0.0"},
		Insecure:  true,
		Interval:  metav1.Duration{Duration: 30 * time.Minute},
		Timeout:   &metav1.Duration{Duration: time.Minute},
	}
	if !reflect.DeepEqual(src.Spec, wantSrc) {
		t.Errorf("OCIRepository spec = %+v, want %+v (no layer selector: the manifests are extracted)", src.Spec, wantSrc)
	}

	objs, err := TenantCluster(tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if objs.HelmRelease != nil || objs.Kustomization == nil {
		t.Fatalf("a kustomize artifact is applied by a Kustomization only: %+v", objs)
	}
	ks := objs.Kustomization
	if ks.APIVersion != "kustomize.toolkit.fluxcd.io/v1" || ks.Kind != "Kustomization" || ks.Namespace != "team-b-clusters" ||
		ks.Labels[tenancyv1alpha1.ClusterNameLabel] != "edge-7" || ks.OwnerReferences[0].UID != "b0b-team-b" {
		t.Errorf("Kustomization meta = %+v %+v", ks.TypeMeta, ks.ObjectMeta)
	}
	wantSpec := kustomizev1.KustomizationSpec{
		SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "team-b-stack"},
		Path:            "deploy/prod",
		Prune:           true,
		Wait:            true,
		Interval:        metav1.Duration{Duration: 30 * time.Minute},
		RetryInterval:   &metav1.Duration{Duration: time.Minute}, // not the interval: clusters fail for passing reasons
		Timeout:         &metav1.Duration{Duration: 2 * time.Minute},
		KubeConfig:      &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "edge-7-kubeconfig", Key: "value"}},
		TargetNamespace: "platform",
		DeletionPolicy:  kustomizev1.DeletionPolicyMirrorPrune,
		CommonMetadata:  &kustomizev1.CommonMetadata{Labels: map[string]string{tenancyv1alpha1.TenantLabel: "team-b"}},
	}
	if !reflect.DeepEqual(ks.Spec, wantSpec) {
		t.Errorf("Kustomization spec =\n%+v\nwant\n%+v (no postBuild without variables)", ks.Spec, wantSpec)
	}

	tenant.Spec.Stack.Kustomize.Path = ""
	tenant.Spec.Stack.Kustomize.Substitute = map[string]string{"CLUSTER_DOMAIN": "edge.example.com"}
	tenant.Spec.Stack.Kustomize.SubstituteFrom = []tenancyv1alpha1.SubstituteReference{{Kind: "Secret", Name: "stack-vars", Optional: true}}
	objs, _ = TenantCluster(tenant, cluster)
	wantPB := &kustomizev1.PostBuild{
		Substitute:     map[string]string{"CLUSTER_DOMAIN": "edge.example.com"},
		SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "stack-vars", Optional: true}},
	}
	if ks := objs.Kustomization; ks.Spec.Path != "./" || !reflect.DeepEqual(ks.Spec.PostBuild, wantPB) {
		t.Errorf("path %q, postBuild %+v, want ./ and %+v", ks.Spec.Path, ks.Spec.PostBuild, wantPB)
	}
}

// What kustomize-controller builds from a tenant's artifact: the
// Namespace the artifact carries becomes the target namespace (Flux does
// not create it otherwise), every object lands there with the tenant's
// label, and variables are substituted.
func TestFluxBuildOfATenantKustomization(t *testing.T) {
	tenant := kustomizeTenant()
	tenant.Spec.Stack.Kustomize.Path = ""
	tenant.Spec.Stack.Kustomize.Substitute = map[string]string{"CLUSTER_DOMAIN": "edge.example.com"}
	cluster := types.NamespacedName{Namespace: "team-b-clusters", Name: "edge-7"}
	src, err := TenantSource(tenant, cluster.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := TenantCluster(tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stack\n"),
		"config.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stack-config\ndata:\n  domain: ${CLUSTER_DOMAIN}\n"),
	}
	built := fluxBuild(t, &RenderedObjects{OCIRepository: src, Kustomization: objs.Kustomization}, files)
	ns := find(t, built, "Namespace", "platform")
	cm := find(t, built, "ConfigMap", "stack-config")
	if cm.GetNamespace() != "platform" || cm.Object["data"].(map[string]any)["domain"] != "edge.example.com" {
		t.Errorf("ConfigMap = %v", cm.Object)
	}
	for _, o := range []map[string]string{ns.GetLabels(), cm.GetLabels()} {
		if o[tenancyv1alpha1.TenantLabel] != "team-b" {
			t.Errorf("labels %v lack the tenant", o)
		}
	}
}

func TestTenantRefusals(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*tenancyv1alpha1.Tenant)
		want   string
	}{
		{"both stacks", func(t *tenancyv1alpha1.Tenant) { t.Spec.Stack.Kustomize = kustomizeTenant().Spec.Stack.Kustomize }, "exactly one of chart"},
		{"no stack", func(t *tenancyv1alpha1.Tenant) { t.Spec.Stack.Chart = nil }, "exactly one of chart"},
		{"version and range", func(t *tenancyv1alpha1.Tenant) { t.Spec.Stack.Chart.SemVer = "1.x" }, "spec.stack.chart of Tenant team-a: set exactly one of version or semver"},
		{"bad range", func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Stack.Chart.Version, t.Spec.Stack.Chart.SemVer = "", "not a range"
		}, `spec.stack.chart.semver of Tenant team-a: "not a range" is not a version range`},
		{"not OCI", func(t *tenancyv1alpha1.Tenant) { t.Spec.Stack.Chart.URL = "https://charts.example.com" }, "is not an oci:// URL"},
		{"no name", func(t *tenancyv1alpha1.Tenant) { t.Name = "" }, "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant := chartTenant()
			tt.mutate(tenant)
			_, errSrc := TenantSource(tenant, "ns")
			_, errCluster := TenantCluster(tenant, prodEU1)
			_, errAll := Tenant(tenant, ClusterSelection{}, TenantOptions{})
			for _, err := range []error{errSrc, errCluster, errAll} {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error = %v, want one containing %q", err, tt.want)
				}
			}
		})
	}
	if _, err := TenantCluster(chartTenant(), types.NamespacedName{Name: "x"}); err == nil {
		t.Error("a cluster without a namespace was rendered")
	}
}

func TestTenantRendersSelectedNamespacesAndEligibleClusters(t *testing.T) {
	tenant := chartTenant()
	sel := ClusterSelection{Clusters: []ClusterDecision{
		{Cluster: types.NamespacedName{Namespace: "tenant-team-a", Name: "b"}, Selected: true, Eligible: true},
		{Cluster: types.NamespacedName{Namespace: "tenant-team-a", Name: "a"}, Selected: true, Eligible: true},
		{Cluster: types.NamespacedName{Namespace: "shared-clusters", Name: "paused"}, Selected: true, Reason: tenancyv1alpha1.ClusterPausedReason},
		{Cluster: types.NamespacedName{Namespace: "elsewhere", Name: "x"}},
	}}
	out, err := Tenant(tenant, sel, TenantOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range out.Objects() {
		got = append(got, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{
		"Namespace /tenant-team-a", "ServiceAccount tenant-team-a/team-a", "RoleBinding tenant-team-a/capwright-tenant",
		// The paused cluster's namespace keeps its source: what Flux
		// installed there earlier still refers to it.
		"OCIRepository shared-clusters/team-a-stack", "OCIRepository tenant-team-a/team-a-stack",
		"HelmRelease tenant-team-a/" + TenantClusterObjectName("team-a", types.NamespacedName{Namespace: "tenant-team-a", Name: "a"}),
		"HelmRelease tenant-team-a/" + TenantClusterObjectName("team-a", types.NamespacedName{Namespace: "tenant-team-a", Name: "b"}),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same selection in another order renders the same objects, so a
	// resync that found nothing new has nothing to write.
	slices.Reverse(sel.Clusters)
	again, err := Tenant(tenant, sel, TenantOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, out) {
		t.Error("the order of the selection changed the rendered objects")
	}
}

// Rendered objects must not share maps, slices or pointers with the
// Tenant: the controller may mutate either (defaults, SSA preparation)
// and a shared informer cache holds the Tenant.
func TestTenantObjectsDoNotAliasTheTenant(t *testing.T) {
	for _, tenant := range []*tenancyv1alpha1.Tenant{chartTenant(), kustomizeTenant()} {
		tenant.Spec.Management = &tenancyv1alpha1.ManagementSpec{Quota: &corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{"pods": resource.MustParse("10")}, Scopes: []corev1.ResourceQuotaScope{"NotTerminating"}}}
		var access *tenancyv1alpha1.OCIRepositoryAccess
		if k := tenant.Spec.Stack.Kustomize; k != nil {
			k.Substitute = map[string]string{"A": "1"}
			k.SubstituteFrom = []tenancyv1alpha1.SubstituteReference{{Kind: "Secret", Name: "vars"}}
			access = &k.OCIRepositoryAccess
		} else {
			access = &tenant.Spec.Stack.Chart.OCIRepositoryAccess
		}
		access.SecretRef = &meta.LocalObjectReference{Name: "pull"}
		access.CertSecretRef = &meta.LocalObjectReference{Name: "ca"}
		access.Verify = &tenancyv1alpha1.OCIVerification{SecretRef: &meta.LocalObjectReference{Name: "keys"},
			MatchOIDCIdentity: []tenancyv1alpha1.OIDCIdentityMatch{{Issuer: "i", Subject: "s"}}}
		tenant.Spec.Stack.Interval = &metav1.Duration{Duration: time.Hour}
		tenant.Spec.Stack.Timeout = &metav1.Duration{Duration: time.Minute}
		before := tenant.DeepCopy()

		sel := ClusterSelection{Clusters: []ClusterDecision{{Cluster: types.NamespacedName{Namespace: tenant.ManagementNamespace(), Name: "c"}, Selected: true, Eligible: true}}}
		out, err := Tenant(tenant, sel, TenantOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q := out.Management.ResourceQuota
		q.Spec.Hard["pods"] = resource.MustParse("99")
		q.Spec.Scopes[0] = "Changed"
		src := out.Sources[0]
		src.Spec.Interval.Duration = 0
		src.Spec.SecretRef.Name, src.Spec.CertSecretRef.Name = "changed", "changed"
		src.Spec.Verify.SecretRef.Name, src.Spec.Verify.MatchOIDCIdentity[0].Issuer = "changed", "changed"
		c := out.Clusters[0]
		if hr := c.HelmRelease; hr != nil {
			hr.Spec.Values.Raw[0] = 'X'
			hr.Spec.ValuesFrom[0].Name = "changed"
			hr.Spec.Timeout.Duration = 0
			hr.Spec.Interval.Duration = 0
		}
		if ks := c.Kustomization; ks != nil {
			ks.Spec.PostBuild.Substitute["A"] = "changed"
			ks.Spec.PostBuild.SubstituteFrom[0].Name = "changed"
			ks.Spec.Timeout.Duration = 0
			ks.Spec.Interval.Duration = 0
		}
		c.Object().GetLabels()[tenancyv1alpha1.TenantLabel] = "changed"
		if !reflect.DeepEqual(tenant, before) {
			t.Errorf("mutating the rendered objects of %s changed the Tenant:\n%+v\nwant\n%+v", tenant.Name, tenant.Spec, before.Spec)
		}

		// And the other way round: objects rendered before keep their
		// values when the Tenant changes.
		out, _ = Tenant(tenant, sel, TenantOptions{})
		rendered := out.Clusters[0].Object().DeepCopyObject()
		if k := tenant.Spec.Stack.Kustomize; k != nil {
			k.Substitute["A"] = "later"
		} else {
			tenant.Spec.Stack.Chart.Values.Raw[0] = 'Y'
		}
		if !reflect.DeepEqual(rendered, out.Clusters[0].Object()) {
			t.Errorf("changing the Tenant %s changed an object rendered before", tenant.Name)
		}
	}
}

func TestTenantSourceVerify(t *testing.T) {
	for _, tenant := range []*tenancyv1alpha1.Tenant{chartTenant(), kustomizeTenant()} {
		src, err := TenantSource(tenant, "ns")
		if err != nil {
			t.Fatal(err)
		}
		if src.Spec.Verify != nil {
			t.Errorf("%s: verify %+v without spec.stack verify", tenant.Name, src.Spec.Verify)
		}
		v := &tenancyv1alpha1.OCIVerification{SecretRef: &meta.LocalObjectReference{Name: "cosign-keys"},
			MatchOIDCIdentity: []tenancyv1alpha1.OIDCIdentityMatch{{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/acme/.*$"}}}
		if k := tenant.Spec.Stack.Kustomize; k != nil {
			k.Verify = v
		} else {
			tenant.Spec.Stack.Chart.Verify = v
		}
		if src, err = TenantSource(tenant, "ns"); err != nil {
			t.Fatal(err)
		}
		want := &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &meta.LocalObjectReference{Name: "cosign-keys"},
			MatchOIDCIdentity: []sourcev1.OIDCIdentityMatch{{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/acme/.*$"}}}
		if !reflect.DeepEqual(src.Spec.Verify, want) {
			t.Errorf("%s: verify = %+v, want %+v", tenant.Name, src.Spec.Verify, want)
		}
	}
}
