package contract

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/conditions"
	"github.com/capwright/capwright/internal/plan"
)

const revision = "v2@sha256:aaaa"

// kustomizeCP is a control plane with a kustomize backend (its applier's
// revision is easy to make current), its conditions initialized.
func kustomizeCP(t *testing.T) (*clustersv1alpha1.CapwrightControlPlane, Facts, Desired) {
	t.Helper()
	f := controlPlane(func(cp *clustersv1alpha1.CapwrightControlPlane) {
		cp.Spec.Backend.Chart = nil
		cp.Spec.Backend.Kustomize = &clustersv1alpha1.KustomizeBackend{
			OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: "oci://registry.example.com/hcp"}, Tag: "v2"}
	})
	cp := f.Object.(*clustersv1alpha1.CapwrightControlPlane)
	conditions.Init(cp, []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.KubeconfigReadyCondition,
		clustersv1alpha1.AvailableCondition, clustersv1alpha1.PausedCondition}, clustersv1alpha1.ReconcilingReason, false,
		clustersv1alpha1.DeletingCondition, clustersv1alpha1.NotDeletingReason)
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	return cp, f, d
}

// fluxReady is the backend's Flux objects as the cache holds them once
// Flux installed them; hash is the applier's applied hash.
func fluxReady(d Desired, hash string) plan.Observed {
	ns, name := d.Objects.Source.Namespace, d.Objects.Source.Name
	ready := []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: "done", ObservedGeneration: 1}}
	src := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Status: sourcev1.OCIRepositoryStatus{ObservedGeneration: 1, Conditions: ready, Artifact: &meta.Artifact{Revision: revision}}}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1,
		Annotations: map[string]string{plan.HashAnnotation: hash}},
		Status: kustomizev1.KustomizationStatus{ObservedGeneration: 1, Conditions: ready, LastAppliedRevision: revision}}
	return plan.Observed{
		plan.ObservedKey(sourcev1.OCIRepositoryKind, ns, name):    src,
		plan.ObservedKey(kustomizev1.KustomizationKind, ns, name): ks,
	}
}

func cond(t *testing.T, obj conditions.Object, typ string, status metav1.ConditionStatus, reason string, message ...string) {
	t.Helper()
	c := conditions.Get(obj, typ)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %+v; want %s %s", typ, c, status, reason)
	}
	for _, m := range message {
		if !strings.Contains(c.Message, m) {
			t.Fatalf("%s message %q; want it to say %q", typ, c.Message, m)
		}
	}
}

func TestFoldControlPlaneAvailable(t *testing.T) {
	cp, f, d := kustomizeCP(t)
	cp.Spec.ControlPlaneEndpoint = clustersv1alpha1.APIEndpoint{Host: "10.0.0.1", Port: 6443} // the sync wrote it
	o := Observed{Synced: true, Flux: fluxReady(d, d.AppliedHash),
		View:       &ViewRead{View: View{Ready: true, Endpoint: cp.Spec.ControlPlaneEndpoint, Version: "v1.31.2+k3s1"}, OK: true, Retry: f.Resync},
		Kubeconfig: &KubeconfigSeen{}}
	out, err := FoldControlPlane(cp, f, &d, o, nil)
	if err != nil || out.RequeueAfter != f.Resync || out.Hold {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	cond(t, cp, clustersv1alpha1.BackendReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason)
	cond(t, cp, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason,
		"Secret team/alpha-kubeconfig holds the kubeconfig of Secret team/alpha-admin-kubeconfig")
	cond(t, cp, clustersv1alpha1.AvailableCondition, metav1.ConditionTrue, clustersv1alpha1.AvailableReason, "serves Kubernetes v1.31.2 at 10.0.0.1:6443")
	cond(t, cp, clustersv1alpha1.PausedCondition, metav1.ConditionFalse, clustersv1alpha1.NotPausedReason)
	if !ptr.Deref(cp.Status.Initialization.ControlPlaneInitialized, false) || cp.Status.Version != "v1.31.2" || len(cp.Status.Backend) != 2 {
		t.Fatalf("status %+v", cp.Status)
	}
	if want := []clustersv1alpha1.StatusVersion{{Version: "v1.31.2"}}; !reflect.DeepEqual(cp.Status.Versions, want) {
		t.Errorf("status.versions %+v, want %+v (Cluster API v1.14's contract)", cp.Status.Versions, want)
	}

	// Upgrading: both fields keep the version it runs until the backend
	// is ready at the new one.
	cp.Spec.Version = "v1.32.0"
	if _, err := FoldControlPlane(cp, f, &d, o, nil); err != nil {
		t.Fatal(err)
	}
	if cp.Status.Version != "v1.31.2" || !reflect.DeepEqual(cp.Status.Versions, []clustersv1alpha1.StatusVersion{{Version: "v1.31.2"}}) {
		t.Errorf("while upgrading: status.version %q, status.versions %+v; want the version it runs", cp.Status.Version, cp.Status.Versions)
	}
}

func TestFoldControlPlaneWaits(t *testing.T) {
	t.Run("a stale applier", func(t *testing.T) {
		cp, f, d := kustomizeCP(t)
		o := Observed{Synced: true, Flux: fluxReady(d, "an older hash"), View: &ViewRead{Reason: clustersv1alpha1.StatusObjectNotFoundReason,
			Message: "HostedControlPlane team/alpha (spec.statusFrom) does not exist yet", Retry: PollWhileWaiting}, Kubeconfig: &KubeconfigSeen{}}
		out, err := FoldControlPlane(cp, f, &d, o, nil)
		if err != nil || out.RequeueAfter != time.Second {
			t.Fatalf("outcome %+v, %v; want a look again in a second", out, err)
		}
		cond(t, cp, clustersv1alpha1.BackendReadyCondition, metav1.ConditionUnknown, clustersv1alpha1.InstallingReason, "waiting to see the new spec of Kustomization team/controlplane-alpha-cp")
		cond(t, cp, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionUnknown, clustersv1alpha1.WaitingForBackendReason, "before reading Secret team/alpha-admin-kubeconfig")
		cond(t, cp, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, clustersv1alpha1.StatusObjectNotFoundReason, "does not exist yet")
	})
	t.Run("a kubeconfig without its key", func(t *testing.T) {
		cp, f, d := kustomizeCP(t)
		cp.Spec.ControlPlaneEndpoint = clustersv1alpha1.APIEndpoint{Host: "cp", Port: 443}
		o := Observed{Synced: true, Flux: fluxReady(d, d.AppliedHash), View: &ViewRead{View: View{Ready: true}, OK: true, Retry: f.Resync},
			Kubeconfig: &KubeconfigSeen{Reason: clustersv1alpha1.KubeconfigKeyMissingReason, Message: `Secret team/alpha-admin-kubeconfig has no key "value"`}}
		out, err := FoldControlPlane(cp, f, &d, o, nil)
		if err != nil || out.RequeueAfter != PollWhileWaiting {
			t.Fatalf("outcome %+v, %v", out, err)
		}
		cond(t, cp, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionFalse, clustersv1alpha1.KubeconfigKeyMissingReason, "has no key")
		cond(t, cp, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, clustersv1alpha1.WaitingForBackendReason, "waiting for the kubeconfig (KubeconfigReady)")
		if cp.Status.Initialization.ControlPlaneInitialized != nil {
			t.Fatal("initialized without a kubeconfig")
		}
	})
	t.Run("a view the backend says is not ready", func(t *testing.T) {
		cp, f, d := kustomizeCP(t)
		o := Observed{Synced: true, Flux: fluxReady(d, d.AppliedHash),
			View: &ViewRead{View: View{Reason: "no quota left", Message: "try later"}, OK: true, Retry: f.Resync}, Kubeconfig: &KubeconfigSeen{}}
		if _, err := FoldControlPlane(cp, f, &d, o, nil); err != nil {
			t.Fatal(err)
		}
		cond(t, cp, clustersv1alpha1.AvailableCondition, metav1.ConditionFalse, clustersv1alpha1.BackendNotReadyReason, "no quota left: try later")
	})
	t.Run("the kubeconfig write failed", func(t *testing.T) {
		cp, f, d := kustomizeCP(t)
		o := Observed{Synced: true, Flux: fluxReady(d, d.AppliedHash), View: &ViewRead{View: View{Ready: true}, OK: true, Retry: f.Resync}}
		boom := errors.New("the API server did not answer")
		if _, err := FoldControlPlane(cp, f, &d, o, boom); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		cond(t, cp, clustersv1alpha1.BackendReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason)
		cond(t, cp, clustersv1alpha1.KubeconfigReadyCondition, metav1.ConditionUnknown, clustersv1alpha1.ReconcilingReason, "not observed yet")
		cond(t, cp, clustersv1alpha1.AvailableCondition, metav1.ConditionUnknown, clustersv1alpha1.ReconcilingReason, "not observed yet")
	})
}

func TestFoldRefusals(t *testing.T) {
	t.Run("an invalid spec stalls on every condition", func(t *testing.T) {
		cp, f, _ := kustomizeCP(t)
		f.Kubeconfig.SecretName = "${NOPE}"
		_, err := Plan(f)
		out, err := FoldControlPlane(cp, f, nil, Observed{}, err)
		r, ok := plan.AsRefusal(err)
		if !ok || !r.Stalls || out.RequeueAfter != f.Resync {
			t.Fatalf("outcome %+v, %v; want a stall", out, err)
		}
		if r.Reason != clustersv1alpha1.InvalidSpecReason || (r.RetryAfter != 0 && r.RetryAfter != f.Resync) {
			t.Fatalf("refusal %+v", r)
		}
		for _, typ := range []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.KubeconfigReadyCondition, clustersv1alpha1.AvailableCondition} {
			cond(t, cp, typ, metav1.ConditionFalse, clustersv1alpha1.InvalidSpecReason, "spec.kubeconfig.secretName uses ${NOPE}")
		}
		cond(t, cp, clustersv1alpha1.PausedCondition, metav1.ConditionFalse, clustersv1alpha1.NotPausedReason)
	})
	t.Run("an infrastructure without Cluster waits, on its own conditions only", func(t *testing.T) {
		f := infrastructure(nil)
		f.Cluster = nil
		c := f.Object.(*clustersv1alpha1.CapwrightCluster)
		conditions.Init(c, []string{clustersv1alpha1.BackendReadyCondition, clustersv1alpha1.PausedCondition}, clustersv1alpha1.ReconcilingReason, false, "", "")
		_, err := Plan(f)
		out, err := FoldCluster(c, f, nil, Observed{}, err)
		if r, ok := plan.AsRefusal(err); !ok || r.Stalls || out.RequeueAfter != f.Resync {
			t.Fatalf("outcome %+v, %v; want a wait", out, err)
		}
		cond(t, c, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.WaitingForClusterReason, "waiting for a Cluster to refer to this CapwrightCluster")
		if conditions.Get(c, clustersv1alpha1.AvailableCondition) != nil || conditions.Get(c, clustersv1alpha1.KubeconfigReadyCondition) != nil {
			t.Fatalf("conditions the kind does not have: %+v", c.Status.Conditions)
		}
	})
	t.Run("a Flux object that is someone else's", func(t *testing.T) {
		cp, f, d := kustomizeCP(t)
		out, err := FoldControlPlane(cp, f, &d, Observed{Conflict: "OCIRepository team/controlplane-alpha-cp exists and is not this CapwrightControlPlane's"}, nil)
		r, ok := plan.AsRefusal(err)
		if !ok || !r.Stalls || r.Reason != clustersv1alpha1.ObjectConflictReason || out.RequeueAfter != f.Resync {
			t.Fatalf("outcome %+v, %v; want a stall", out, err)
		}
		cond(t, cp, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.ObjectConflictReason, "is not this CapwrightControlPlane's")
		cond(t, cp, clustersv1alpha1.AvailableCondition, metav1.ConditionUnknown, clustersv1alpha1.ReconcilingReason)
	})
	t.Run("facts that could not be read", func(t *testing.T) {
		cp, f, _ := kustomizeCP(t)
		boom := errors.New("reading Cluster team/alpha")
		if _, err := FoldControlPlane(cp, f, nil, Observed{}, boom); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		cond(t, cp, clustersv1alpha1.PausedCondition, metav1.ConditionUnknown, clustersv1alpha1.ReconcilingReason)
	})
}

func TestFoldPause(t *testing.T) {
	cp, f, _ := kustomizeCP(t)
	f.Cluster.SpecPaused = true
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FoldControlPlane(cp, f, &d, Observed{}, nil)
	if err != nil || out.Hold || out.RequeueAfter != 0 {
		t.Fatalf("outcome %+v, %v; want Paused written once", out, err)
	}
	cond(t, cp, clustersv1alpha1.PausedCondition, metav1.ConditionTrue, clustersv1alpha1.PausedReason, "Cluster team/alpha is paused (spec.paused)")
	f.PausedSaid = true
	d, _ = Plan(f)
	if out, err := FoldControlPlane(cp, f, &d, Observed{}, nil); err != nil || !out.Hold {
		t.Fatalf("outcome %+v, %v; want a hold", out, err)
	}
}

func TestFoldCluster(t *testing.T) {
	t.Run("no backend", func(t *testing.T) {
		f := infrastructure(func(c *clustersv1alpha1.CapwrightCluster) { c.Spec.Backend, c.Spec.StatusFrom = nil, nil })
		c := f.Object.(*clustersv1alpha1.CapwrightCluster)
		d, _ := Plan(f)
		out, err := FoldCluster(c, f, &d, Observed{}, nil)
		if err != nil || out.RequeueAfter != f.Resync || !ptr.Deref(c.Status.Initialization.Provisioned, false) {
			t.Fatalf("outcome %+v, %v, status %+v", out, err, c.Status)
		}
		cond(t, c, clustersv1alpha1.BackendReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason, "no backend")
	})
	t.Run("a view not ready", func(t *testing.T) {
		f := infrastructure(nil)
		c := f.Object.(*clustersv1alpha1.CapwrightCluster)
		d, _ := Plan(f)
		o := Observed{Synced: true, Flux: fluxReady(d, d.AppliedHash), View: &ViewRead{View: View{Stale: true}, OK: true, Retry: PollWhileWaiting}}
		out, err := FoldCluster(c, f, &d, o, nil)
		if err != nil || out.RequeueAfter != PollWhileWaiting || c.Status.Initialization.Provisioned != nil {
			t.Fatalf("outcome %+v, %v, status %+v", out, err, c.Status)
		}
		cond(t, c, clustersv1alpha1.BackendReadyCondition, metav1.ConditionFalse, clustersv1alpha1.BackendNotReadyReason,
			"ConfigMap team/alpha-network has not observed its latest generation yet.")
	})
	t.Run("provisioned", func(t *testing.T) {
		f := infrastructure(nil)
		c := f.Object.(*clustersv1alpha1.CapwrightCluster)
		d, _ := Plan(f)
		o := Observed{Synced: true, Flux: fluxReady(d, d.AppliedHash), View: &ViewRead{View: View{Ready: true}, OK: true, Retry: f.Resync}}
		out, err := FoldCluster(c, f, &d, o, nil)
		if err != nil || out.RequeueAfter != f.Resync || !ptr.Deref(c.Status.Initialization.Provisioned, false) || len(c.Status.Backend) != 2 {
			t.Fatalf("outcome %+v, %v, status %+v", out, err, c.Status)
		}
		cond(t, c, clustersv1alpha1.BackendReadyCondition, metav1.ConditionTrue, clustersv1alpha1.SucceededReason)
	})
}

// TestBackendOfPinnedDigestMissing: a pinned digest the registry does not
// hold names the field to fix; any other pull failure passes Flux's
// message through unchanged.
func TestBackendOfPinnedDigestMissing(t *testing.T) {
	const pin = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		name, digest, message, want string
	}{
		{"pinned, manifest unknown", pin, "failed to pull artifact from 'oci://registry.example.com/hcp': GET https://registry.example.com/v2/hcp/manifests/" + pin + ": MANIFEST_UNKNOWN: Unknown manifest",
			"; spec.backend.kustomize.digest pins " + pin + ", which oci://registry.example.com/hcp does not hold: set it to the digest of the manifest to install (`crane digest registry.example.com/hcp:v2`), or remove it to follow the tag"},
		{"pinned, registry unreachable", pin, "failed to pull artifact from 'oci://registry.example.com/hcp': dial tcp: connection refused", ""},
		{"not pinned, tag unknown", "", "failed to determine artifact digest: GET https://registry.example.com/v2/hcp/manifests/v2: MANIFEST_UNKNOWN", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, d := kustomizeCP(t)
			d.Objects.Source.Spec.Reference.Digest = tc.digest
			flux := fluxReady(d, d.AppliedHash)
			src := flux.Get(sourcev1.OCIRepositoryKind, d.Objects.Source.Namespace, d.Objects.Source.Name).(*sourcev1.OCIRepository)
			src.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: sourcev1.OCIPullFailedReason,
				Message: tc.message, ObservedGeneration: 1}}
			res, _ := BackendOf(d, flux, nil)
			_, hint, found := strings.Cut(res.Message, tc.message)
			if res.Status != metav1.ConditionFalse || res.Reason != sourcev1.OCIPullFailedReason || !found {
				t.Fatalf("BackendOf = %+v", res)
			}
			if hint != tc.want {
				t.Fatalf("hint %q; want %q", hint, tc.want)
			}
		})
	}
}
