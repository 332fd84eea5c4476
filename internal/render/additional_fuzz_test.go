package render_test

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/render"
)

// FuzzAdditionalManifests feeds arbitrary ConfigMap data to the parser of
// spec.additionalManifests. It never panics; what it accepts is the same
// bytes every time, unpacks as one manifests file, and every object in it
// decodes with a kind, and never as a Secret.
func FuzzAdditionalManifests(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: b\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
		"apiVersion: v1\nkind: List\nitems: []\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"j\"}}",
		"---\n",
		"- a\n- b\n",
	} {
		f.Add(seed)
	}
	scope := func(gvk schema.GroupVersionKind) (bool, bool) {
		switch gvk.Kind {
		case "ConfigMap", "Deployment":
			return true, true
		case "ClusterRole", "Namespace":
			return false, true
		}
		return false, false
	}
	f.Fuzz(func(t *testing.T, manifests string) {
		packed, err := render.AdditionalManifests("ConfigMap capi-system/extra", manifests, "capi-system", scope)
		if err != nil {
			return
		}
		again, err := render.AdditionalManifests("ConfigMap capi-system/extra", manifests, "capi-system", scope)
		if err != nil || !bytes.Equal(packed, again) {
			t.Fatalf("a second run over the same input gave other bytes (%v)", err)
		}
		files, err := artifact.Untar(packed, 64<<20)
		if err != nil || len(files) != 1 || files[render.AdditionalManifestsFile] == nil {
			t.Fatalf("the packed artifact holds %d files (%v), want %s only", len(files), err, render.AdditionalManifestsFile)
		}
		for _, doc := range strings.Split(string(files[render.AdditionalManifestsFile]), "---\n") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var obj struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind == "" || obj.Kind == "Secret" {
				t.Errorf("packed document %q: kind %q (%v)", doc, obj.Kind, err)
			}
		}
	})
}
