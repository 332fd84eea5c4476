package main

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// The API server builds a custom resource's watch cache on the first
// request for that resource after it starts or after the CRD is created,
// and until the cache has read the objects from etcd (milliseconds) it
// answers the lists and watches the cache serves with 429 "storage is
// (re)initializing" and Retry-After: 1, which client-go obeys to the
// second. The manager is often the first to ask for its own kinds right
// after it is installed, and for clusterctl's inventory at any time, so
// on a fresh cluster its informers waited a second twice before its
// workers started, and its first reconcile a second more for the
// inventory list: a cold first install cost 1.1 s of the manager's time
// instead of 0.15 s. retryInitializing asks again after 10 ms, then 20,
// 40… for up to a second before handing the API server's answer to
// client-go, which then waits as told. Only while the API server asks for
// the shortest wait: a cache down for longer (etcd in trouble) gets longer
// Retry-After values, and those are left to client-go.
const (
	initializingMessage = "storage is (re)initializing"
	initializingPause   = 10 * time.Millisecond
	initializingBudget  = time.Second
)

// retryInitializing wraps cfg's transport so that a read answered with
// "storage is (re)initializing" is asked again within milliseconds.
func retryInitializing(cfg *rest.Config) {
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return initializingRetry{next: next, pause: initializingPause, budget: initializingBudget}
	})
}

// initializingRetry is the transport of retryInitializing: it waits
// pause before its first retry, twice as long before each next, and
// retries no more once budget has passed.
type initializingRetry struct {
	next          http.RoundTripper
	pause, budget time.Duration
}

func (t initializingRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	// Reads only: a write carries a body that may not be sent twice, and
	// the watch cache serves none.
	if req.Method != http.MethodGet {
		return t.next.RoundTrip(req)
	}
	deadline := time.Now().Add(t.budget)
	pause := t.pause
	for {
		resp, err := t.next.RoundTrip(req.Clone(req.Context()))
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			return resp, err
		}
		// A Status object: small. Left whole for client-go when it is
		// another 429 (API priority and fairness) or the budget is spent.
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil || resp.Header.Get("Retry-After") != "1" || !bytes.Contains(body, []byte(initializingMessage)) || time.Now().Add(pause).After(deadline) {
			return resp, nil
		}
		timer := time.NewTimer(pause)
		pause *= 2
		select {
		case <-req.Context().Done():
			timer.Stop()
			return resp, nil
		case <-timer.C:
		}
	}
}
