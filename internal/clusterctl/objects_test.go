package clusterctl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// TestDecodeAgreesWithAPIMachinery: the yaml.v3 decoding of every document
// of the real Cluster API components, both releases, gives exactly the
// values k8s.io/apimachinery's YAML decoding (sigs.k8s.io/yaml, the one
// the manager used before) gives.
func TestDecodeAgreesWithAPIMachinery(t *testing.T) {
	for _, version := range []string{clusterctltest.Current, clusterctltest.Previous} {
		for _, file := range []string{"core-components.yaml", "bootstrap-components.yaml", "control-plane-components.yaml"} {
			data := clusterctltest.Read(t, version, file)
			objs, err := decodeObjects(data)
			if err != nil {
				t.Fatalf("%s %s: %v", version, file, err)
			}
			want := apimachineryObjects(t, data)
			if len(objs) != len(want) || len(objs) < 10 {
				t.Fatalf("%s %s: %d objects, apimachinery decodes %d", version, file, len(objs), len(want))
			}
			for i, o := range objs {
				if !reflect.DeepEqual(o.Object, want[i]) {
					t.Errorf("%s %s: %s decodes differently from apimachinery", version, file, o)
				}
			}
		}
	}
}

// apimachineryObjects decodes data as decodeObjects did before yaml.v3.
func apimachineryObjects(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []map[string]any
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var content map[string]any
		if err := utilyaml.Unmarshal(doc, &content); err != nil {
			t.Fatal(err)
		}
		if len(content) > 0 {
			out = append(out, content)
		}
	}
}

// TestDecodeDocument pins the values of the YAML forms the real
// components do not use, and what is refused.
func TestDecodeDocument(t *testing.T) {
	const head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	tests := []struct {
		name, yaml string
		want       map[string]any // under data
		err        string
	}{
		{name: "scalars", yaml: "data: {i: 42, neg: -7, hex: 0x1F, f: 1.5, e: 1e3, t: true, n: null, s: '42', ts: 2001-12-14t21:59:43.10-05:00, big: 18446744073709551615}",
			want: map[string]any{"i": int64(42), "neg": int64(-7), "hex": int64(31), "f": 1.5, "e": 1000.0, "t": true, "n": nil, "s": "42",
				"ts": "2001-12-14t21:59:43.10-05:00", "big": 1.8446744073709552e19}},
		{name: "YAML 1.1 booleans stay strings", yaml: "data: {a: yes, b: off, c: 'on'}",
			want: map[string]any{"a": "yes", "b": "off", "c": "on"}},
		{name: "keys that are not strings", yaml: "data: {1: one, true: yes}",
			want: map[string]any{"1": "one", "true": "yes"}},
		{name: "anchors, aliases and merge keys", yaml: "data:\n  base: &b {x: 1, y: [a, b]}\n  copy: *b\n  merged: {<<: *b, y: c}\n",
			want: map[string]any{"base": map[string]any{"x": int64(1), "y": []any{"a", "b"}}, "copy": map[string]any{"x": int64(1), "y": []any{"a", "b"}},
				"merged": map[string]any{"x": int64(1), "y": "c"}}},
		{name: "a key twice", yaml: "data: {a: 1, a: 2}", err: `mapping key "a" already defined`},
		{name: "not a number JSON holds", yaml: "data: {a: .inf}", err: "not a number JSON can hold"},
		{name: "excessive aliasing", yaml: "data:\n" + laughs(), err: "excessive aliasing"},
		{name: "not a mapping", yaml: "- a\n- b\n", err: "not a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.yaml
			if tt.want != nil || strings.HasPrefix(doc, "data") {
				doc = head + doc
			}
			got, err := decodeDocument([]byte(doc))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got["data"], tt.want) {
				t.Errorf("data = %#v, want %#v", got["data"], tt.want)
			}
		})
	}
}

// laughs is a YAML billion laughs: nine levels of nine aliases each.
func laughs() string {
	var b strings.Builder
	b.WriteString("  l0: &l0 [lol]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("  l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}
