package provider

import (
	"context"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/render"
)

// TestInstallerComesBeforeTheFluxObjects: the installer ServiceAccount
// and its binding are written before the Flux object that names them, the
// Kustomization, so Flux's first apply already runs with its permissions.
// (The OCIRepository, which does not, is written ahead: TestFetchAhead.)
func TestInstallerComesBeforeTheFluxObjects(t *testing.T) {
	env, core, _, _ := installCore(t)
	order := map[string]int{}
	for i, w := range env.fluxWrites() {
		if _, seen := order[w.Kind]; !seen {
			order[w.Kind] = i
		}
	}
	for _, installer := range []string{"ServiceAccount", "ClusterRoleBinding"} {
		for _, flux := range []string{"Kustomization"} {
			i, ok := order[installer]
			j, fok := order[flux]
			if !ok || !fok || i > j {
				t.Errorf("%s written at %d (%v), %s at %d (%v): want the installer first; writes %v", installer, i, ok, flux, j, fok, env.fluxWrites())
			}
		}
	}
	ctx := context.Background()
	var sa corev1.ServiceAccount
	if err := env.client.Get(ctx, ctrl.ObjectKey{Namespace: "capi-system", Name: "core-cluster-api-installer"}, &sa); err != nil {
		t.Fatal(err)
	}
	if !render.ControlledBy(&sa, core.UID) {
		t.Errorf("the installer ServiceAccount is not controlled by the provider: %+v", sa.OwnerReferences)
	}
	var ks kustomizev1.Kustomization
	if err := env.client.Get(ctx, ctrl.ObjectKey{Namespace: "capi-system", Name: "core-cluster-api"}, &ks); err != nil {
		t.Fatal(err)
	}
	if ks.Spec.ServiceAccountName != sa.Name {
		t.Errorf("Kustomization serviceAccountName %q, want %q", ks.Spec.ServiceAccountName, sa.Name)
	}
}

// TestInstallerNeverTakesOverSomeoneElsesObjects: a ServiceAccount or
// ClusterRoleBinding of the installer's name that is not the provider's
// is left as it is, the provider says which object is in the way, and
// no Flux object is written that would apply as someone else's identity.
func TestInstallerNeverTakesOverSomeoneElsesObjects(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	url := pushCore(t, reg, "v1.14.2", "v1beta2").URL
	for _, tt := range []struct {
		name    string
		foreign ctrl.Object
		want    string
	}{
		{"ServiceAccount", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "core-cluster-api-installer"}},
			"ServiceAccount capi-system/core-cluster-api-installer exists and was not created by Capwright for this provider"},
		{"ClusterRoleBinding", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "capwright-provider-installer:capi-system:core-cluster-api"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}},
			"ClusterRoleBinding capwright-provider-installer:capi-system:core-cluster-api exists and was not created by Capwright for this provider"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			core := coreProvider(url, "v1.14.2")
			env := newFakeEnv(t, kindFor(core), core, tt.foreign)
			_, err := env.reconcile(core)
			got := env.get(core)
			msg := ""
			if c := condition(got, v1alpha1.ReadyCondition); c != nil {
				msg = c.Message
			}
			if !strings.Contains(msg, tt.want) && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Ready message %q, error %v; want them to say %q", msg, err, tt.want)
			}
			for _, w := range env.fluxWrites() {
				if w.Kind == tt.name || w.Kind == "Kustomization" {
					t.Errorf("wrote %s while %s is someone else's", w, tt.name)
				}
			}
		})
	}
}

// TestFinalizeRemovesTheInstallerBinding: once Flux has nothing left to
// prune, the provider's installer binding goes with it; a binding of the
// same name that is not the provider's stays.
func TestFinalizeRemovesTheInstallerBinding(t *testing.T) {
	core := deleting(coreProvider("oci://registry.invalid/capwright/manifests/core-cluster-api", "v1.14.2"))
	inst, err := render.ProviderInstaller(render.Input{Provider: core, Kind: "CoreProvider"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	env := newFakeEnv(t, kindFor(core), core, inst.ClusterRoleBinding)
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Get(ctx, ctrl.ObjectKeyFromObject(inst.ClusterRoleBinding), &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the installer binding after the provider let go: %v, want it deleted", err)
	}

	foreign := inst.ClusterRoleBinding.DeepCopy()
	foreign.Labels = map[string]string{"team": "platform"}
	core = deleting(coreProvider("oci://registry.invalid/capwright/manifests/core-cluster-api", "v1.14.2"))
	env = newFakeEnv(t, kindFor(core), core, foreign)
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Get(ctx, ctrl.ObjectKeyFromObject(foreign), &rbacv1.ClusterRoleBinding{}); err != nil {
		t.Errorf("a binding of the installer's name that is not the provider's: %v, want it kept", err)
	}
}

// TestInstallerIsReadOncePerSpec: the installer's ServiceAccount and
// binding are read uncached, so a provider that reconciles on every
// status change of its Flux objects reads them once, not every time; once
// Flux fails to install, the next reconcile reads them again and restores
// a binding someone removed.
func TestInstallerIsReadOncePerSpec(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	core := coreProvider(pushCore(t, reg, "v1.14.2", "v1beta2").URL, "v1.14.2")
	env := newFakeEnv(t, kindFor(core), core)
	for range 5 {
		if _, err := env.reconcile(core); err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []string{"ServiceAccount", "ClusterRoleBinding"} {
		if n := env.reads(kind); n != 1 {
			t.Errorf("five reconciles read the installer's %s %d times, want once", kind, n)
		}
	}

	ctx := context.Background()
	crb := &rbacv1.ClusterRoleBinding{}
	if err := env.client.Get(ctx, ctrl.ObjectKey{Name: "capwright-provider-installer:capi-system:core-cluster-api"}, crb); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Delete(ctx, crb); err != nil {
		t.Fatal(err)
	}
	var ks kustomizev1.Kustomization
	if err := env.client.Get(ctx, ctrl.ObjectKey{Namespace: "capi-system", Name: "core-cluster-api"}, &ks); err != nil {
		t.Fatal(err)
	}
	ks.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ReconciliationFailed",
		ObservedGeneration: ks.Generation, LastTransitionTime: metav1.Now(),
		Message: `deployments.apps "capi-controller-manager" is forbidden: User "system:serviceaccount:capi-system:core-cluster-api-installer" cannot patch resource`}}
	if err := env.client.Status().Update(ctx, &ks); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := env.reconcile(core); err != nil {
			t.Fatal(err)
		}
	}
	if c := condition(env.get(core), v1alpha1.InstalledCondition); c == nil || c.Reason != v1alpha1.InstallFailedReason {
		t.Fatalf("Installed %+v, want InstallFailed", c)
	}
	if err := env.client.Get(ctx, ctrl.ObjectKeyFromObject(crb), &rbacv1.ClusterRoleBinding{}); err != nil {
		t.Errorf("the installer binding after Flux failed: %v, want it restored", err)
	}
}
