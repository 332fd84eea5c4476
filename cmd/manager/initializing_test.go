package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// answers is a transport that gives its responses in turn and counts the
// requests.
type answers struct {
	responses []func() *http.Response
	calls     int
}

func (a *answers) RoundTrip(*http.Request) (*http.Response, error) {
	r := a.responses[min(a.calls, len(a.responses)-1)]()
	a.calls++
	return r, nil
}

// status is the API server's answer for err, as it writes it.
func status(t *testing.T, err *apierrors.StatusError) func() *http.Response {
	return statusAfter(t, err, "1")
}

// statusAfter is status with the given Retry-After.
func statusAfter(t *testing.T, err *apierrors.StatusError, retryAfter string) func() *http.Response {
	body, jerr := json.Marshal(err.Status())
	if jerr != nil {
		t.Fatal(jerr)
	}
	return func() *http.Response {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/json")
		rec.Header().Set("Retry-After", retryAfter)
		rec.WriteHeader(int(err.Status().Code))
		_, _ = rec.Write(body)
		return rec.Result()
	}
}

func ok() *http.Response {
	rec := httptest.NewRecorder()
	rec.WriteHeader(http.StatusOK)
	_, _ = rec.WriteString(`{"kind":"ProviderList","items":[]}`)
	return rec.Result()
}

// initializing is what the API server answers while the watch cache of
// the resource is still reading it from etcd (k8s.io/apiserver's cacher,
// its error as it words it, possibly with the cause after a colon).
func initializing(t *testing.T) func() *http.Response {
	return status(t, apierrors.NewTooManyRequests("storage is (re)initializing", 1))
}

// TestRetryInitializingAsksAgainAtOnce: a read answered "storage is
// (re)initializing" is asked again by the transport, so client-go never
// sees the answer nor waits its Retry-After; other answers, a cache down
// long enough for a longer Retry-After, writes and a spent budget reach
// client-go untouched, body included.
func TestRetryInitializingAsksAgainAtOnce(t *testing.T) {
	throttled := status(t, apierrors.NewTooManyRequests("Too many requests, please try again later.", 1))
	for _, tc := range []struct {
		name       string
		method     string
		budget     time.Duration
		responses  []func() *http.Response
		wantCalls  int
		wantStatus int
		wantBody   string
	}{
		{name: "initializing, then served", method: http.MethodGet, budget: time.Minute,
			responses: []func() *http.Response{initializing(t), initializing(t), ok}, wantCalls: 3, wantStatus: http.StatusOK, wantBody: "ProviderList"},
		{name: "priority and fairness throttling", method: http.MethodGet, budget: time.Minute,
			responses: []func() *http.Response{throttled, ok}, wantCalls: 1, wantStatus: http.StatusTooManyRequests, wantBody: "Too many requests"},
		{name: "initializing for long: a longer Retry-After", method: http.MethodGet, budget: time.Minute,
			responses: []func() *http.Response{statusAfter(t, apierrors.NewTooManyRequests("storage is (re)initializing", 2), "2"), ok}, wantCalls: 1, wantStatus: http.StatusTooManyRequests, wantBody: "initializing"},
		{name: "a write", method: http.MethodPatch, budget: time.Minute,
			responses: []func() *http.Response{initializing(t), ok}, wantCalls: 1, wantStatus: http.StatusTooManyRequests, wantBody: "initializing"},
		{name: "budget spent", method: http.MethodGet, budget: 0,
			responses: []func() *http.Response{initializing(t), ok}, wantCalls: 1, wantStatus: http.StatusTooManyRequests, wantBody: "initializing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := &answers{responses: tc.responses}
			rt := initializingRetry{next: next, pause: time.Millisecond, budget: tc.budget}
			req := httptest.NewRequest(tc.method, "https://127.0.0.1/apis/clusterctl.cluster.x-k8s.io/v1alpha3/providers", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if next.calls != tc.wantCalls || resp.StatusCode != tc.wantStatus || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("%d requests, answered %d %s; want %d requests, answered %d with %q", next.calls, resp.StatusCode, body, tc.wantCalls, tc.wantStatus, tc.wantBody)
			}
		})
	}
}
