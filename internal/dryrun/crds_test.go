package dryrun

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crd is a CRD of clusters.cluster.x-k8s.io with versions "name:flags",
// flags s (served) and S (storage).
func crd(versions ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clusters.cluster.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cluster.x-k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Cluster", Plural: "clusters"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for _, v := range versions {
		name, flags, _ := strings.Cut(v, ":")
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: name, Served: strings.ContainsRune(flags, 's'), Storage: strings.ContainsRune(flags, 'S'),
		})
	}
	return c
}

func TestRollbackBlocked(t *testing.T) {
	for _, tc := range []struct {
		name       string
		live, next *apiextensionsv1.CustomResourceDefinition
		want       string
	}{
		{"same", crd("v1beta1:s", "v1beta2:sS"), crd("v1beta1:s", "v1beta2:sS"), ""},
		{"new version served, storage kept", crd("v1beta1:sS"), crd("v1beta1:sS", "v1beta2:s"), ""},
		{"storage moves", crd("v1beta1:sS", "v1beta2:s"), crd("v1beta1:s", "v1beta2:sS"),
			"CustomResourceDefinition clusters.cluster.x-k8s.io: the storage version moves from v1beta1 to v1beta2"},
		{"stops serving", crd("v1alpha4:s", "v1beta1:sS"), crd("v1alpha4:", "v1beta1:sS"),
			"CustomResourceDefinition clusters.cluster.x-k8s.io: it stops serving v1alpha4"},
		{"drops versions", crd("v1alpha3:s", "v1alpha4:s", "v1beta1:sS"), crd("v1beta1:sS"),
			"CustomResourceDefinition clusters.cluster.x-k8s.io: it stops serving v1alpha3, v1alpha4"},
		{"both", crd("v1alpha4:s", "v1beta1:sS"), crd("v1beta1:s", "v1beta2:sS"),
			"CustomResourceDefinition clusters.cluster.x-k8s.io: the storage version moves from v1beta1 to v1beta2; it stops serving v1alpha4"},
		{"a version not served now", crd("v1alpha4:", "v1beta1:sS"), crd("v1beta1:sS"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rollbackBlocked(versionsOf(tc.live), versionsOf(tc.next)); got != tc.want {
				t.Errorf("rollbackBlocked = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIntroducing(t *testing.T) {
	crds := []*crdVersions{versionsOf(crd("v1beta1:s", "v1beta2:sS", "v1alpha4:"))}
	for gvk, want := range map[schema.GroupVersionKind]string{
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}:  "clusters.cluster.x-k8s.io",
		{Group: "cluster.x-k8s.io", Version: "v1alpha4", Kind: "Cluster"}: "",
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}:  "",
		{Group: "other.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}:    "",
	} {
		if got := introducing(crds, gvk); got != want {
			t.Errorf("introducing(%v) = %q, want %q", gvk, got, want)
		}
	}
}

// TestCRDOfTheBuiltObject: what the dry run reads of a built CRD in place
// is what it reads of the typed one.
func TestCRDOfTheBuiltObject(t *testing.T) {
	typed := crd("v1alpha4:", "v1beta1:s", "v1beta2:sS")
	got, err := crdOf(crdObject(t, typed))
	if err != nil {
		t.Fatal(err)
	}
	if want := versionsOf(typed); !reflect.DeepEqual(got, want) {
		t.Errorf("crdOf = %+v, want %+v", got, want)
	}
	if got, err := crdOf(configMap("a", "b")); got != nil || err != nil {
		t.Errorf("crdOf(ConfigMap) = %+v, %v", got, err)
	}
	broken := crdObject(t, typed)
	broken.Object["spec"].(map[string]any)["versions"] = "v1"
	if _, err := crdOf(broken); err == nil {
		t.Error("a CRD whose spec.versions is a string was read")
	}
}
