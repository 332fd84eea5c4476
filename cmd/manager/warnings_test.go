package main

import (
	"context"
	"reflect"
	"testing"
)

type recordedWarnings []string

func (r *recordedWarnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _, message string) {
	*r = append(*r, message)
}

// TestAPIWarningsDropOnlyFluxsFinalizerName: the API server's warning
// about Flux's finalizer name (exactly as kube-apiserver words it) is
// dropped; every other warning reaches the log.
func TestAPIWarningsDropOnlyFluxsFinalizerName(t *testing.T) {
	var got recordedWarnings
	w := apiWarnings{next: &got}
	for _, m := range []string{
		`metadata.finalizers: "finalizers.fluxcd.io": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers`,
		`metadata.finalizers: "example.com": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers`,
		`source.toolkit.fluxcd.io/v1beta2 OCIRepository is deprecated, use source.toolkit.fluxcd.io/v1 OCIRepository`,
	} {
		w.HandleWarningHeaderWithContext(context.Background(), 299, "", m)
	}
	want := recordedWarnings{
		`metadata.finalizers: "example.com": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers`,
		`source.toolkit.fluxcd.io/v1beta2 OCIRepository is deprecated, use source.toolkit.fluxcd.io/v1 OCIRepository`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings logged:\n%q\nwant:\n%q", got, want)
	}
}
