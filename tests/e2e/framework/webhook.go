package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/plane"
	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Webhook is an HTTP receiver standing in for Slack or a team's webhook:
// it keeps every event notification-controller posts (a Provider of type
// generic), per path.
type Webhook struct {
	URL      string
	mu       sync.Mutex
	received map[string][]eventv1.Event
}

// NewWebhook starts a Webhook that stops when the test ends.
func NewWebhook(t testing.TB) *Webhook {
	w := &Webhook{received: map[string][]eventv1.Event{}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var e eventv1.Event
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			t.Errorf("webhook %s: %v", r.URL.Path, err)
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.received[r.URL.Path] = append(w.received[r.URL.Path], e)
		w.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	w.URL = srv.URL
	return w
}

// Events are the events path received so far.
func (w *Webhook) Events(path string) []eventv1.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]eventv1.Event(nil), w.received[path]...)
}

// ApplyAlerts applies notification-controller objects (a guide's Provider
// and Alert) into namespace, with the Secret named secret holding the
// webhook address their Provider reads, and gives notification-controller
// a moment to see them: Alerts have no status to wait for.
func ApplyAlerts(ctx context.Context, cfg *rest.Config, namespace, secret, address string, objs []*unstructured.Unstructured) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secret}, StringData: map[string]string{"address": address}}
	if _, err := kube.CoreV1().Secrets(namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the webhook Secret %s/%s: %w", namespace, secret, err)
	}
	for _, o := range objs {
		o.SetNamespace(namespace)
	}
	applier, err := plane.NewApplier(cfg)
	if err != nil {
		return err
	}
	if err := applier.Apply(ctx, objs...); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	return nil
}

// ApplyGuideAlert applies the Provider and Alert of a guide's example
// file (example, relative to the repository at root), passed through edit
// when it is not nil, into namespace with a new webhook as the address the
// Secret secret holds, and returns the webhook. A failure names the file.
func ApplyGuideAlert(t testing.TB, ctx context.Context, cfg *rest.Config, root, example, namespace, secret string, edit func(string) string) *Webhook {
	t.Helper()
	hook := NewWebhook(t)
	data, err := os.ReadFile(filepath.Join(root, example))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if edit != nil {
		text = edit(text)
	}
	objs, err := plane.DecodeYAML(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s: %v", example, err)
	}
	if err := ApplyAlerts(ctx, cfg, namespace, secret, hook.URL, objs); err != nil {
		t.Fatalf("applying %s (is Flux's Alert CRD patched as the alerts guide says?): %v", example, err)
	}
	return hook
}
