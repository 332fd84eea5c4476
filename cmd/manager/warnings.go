package main

import (
	"context"
	"strings"

	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// fluxFinalizerWarning is the start of the warning the API server returns
// for every write that sets finalizers.fluxcd.io: the name has no path, as
// Kubernetes now prefers.
const fluxFinalizerWarning = `metadata.finalizers: "finalizers.fluxcd.io": prefer a domain-qualified finalizer name`

// apiWarnings logs the API server's warnings as controller-runtime does,
// but the one about Flux's finalizer name. Capwright creates Flux objects
// with Flux's finalizer (so Flux need not add it and requeue); the name is
// Flux's, not Capwright's to change, and the warning would fill the log
// with a line per Flux object written.
type apiWarnings struct {
	next rest.WarningHandlerWithContext
}

func newAPIWarnings() apiWarnings {
	return apiWarnings{next: ctrllog.NewKubeAPIWarningLogger(ctrllog.KubeAPIWarningLoggerOptions{})}
}

func (w apiWarnings) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, message string) {
	if strings.HasPrefix(message, fluxFinalizerWarning) {
		return
	}
	w.next.HandleWarningHeaderWithContext(ctx, code, agent, message)
}
