package clusters

import (
	"context"
	"strings"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"

	"github.com/capwright/capwright/tests/e2e/framework"
)

// contractAlertsExample is the Alert the alerts guide gives for the
// contract kinds.
const contractAlertsExample = "docs/examples/repository/infrastructure/tenant-alerts/team-a-clusters.yaml"

// applyContractAlert applies the guide's Alert for the contract kinds in
// namespace, with a webhook as its address. notification-controller
// accepts it only with Flux's Alert CRD patched as the guide says
// (framework.StartNotification builds the guide's flux-system folder).
func applyContractAlert(t *testing.T, ctx context.Context, namespace string) *framework.Webhook {
	t.Helper()
	return framework.ApplyGuideAlert(t, ctx, env.Config, env.RepoRoot(), contractAlertsExample, namespace, "team-a-on-call", nil)
}

// waitAlerted waits until the webhook received, through
// notification-controller, an event from Capwright about kind
// namespace/name that matches fn.
func waitAlerted(t *testing.T, ctx context.Context, hook *framework.Webhook, kind, namespace, name, what string, fn func(eventv1.Event) bool) eventv1.Event {
	t.Helper()
	var found eventv1.Event
	eventually(t, ctx, time.Minute, "the webhook received "+what+" about "+kind+" "+namespace+"/"+name, func(context.Context) (bool, string) {
		var got []string
		for _, e := range hook.Events("/") {
			o := e.InvolvedObject
			if o.Kind == kind && o.Namespace == namespace && o.Name == name && e.ReportingController == "capwright" && fn(e) {
				found = e
				return true, ""
			}
			got = append(got, o.Kind+" "+o.Namespace+"/"+o.Name+" "+e.Severity+" "+e.Reason+": "+e.Message)
		}
		return false, "received: " + strings.Join(got, "; ")
	})
	return found
}
