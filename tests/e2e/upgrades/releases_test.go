package upgrades

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// baseVersion is the real Cluster API release the suite installs; the
// derived releases are patch releases of it.
const baseVersion = "v1.14.2"

// releaseMarker is an annotation each derived release puts on its CRDs
// (and only there): a CRD that carries it came from that release.
const releaseMarker = "upgrades.capwright.test/release"

// brokenImage is the manager image of a derived release: on a host that
// cannot resolve, so its pod never starts (the plane's kwok reports
// ImagePullBackOff for images on .invalid hosts, as a kubelet would).
func brokenImage(version string) string {
	return "registry.invalid/cluster-api/cluster-api-controller:" + version
}

// edit changes one object of a release's components.
type edit func(o *unstructured.Unstructured)

// publishDerived publishes version on the stand-in for github.com: the
// real v1.14.2 release of Cluster API's core provider, its
// metadata.yaml as is (the v1.14 series, contract v1beta2), every CRD
// marked with version and each object passed through edits.
func publishDerived(t *testing.T, version string, edits ...edit) {
	t.Helper()
	metadata, err := os.ReadFile(env.CAPIComponentsPath(baseVersion, "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	components, err := os.ReadFile(env.CAPIComponentsPath(baseVersion, "core-components.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, doc := range strings.Split(string(components), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			t.Fatalf("the real core components do not decode: %v", err)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[releaseMarker] = version
			o.SetAnnotations(a)
		}
		for _, e := range edits {
			e(o)
		}
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	releases.Publish("kubernetes-sigs", "cluster-api", version, map[string][]byte{
		"metadata.yaml":        metadata,
		"core-components.yaml": out.Bytes(),
	})
}

// managerImage sets the image of the manager Deployment's containers.
func managerImage(image string) edit {
	return func(o *unstructured.Unstructured) {
		if o.GetKind() != "Deployment" {
			return
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c.(map[string]any)["image"] = image
		}
		_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
	}
}

// selectorLabel adds a label to the manager Deployment's selector and pod
// template: the API server refuses to change a Deployment's selector.
func selectorLabel(key, value string) edit {
	return func(o *unstructured.Unstructured) {
		if o.GetKind() != "Deployment" {
			return
		}
		for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
			labels, _, _ := unstructured.NestedStringMap(o.Object, path...)
			labels[key] = value
			_ = unstructured.SetNestedStringMap(o.Object, labels, path...)
		}
	}
}

// newStorageVersion gives CRD name a new version, a copy of its storage
// version's schema, and makes it the storage version: objects written
// from then on are stored in a version the release before does not know.
func newStorageVersion(name, version string) edit {
	return func(o *unstructured.Unstructured) {
		if o.GetKind() != "CustomResourceDefinition" || o.GetName() != name {
			return
		}
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		var stored map[string]any
		for _, v := range versions {
			v := v.(map[string]any)
			if v["storage"] == true {
				stored = v
			}
		}
		if stored == nil {
			panic(fmt.Sprintf("CRD %s has no storage version", name))
		}
		next := runtimeDeepCopy(stored)
		next["name"] = version
		stored["storage"] = false
		versions = append(versions, next)
		_ = unstructured.SetNestedSlice(o.Object, versions, "spec", "versions")
	}
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}
