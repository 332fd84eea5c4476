package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ControlledBy is Capwright's one ownership rule: an existing object is
// Capwright's for an owner only when its controller reference names that
// owner's UID. Everything Capwright renders carries such a reference, so
// an object of the same name that lacks it — another tool's, or one left
// by an earlier owner of the same name — is never written or deleted.
func ControlledBy(existing metav1.Object, owner types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(existing)
	return owner != "" && ref != nil && ref.UID == owner
}

// ControllerUID is the UID of the controller reference desired carries, ""
// when it has none.
func ControllerUID(desired metav1.Object) types.UID {
	if ref := metav1.GetControllerOfNoCopy(desired); ref != nil {
		return ref.UID
	}
	return ""
}
