package health

import (
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unreachableMarkers are what source-controller's failure messages say
// when the registry could not be reached or did not answer in time: the
// texts of Go's network errors and of the HTTP statuses that mean "not
// now" (5xx, 429), as artifact.Unreachable classifies the manager's own
// errors. A message about the content itself (MANIFEST_UNKNOWN, a
// signature that does not verify, credentials refused) has none of them.
var unreachableMarkers = []string{
	"connection refused",
	"connection reset by peer",
	"no such host",
	"server misbehaving",
	"network is unreachable",
	"i/o timeout",
	"context deadline exceeded",
	"Client.Timeout exceeded",
	"TLS handshake timeout",
	"timeout awaiting response headers",
	"unexpected EOF",
	"500 Internal Server Error",
	"502 Bad Gateway",
	"503 Service Unavailable",
	"504 Gateway Timeout",
	"429 Too Many Requests",
}

// registryUnreachable tells whether a source failed only because its
// registry could not be reached (an outage, a registry that hangs): what
// it fetches may still be fine, and Flux tries again by itself.
func registryUnreachable(o Observation) bool {
	ready := o.condition(meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse {
		return false
	}
	for _, m := range unreachableMarkers {
		if strings.Contains(ready.Message, m) {
			return true
		}
	}
	return false
}
