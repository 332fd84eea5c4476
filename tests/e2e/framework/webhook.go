package framework

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
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
