package resolve

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

func TestResolutionsAreAskedAgainWhenTheyMayBeStale(t *testing.T) {
	const ref, digest = "registry.example.com/core:v1.14.2", "sha256:1111"
	t0 := time.Unix(1000, 0)
	p := func(generation int64, request string) *query {
		o := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{UID: "u1", Generation: generation}}
		if request != "" {
			o.Annotations = map[string]string{meta.ReconcileRequestAnnotation: request}
		}
		q := (&Resolver{}).about(o)
		return &q
	}
	var r Resolutions
	r.put(p(1, ""), ref, digest, kept{}, t0, 0)
	for _, tt := range []struct {
		name string
		obj  *query
		ref  string
		at   time.Duration
		want bool
	}{
		{"a reconcile woken by Flux's progress", p(1, ""), ref, time.Second, true},
		{"older than the limit", p(1, ""), ref, time.Minute, false},
		{"a new generation", p(2, ""), ref, time.Second, false},
		{"a reconcile request", p(1, "2026-11-23T10:00:00Z"), ref, time.Second, false},
		{"another reference", p(1, ""), "registry.example.com/core:v1.14.3", time.Second, false},
	} {
		got, _, ok := r.get(tt.obj, tt.ref, time.Minute, t0.Add(tt.at))
		if ok != tt.want || (ok && got != digest) {
			t.Errorf("%s: get = %q, %v; want found=%v", tt.name, got, ok, tt.want)
		}
	}
	r.forget("u1")
	if _, _, ok := r.get(p(1, ""), ref, time.Minute, t0); ok {
		t.Error("a forgotten provider's resolution is still found")
	}
	var none *Resolutions
	if _, _, ok := none.get(p(1, ""), ref, time.Minute, t0); ok {
		t.Error("a nil Resolutions found something")
	}
}
