package events

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	fluxevents "github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
)

// A notification-controller that does not answer must not hold the
// caller: the Kubernetes event is recorded at once, the POST follows.
func TestForwarderDoesNotWaitForNotificationController(t *testing.T) {
	release := make(chan struct{})
	received := make(chan eventv1.Event, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		var e eventv1.Event
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			t.Error(err)
		}
		received <- e
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	defer close(release)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	notify, err := fluxevents.NewRecorderForScheme(scheme, Discard{}, testr.New(t), srv.URL, "capwright")
	if err != nil {
		t.Fatal(err)
	}
	kube := record.NewFakeRecorder(10)
	f := NewForwarder(kube, notify, logr.Discard(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = f.Start(ctx) }()

	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"}}
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		f.Eventf(obj, corev1.EventTypeNormal, "Installed", "Installed=True: %s", "v1.14.2")
		// The worker takes the first; the second waits in the queue; the
		// third finds it full and is not forwarded.
		time.Sleep(100 * time.Millisecond)
		f.Eventf(obj, corev1.EventTypeWarning, "InstallFailed", "second")
		f.Eventf(obj, corev1.EventTypeWarning, "InstallFailed", "third")
	}()
	select {
	case <-recorded:
	case <-time.After(2 * time.Second):
		t.Fatal("recording events waited for a notification-controller that does not answer")
	}
	for _, want := range []string{"Normal Installed Installed=True: v1.14.2", "Warning InstallFailed second", "Warning InstallFailed third"} {
		select {
		case got := <-kube.Events:
			if got != want {
				t.Errorf("Kubernetes event %q, want %q", got, want)
			}
		default:
			t.Errorf("Kubernetes event %q not recorded at once", want)
		}
	}

	release <- struct{}{}
	release <- struct{}{}
	for _, want := range []string{"Installed=True: v1.14.2", "second"} {
		select {
		case e := <-received:
			if e.Message != want || e.InvolvedObject.Name != "cluster-api" || e.ReportingController != "capwright" {
				t.Errorf("forwarded %+v, want message %q about cluster-api from capwright", e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %q not forwarded", want)
		}
	}
	select {
	case e := <-received:
		t.Errorf("forwarded %q beyond the queue", e.Message)
	case <-time.After(300 * time.Millisecond):
	}
}

// Without --events-addr nothing is forwarded and nothing is queued.
func TestForwarderWithoutNotificationController(t *testing.T) {
	kube := record.NewFakeRecorder(1)
	f := NewForwarder(kube, nil, logr.Discard(), 1)
	f.Event(&corev1.ConfigMap{}, corev1.EventTypeNormal, "Installed", "ok")
	if got := <-kube.Events; got != "Normal Installed ok" {
		t.Errorf("Kubernetes event %q", got)
	}
	if len(f.queue) != 0 {
		t.Errorf("%d events queued with nothing to forward to", len(f.queue))
	}
}

// A cluster-scoped object's events (a Tenant's) are Kubernetes events only:
// notification-controller cannot route them to an Alert.
func TestForwarderKeepsClusterScopedEventsLocal(t *testing.T) {
	kube := record.NewFakeRecorder(1)
	notify := record.NewFakeRecorder(1)
	f := NewForwarder(kube, notify, logr.Discard(), 1)
	f.Event(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}, corev1.EventTypeNormal, "Ready", "ok")
	if got := <-kube.Events; got != "Normal Ready ok" {
		t.Errorf("Kubernetes event %q", got)
	}
	if len(f.queue) != 0 {
		t.Errorf("%d events of a cluster-scoped object queued for notification-controller", len(f.queue))
	}
}
