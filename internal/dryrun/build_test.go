package dryrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// capiVersion is the Cluster API release whose real components `make
// tools` renders into bin/fixtures/capi/<version>/.
const capiVersion = "v1.14.2"

// coreComponents is the real core-components.yaml of capiVersion. A
// missing fixture fails the test: `make tools` builds it.
func coreComponents(t testing.TB) []byte {
	t.Helper()
	return fixture(t, "capi", capiVersion, "core-components.yaml")
}

// coreKustomization is a Kustomization of the core provider as Capwright
// renders one in substance: clusterctl's labels, variables at their
// defaults but one inline and the ones of a Secret.
func coreKustomization(path string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api"},
		Spec: kustomizev1.KustomizationSpec{
			Path: path,
			PostBuild: &kustomizev1.PostBuild{
				SubstituteStrategy: kustomizev1.SubstituteStrategyAlways,
				Substitute:         map[string]string{"CAPI_INSECURE_DIAGNOSTICS": "true"},
				SubstituteFrom:     []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "capi-variables"}},
			},
			CommonMetadata: &kustomizev1.CommonMetadata{
				Labels:      map[string]string{"cluster.x-k8s.io/provider": "cluster-api", "clusterctl.cluster.x-k8s.io": ""},
				Annotations: map[string]string{"example.com/team": "platform"},
			},
		},
	}
}

func variablesSecret(namespace string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "capi-variables"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func findObject(t *testing.T, objects []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s built", kind, name)
	return nil
}

func TestBuildOfTheCoreProvider(t *testing.T) {
	components := coreComponents(t)
	secrets := fake.NewClientBuilder().WithObjects(variablesSecret("capi-system", map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})).Build()
	for _, tc := range []struct {
		name, path, file string
	}{
		{"artifact", "./", "core-components.yaml"},
		// A release's files, served by the manager under components/.
		{"release", "./components", "components/core-components.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built, err := Build(context.Background(), secrets, coreKustomization(tc.path), map[string][]byte{tc.file: components})
			if err != nil {
				t.Fatal(err)
			}
			if want := bytes.Count(components, []byte("\nkind: ")); len(built.Objects) != want {
				t.Errorf("built %d objects, the components have %d", len(built.Objects), want)
			}
			for _, o := range built.Objects {
				labels := o.GetLabels()
				if labels["kustomize.toolkit.fluxcd.io/name"] != "core-cluster-api" || labels["kustomize.toolkit.fluxcd.io/namespace"] != "capi-system" {
					t.Errorf("%s %s lacks kustomize-controller's owner labels: %v", o.GetKind(), o.GetName(), labels)
				}
				if labels["cluster.x-k8s.io/provider"] != "cluster-api" || o.GetAnnotations()["example.com/team"] != "platform" {
					t.Errorf("%s %s lacks the common metadata: %v %v", o.GetKind(), o.GetName(), labels, o.GetAnnotations())
				}
			}
			manager := findObject(t, built.Objects, "Deployment", "capi-controller-manager")
			containers, _, _ := unstructured.NestedSlice(manager.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			joined := strings.Join(args, " ")
			for _, want := range []string{"--diagnostics-address=:9443", "--insecure-diagnostics=true"} {
				if !strings.Contains(joined, want) {
					t.Errorf("manager args %v lack %s (from the Secret and the inline variables)", args, want)
				}
			}
			if strings.Contains(joined, "${") {
				t.Errorf("manager args %v keep a variable", args)
			}
			if got := built.masks; len(got) == 0 || got[0] != ":9443" {
				t.Errorf("masks = %q, want the Secret's value", got)
			}
		})
	}
}

func TestBuildRefusesUnsafeFiles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	components := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n")
	for name, files := range map[string]map[string][]byte{
		"absolute":   {"/etc/capwright-dryrun-test.yaml": components},
		"parent":     {"../escape.yaml": components},
		"climbing":   {"a/../../escape.yaml": components},
		"empty name": {"": components},
		"too large":  {"a.yaml": make([]byte, maxFilesSize/2), "b.yaml": make([]byte, maxFilesSize/2+1)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Build(context.Background(), nil, coreKustomization("./"), files); err == nil {
				t.Errorf("built %s files", name)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(tmp), "escape.yaml")); err == nil {
		t.Error("a file was written outside the build's directory")
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the builds left %v behind", left)
	}
}

func TestBuildRemovesItsDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	files := map[string][]byte{"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n")}
	ks := coreKustomization("./")
	ks.Spec.PostBuild = nil
	built, err := Build(context.Background(), nil, ks, files)
	if err != nil || len(built.Objects) != 1 {
		t.Fatalf("Build = %v, %v", built, err)
	}
	// A spec.path climbing out stays in the source, as in kustomize-controller.
	ks.Spec.Path = "../../"
	if _, err := Build(context.Background(), nil, ks, files); err != nil {
		t.Errorf("path ../../ did not resolve to the source's root: %v", err)
	}
	ks.Spec.Path = "./missing"
	if _, err := Build(context.Background(), nil, ks, files); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing path gave %v", err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the builds left %v behind", left)
	}
}

// TestSubstitutionSourceReadsOnlyWhatItMay: Flux's substitution may read
// the substituteFrom ConfigMaps and Secrets of the Kustomization's
// namespace, once each, and nothing else.
func TestSubstitutionSourceReadsOnlyWhatItMay(t *testing.T) {
	ctx := context.Background()
	counting := &countingReader{Reader: fake.NewClientBuilder().WithObjects(
		variablesSecret("capi-system", map[string]string{"A": "line\nbreak"}),
		variablesSecret("other", map[string]string{"A": "elsewhere"}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-variables"}, Data: map[string]string{"B": "plain"}},
	).Build()}
	s := newSubstitutionSource(counting, "capi-system")
	for range 3 {
		var secret corev1.Secret
		if err := s.Get(ctx, types.NamespacedName{Namespace: "capi-system", Name: "capi-variables"}, &secret); err != nil || string(secret.Data["A"]) != "line\nbreak" {
			t.Fatalf("Get Secret = %v, %v", secret.Data, err)
		}
		var cm corev1.ConfigMap
		if err := s.Get(ctx, types.NamespacedName{Namespace: "capi-system", Name: "capi-variables"}, &cm); err != nil || cm.Data["B"] != "plain" {
			t.Fatalf("Get ConfigMap = %v, %v", cm.Data, err)
		}
	}
	if counting.gets != 2 {
		t.Errorf("%d reads, want one per object", counting.gets)
	}
	if got := s.secretValues(); len(got) != 2 || got[0] != "line\nbreak" || got[1] != "linebreak" {
		t.Errorf("recorded %q, want the Secret's value as stored and as substituted", got)
	}
	if err := s.Get(ctx, types.NamespacedName{Namespace: "other", Name: "capi-variables"}, &corev1.Secret{}); !errors.Is(err, errNotSubstitution) {
		t.Errorf("a Secret of another namespace: %v", err)
	}
	if err := s.Get(ctx, types.NamespacedName{Namespace: "capi-system", Name: "default"}, &corev1.ServiceAccount{}); !errors.Is(err, errNotSubstitution) {
		t.Errorf("a ServiceAccount: %v", err)
	}
	for name, err := range map[string]error{
		"List":   s.List(ctx, &corev1.SecretList{}),
		"Create": s.Create(ctx, &corev1.Secret{}),
		"Delete": s.Delete(ctx, &corev1.Secret{}),
		"Status": s.Status().Update(ctx, &corev1.Secret{}),
	} {
		if !errors.Is(err, errNotSubstitution) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if counting.gets != 2 {
		t.Errorf("refused requests reached the reader")
	}
}

type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// The objects of a build read back by decoding their YAML once are those
// kyaml's JSON gives, value for value and type for type, over every
// object of Cluster API's core components.
func TestBuiltObjectsReadBackAsKustomizeControllerReadsThem(t *testing.T) {
	nodes, err := kio.FromBytes(coreComponents(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, rn := range nodes {
		got, err := asUnstructured(rn)
		if err != nil {
			t.Fatal(err)
		}
		data, err := rn.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want := &unstructured.Unstructured{}
		if err := want.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("%s %s reads back differently from its JSON", want.GetKind(), want.GetName())
		}
		_ = got.DeepCopy() // panics on a value unstructured objects cannot hold
	}
	if len(nodes) < 20 {
		t.Fatalf("only %d objects in the core components", len(nodes))
	}
}

func BenchmarkReadBack(b *testing.B) {
	nodes, err := kio.FromBytes(coreComponents(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decoded-once", func(b *testing.B) {
		for range b.N {
			for _, rn := range nodes {
				if _, err := asUnstructured(rn.Copy()); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("kyaml-json", func(b *testing.B) {
		for range b.N {
			for _, rn := range nodes {
				data, err := rn.Copy().MarshalJSON()
				if err != nil {
					b.Fatal(err)
				}
				o := &unstructured.Unstructured{}
				if err := o.UnmarshalJSON(data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkBuildOfTheCoreProvider is Build of Cluster API's real core
// components as Capwright renders its Kustomization: the first half of an
// upgrade's dry run.
func BenchmarkBuildOfTheCoreProvider(b *testing.B) {
	components := coreComponents(b)
	secrets := fake.NewClientBuilder().WithObjects(variablesSecret("capi-system", map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})).Build()
	files := map[string][]byte{"core-components.yaml": components}
	ks := coreKustomization("./")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(context.Background(), secrets, ks, files); err != nil {
			b.Fatal(err)
		}
	}
}

// dollars are objects whose text Flux's substitution changes, and does
// not, in every place a '$' can be.
const dollars = `apiVersion: v1
kind: ConfigMap
metadata:
  name: dollars
  # a comment naming ${CAPI_DIAGNOSTICS_ADDRESS}
data:
  variable: ${CAPI_DIAGNOSTICS_ADDRESS}
  defaulted: ${UNSET:=fallback}
  escaped: 'cost $$5'
  regex: '^[a-z]+$'
  lone: "$ {not a variable}"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: escaped-only
data:
  price: "$$10"
  ${CAPI_INSECURE_DIAGNOSTICS}: key
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: no-variable
data:
  pattern: "^v[0-9]+$"
  trailing: "a$"
  number: 1e3
  when: 2001-12-14
`

// fluxBuild is what kustomize-controller builds for ks over files, the
// way it does: every object substituted in, and read back through JSON.
func fluxBuild(t *testing.T, secrets client.Client, ks *kustomizev1.Kustomization, files map[string][]byte) ([]*unstructured.Unstructured, error) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ks)
	if err != nil {
		t.Fatal(err)
	}
	u := unstructured.Unstructured{Object: obj}
	if _, err := fluxkustomize.NewGenerator(dir, u).WriteFile(dir); err != nil {
		t.Fatal(err)
	}
	resources, err := fluxkustomize.SecureBuild(dir, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, res := range resources.Resources() {
		if _, err := fluxkustomize.SubstituteVariables(context.Background(), secrets, u, res, fluxkustomize.SubstituteWithAlways(true)); err != nil {
			return nil, fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
		}
		data, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		o.SetLabels(merged(o.GetLabels(), map[string]string{
			"kustomize.toolkit.fluxcd.io/name": ks.Name, "kustomize.toolkit.fluxcd.io/namespace": ks.Namespace,
		}, ks.Spec.CommonMetadata.Labels))
		o.SetAnnotations(merged(o.GetAnnotations(), ks.Spec.CommonMetadata.Annotations))
		out = append(out, o)
	}
	return out, nil
}

// Build substitutes only in the objects whose text has a variable or an
// escape, and builds what kustomize-controller builds, which substitutes
// in every object: the same objects, value for value, over Cluster API's
// core components and objects with a '$' in every place.
func TestBuildSubstitutesAsFluxDoes(t *testing.T) {
	secrets := fake.NewClientBuilder().WithObjects(variablesSecret("capi-system", map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})).Build()
	files := map[string][]byte{"core-components.yaml": coreComponents(t), "dollars.yaml": []byte(dollars)}
	ks := coreKustomization("./")
	built, err := Build(context.Background(), secrets, ks, files)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fluxBuild(t, secrets, ks, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(built.Objects) != len(want) {
		t.Fatalf("built %d objects, Flux builds %d", len(built.Objects), len(want))
	}
	for i, o := range built.Objects {
		if !reflect.DeepEqual(o.Object, want[i].Object) {
			got, _ := json.Marshal(o.Object)
			flux, _ := json.Marshal(want[i].Object)
			t.Errorf("%s %s differs from Flux's build:\n got %s\nflux %s", o.GetKind(), o.GetName(), got, flux)
		}
	}
	// The objects above did go through the substitution.
	for name, want := range map[string]map[string]string{
		"dollars":      {"variable": ":9443", "defaulted": "fallback", "escaped": "cost $5", "regex": "^[a-z]+$", "lone": "$ {not a variable}"},
		"escaped-only": {"price": "$10", "true": "key"},
	} {
		got, _, _ := unstructured.NestedStringMap(findObject(t, built.Objects, "ConfigMap", name).Object, "data")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ConfigMap %s data = %v, want %v", name, got, want)
		}
	}
}

// A variable Flux refuses fails the build as it fails Flux's, though no
// object of the build has a variable to substitute.
func TestBuildRefusesABadVariableAsFluxDoes(t *testing.T) {
	secrets := fake.NewClientBuilder().WithObjects(variablesSecret("capi-system", map[string]string{"not-a-name": "x"})).Build()
	files := map[string][]byte{"plain.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  pattern: \"^v$\"\n")}
	ks := coreKustomization("./")
	_, err := Build(context.Background(), secrets, ks, files)
	_, want := fluxBuild(t, secrets, ks, files)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("Build: %v\nFlux:  %v", err, want)
	}
}
