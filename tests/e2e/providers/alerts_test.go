package providers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// alertsExample is the Alert the alerts guide tells users to commit.
const alertsExample = "docs/examples/repository/infrastructure/providers/alerts.yaml"

// waitEvent waits until path received an event about the provider
// matching fn.
func waitEvent(t *testing.T, ctx context.Context, w *framework.Webhook, path string, p v1alpha1.Provider, what string, fn func(eventv1.Event) bool) eventv1.Event {
	t.Helper()
	var found eventv1.Event
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		for _, e := range w.Events(path) {
			if e.InvolvedObject.Name == p.GetName() && e.InvolvedObject.Namespace == p.GetNamespace() && fn(e) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		var got []string
		for _, e := range w.Events(path) {
			got = append(got, e.InvolvedObject.Name+" "+e.Severity+" "+e.Reason+": "+e.Message)
		}
		t.Fatalf("no event %s for %s/%s reached %s; received: %q", what, p.GetNamespace(), p.GetName(), path, got)
	}
	return found
}

// alertsReceiveEvents proves the way a platform team watches Flux works
// for providers: notification-controller, running with the role `flux
// install` gives it, the CRD patch and the read access of the guide,
// forwards a provider's events to the Alert of the guide's example when it
// goes Ready and when it is refused, with the revision, and never a
// Secret's value.
func alertsReceiveEvents(t *testing.T, ctx context.Context, c client.Client) {
	const ns = "alerts"
	const marker = "do-not-leak-7f3a9c"
	ensureNamespace(t, ctx, c, ns)
	hook := framework.NewWebhook(t)

	// The guide's Alert and Provider, in this namespace; the webhook's
	// address is in the Secret the example names.
	data, err := os.ReadFile(filepath.Join(env.RepoRoot(), alertsExample))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := plane.DecodeYAML(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("%s: %v", alertsExample, err)
	}
	// A second Alert selects by label: notification-controller then reads
	// the provider, which only the guide's RBAC allows.
	labelled, err := plane.DecodeYAML(strings.NewReader(`apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: labelled-webhook
spec:
  type: generic
  address: ` + hook.URL + `/labelled
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: labelled-providers
spec:
  providerRef:
    name: labelled-webhook
  eventSeverity: info
  eventSources:
  - kind: InfrastructureProvider
    name: '*'
    matchLabels:
      alerts.capwright.io/route: labelled
`))
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, labelled...)
	if err := framework.ApplyAlerts(ctx, env.Config, ns, "platform-webhook", hook.URL+"/all", objs); err != nil {
		t.Fatalf("applying %s (is Flux's Alert CRD patched for Capwright's kinds?): %v", alertsExample, err)
	}

	ok := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertok",
		Labels: map[string]string{"alerts.capwright.io/route": "labelled"}},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "alertok", "v0.1.0", map[string][]byte{
			"metadata.yaml":                  testMetadata("v1beta2"),
			"infrastructure-components.yaml": testComponents("alertok-system", "x"),
		}))}}
	refused := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertold"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: source(publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "alertold", "v0.1.0", map[string][]byte{
			"metadata.yaml":                  testMetadata("v1alpha4"),
			"infrastructure-components.yaml": testComponents("alertold-system", "x"),
		}))}}
	// Refused for a variable its config Secret does not hold; the value of
	// the one it does hold must reach no event.
	config := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertvars-config"},
		StringData: map[string]string{"TEST_TOKEN": marker}}
	if err := c.Create(ctx, config); err != nil {
		t.Fatal(err)
	}
	vars := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertvars"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", ConfigSecret: &v1alpha1.SecretReference{Namespace: ns, Name: config.Name},
			Source: source(publishFiles(t, ctx, v1alpha1.InfrastructureProviderType, "alertvars", "v0.1.0", map[string][]byte{
				"metadata.yaml":                  testMetadata("v1beta2"),
				"infrastructure-components.yaml": testComponents("alertvars-system", "${TEST_TOKEN} ${TEST_MISSING}"),
			}))}}
	for _, p := range []client.Object{ok, refused, vars} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitCondition(t, ctx, c, ok, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	waitCondition(t, ctx, c, refused, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.IncompatibleContractReason, 2*time.Minute)
	waitCondition(t, ctx, c, vars, v1alpha1.CompatibleCondition, metav1.ConditionFalse, v1alpha1.MissingVariablesReason, 2*time.Minute)

	revision := func(e eventv1.Event) string { return e.Metadata[eventv1.MetaRevisionKey] }
	e := waitEvent(t, ctx, hook, "/all", ok, "Ready=True", func(e eventv1.Event) bool {
		return strings.HasPrefix(e.Message, "Ready=True") && e.Severity == eventv1.EventSeverityInfo
	})
	if want := ok.Status.Artifact.Revision; revision(e) != want {
		t.Errorf("Ready event's revision %q, want the installed %q (metadata %v)", revision(e), want, e.Metadata)
	}
	if e.InvolvedObject.Kind != "InfrastructureProvider" || e.ReportingController != "capwright" {
		t.Errorf("Ready event about %s from %q", e.InvolvedObject.Kind, e.ReportingController)
	}
	waitEvent(t, ctx, hook, "/all", ok, "Installed", func(e eventv1.Event) bool {
		return e.Reason == v1alpha1.InstalledReason && strings.Contains(e.Message, "installed v0.1.0")
	})
	e = waitEvent(t, ctx, hook, "/all", refused, "refused", func(e eventv1.Event) bool {
		return e.Reason == v1alpha1.IncompatibleContractReason && strings.HasPrefix(e.Message, "Ready=False") && e.Severity == eventv1.EventSeverityError
	})
	if want := refused.Status.LastAttemptedRevision; want == "" || revision(e) != want {
		t.Errorf("refusal event's revision %q, want the refused %q (metadata %v)", revision(e), want, e.Metadata)
	}
	e = waitEvent(t, ctx, hook, "/all", vars, "missing variables", func(e eventv1.Event) bool {
		return e.Reason == v1alpha1.MissingVariablesReason && strings.HasPrefix(e.Message, "Compatible=False")
	})
	if !strings.Contains(e.Message, "TEST_MISSING") {
		t.Errorf("the refusal should name the missing variable: %q", e.Message)
	}
	// The labelled Alert got the labelled provider's events only.
	waitEvent(t, ctx, hook, "/labelled", ok, "Ready=True", func(e eventv1.Event) bool { return strings.HasPrefix(e.Message, "Ready=True") })

	for path, events := range map[string][]eventv1.Event{"/all": hook.Events("/all"), "/labelled": hook.Events("/labelled")} {
		for _, e := range events {
			raw, _ := json.Marshal(e)
			if strings.Contains(string(raw), marker) {
				t.Errorf("an event carries a Secret's value: %s", raw)
			}
			if e.InvolvedObject.Namespace != ns {
				t.Errorf("%s got an event about %s %s/%s, outside the Alert's namespace", path, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
			}
			if path == "/labelled" && e.InvolvedObject.Name != ok.Name {
				t.Errorf("the labelled Alert got an event about %s, which has no such label", e.InvolvedObject.Name)
			}
		}
	}
	t.Logf("webhook received %d events for the Alert of the guide, %d for the labelled one", len(hook.Events("/all")), len(hook.Events("/labelled")))

	for _, p := range []client.Object{ok, refused, vars} {
		if err := c.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []client.Object{ok, refused, vars} {
		waitGone(t, ctx, c, p, 2*time.Minute)
	}
}
