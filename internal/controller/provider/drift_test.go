package provider

import (
	"context"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fluxEvent(name, message string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubeadm-bootstrap", Name: name + ".1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kustomize-controller"}},
			Annotations: map[string]string{revisionAnnotation: "sha256:1", "other": "x"}},
		InvolvedObject: corev1.ObjectReference{Kind: kustomizev1.KustomizationKind, Namespace: "kubeadm-bootstrap", Name: name, UID: "uid-ks"},
		Type:           corev1.EventTypeNormal, Reason: "Progressing", Message: message,
		Source: corev1.EventSource{Component: "kustomize-controller"},
	}
}

// TestChangeReported: Flux's event on a provider's Kustomization wakes the
// provider of that kind and name, and nothing else.
func TestChangeReported(t *testing.T) {
	bootstrap := &Reconciler{Kind: Kinds()[1]}
	core := &Reconciler{Kind: Kinds()[0]}
	reqs := bootstrap.changeReported(context.Background(), fluxEvent("bootstrap-kubeadm", "Deployment/kubeadm-bootstrap/x configured"))
	if len(reqs) != 1 || reqs[0].Namespace != "kubeadm-bootstrap" || reqs[0].Name != "kubeadm" {
		t.Errorf("BootstrapProvider: %v, want kubeadm-bootstrap/kubeadm", reqs)
	}
	if reqs := core.changeReported(context.Background(), fluxEvent("bootstrap-kubeadm", "")); len(reqs) != 0 {
		t.Errorf("CoreProvider woken by another kind's Kustomization: %v", reqs)
	}
	noRevision := fluxEvent("bootstrap-kubeadm", "")
	noRevision.Annotations = nil
	if reqs := bootstrap.changeReported(context.Background(), noRevision); len(reqs) != 0 {
		t.Errorf("an event without a revision woke %v", reqs)
	}
}

// TestCachedFluxEvents: the cache keeps of an event what is read, and of
// one on a Kustomization no provider is named for only where it points.
func TestCachedFluxEvents(t *testing.T) {
	got, err := fluxChangeOnly(fluxEvent("bootstrap-kubeadm", "ClusterRole/x created"))
	if err != nil {
		t.Fatal(err)
	}
	e := got.(*corev1.Event)
	if e.Message != "ClusterRole/x created" || e.Annotations[revisionAnnotation] != "sha256:1" || len(e.Annotations) != 1 ||
		e.ManagedFields != nil || e.Source.Component != "" || e.InvolvedObject.UID != "uid-ks" || e.Name != "bootstrap-kubeadm.1" {
		t.Errorf("provider's event cached as %+v", e)
	}
	got, _ = fluxChangeOnly(fluxEvent("team-a-workload-1", "ConfigMap/x created"))
	if e := got.(*corev1.Event); e.Message != "" || e.Annotations != nil || e.InvolvedObject.Name != "team-a-workload-1" {
		t.Errorf("another Kustomization's event cached as %+v", e)
	}
}
