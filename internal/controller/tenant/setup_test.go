package tenant

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// TestCacheHoldsOnlyWhatCapwrightWrote: the manager's cache of every
// management kind asks the API server only for objects carrying the
// tenant label.
func TestCacheHoldsOnlyWhatCapwrightWrote(t *testing.T) {
	byObject := CacheByObject()
	kinds := map[string]bool{}
	for obj, opts := range byObject {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		kinds[kind] = true
		if opts.Label == nil {
			t.Fatalf("%s: no label selector", kind)
		}
		if !opts.Label.Matches(labels.Set{tenancyv1alpha1.TenantLabel: "team-a"}) {
			t.Errorf("%s: the selector %q leaves out a tenant's object", kind, opts.Label)
		}
		if opts.Label.Matches(labels.Set{"app": "other"}) {
			t.Errorf("%s: the selector %q takes in an object without the tenant label", kind, opts.Label)
		}
	}
	for _, gvk := range managementKinds {
		if !kinds[gvk.Kind] {
			t.Errorf("the cache of %s is not restricted", gvk.Kind)
		}
	}
}
