package install

import (
	"context"
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/capwright/capwright/tests/e2e/framework"
)

// versionReportsManager runs `capwright version -o json` against the plane
// where Flux installed Capwright's release: it finds the manager
// Deployment and reports the released version, read from source (the
// chart's version label, or the digest-pinned image's version annotation
// in its registry).
func versionReportsManager(t *testing.T, ctx context.Context, deploy *appsv1.Deployment, version, source string) {
	cli := framework.CLI(t, ctx, env)
	// The plane's registry is plain HTTP.
	stdout, stderr, code, err := framework.RunCLI(ctx, cli, "version", "-o", "json", "--plain-http", "--kubeconfig", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Client struct {
			Version string `json:"version"`
		} `json:"client"`
		Managers []struct {
			Namespace     string `json:"namespace"`
			Deployment    string `json:"deployment"`
			Image         string `json:"image"`
			Version       string `json:"version"`
			VersionSource string `json:"versionSource"`
			Note          string `json:"note"`
		} `json:"managers"`
		ManagerNote string `json:"managerNote"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("capwright version -o json: exit code %d, %v, stderr %q:\n%s", code, err, stderr, stdout)
	}
	if len(got.Managers) != 1 {
		t.Fatalf("capwright version found %d managers, want the Deployment %s/%s:\n%s", len(got.Managers), deploy.Namespace, deploy.Name, stdout)
	}
	m := got.Managers[0]
	if m.Namespace != deploy.Namespace || m.Deployment != deploy.Name || m.Image != deploy.Spec.Template.Spec.Containers[0].Image ||
		m.Version != version || m.VersionSource != source || got.Client.Version == "" {
		t.Errorf("capwright version -o json: %s; want Deployment %s/%s, image %s, version %s from the %s",
			stdout, deploy.Namespace, deploy.Name, deploy.Spec.Template.Spec.Containers[0].Image, version, source)
	}
	t.Logf("capwright version: manager %s (from the %s)", m.Version, m.VersionSource)
}
