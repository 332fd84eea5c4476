package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestSchemeKnowsTenant(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&Tenant{}, &TenantList{}} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0].GroupVersion() != GroupVersion {
			t.Errorf("%T: %v %v", obj, gvks, err)
		}
	}
	if gvks, _, _ := scheme.ObjectKinds(&Tenant{}); gvks[0].Kind != TenantKind {
		t.Errorf("kind %s, want %s", gvks[0].Kind, TenantKind)
	}
}

func TestNamespaceDefaults(t *testing.T) {
	tenant := &Tenant{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	if ns := tenant.ManagementNamespace(); ns != "tenant-team-a" {
		t.Errorf("management namespace = %q", ns)
	}
	if ns := tenant.TargetNamespace(); ns != "team-a" {
		t.Errorf("target namespace = %q", ns)
	}
	tenant.Spec.Management = &ManagementSpec{Namespace: "team-a-clusters"}
	tenant.Spec.Stack.TargetNamespace = "platform"
	if tenant.ManagementNamespace() != "team-a-clusters" || tenant.TargetNamespace() != "platform" {
		t.Errorf("explicit namespaces ignored: %q %q", tenant.ManagementNamespace(), tenant.TargetNamespace())
	}
}
