package render_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

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
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(files[render.AdditionalManifestsFile]), 4096)
		for doc := 1; ; doc++ {
			var obj map[string]any
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("packed document %d does not decode: %v", doc, err)
			}
			if kind, _ := obj["kind"].(string); kind == "" || kind == "Secret" {
				t.Errorf("packed document %d %v: kind %q", doc, obj, kind)
			}
		}
	})
}
