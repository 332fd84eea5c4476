package render

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestControlledBy(t *testing.T) {
	yes, no := true, false
	ref := func(uid string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "providers.capwright.io/v1alpha1", Kind: "CoreProvider", Name: "cluster-api", UID: types.UID(uid), Controller: controller}
	}
	for _, tt := range []struct {
		name  string
		refs  []metav1.OwnerReference
		owner string
		want  bool
	}{
		{"controller reference to the owner", []metav1.OwnerReference{ref("u1", &yes)}, "u1", true},
		{"another owner's object", []metav1.OwnerReference{{Kind: "HelmRelease", Name: "x", UID: "u2", Controller: &yes}}, "u1", false},
		{"owned but not controlled", []metav1.OwnerReference{ref("u1", &no)}, "u1", false},
		{"no owner at all", nil, "u1", false},
		{"an empty owner UID matches nothing", []metav1.OwnerReference{ref("u1", &yes)}, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{OwnerReferences: tt.refs}
			if got := ControlledBy(obj, types.UID(tt.owner)); got != tt.want {
				t.Errorf("ControlledBy = %v, want %v", got, tt.want)
			}
		})
	}
}
