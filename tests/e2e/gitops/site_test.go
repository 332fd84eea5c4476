package gitops

import (
	"context"
	"testing"
	"time"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// receiverToken is the token of the Receiver's Secret the suite creates,
// as the Git host's webhook is configured with it.
const receiverToken = "a-token-the-git-host-is-given"

// publishStack pushes team A's stack at tag: a ConfigMap baseline whose
// version is the tag.
func publishStack(ctx context.Context, t *testing.T, tag string) framework.PushedArtifact {
	t.Helper()
	files := map[string][]byte{
		"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: baseline\ndata:\n  version: " + tag + "\n"),
	}
	art, err := framework.PushFiles(ctx, env.Registry.Host, framework.ExampleStackRepository, tag, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return art
}

// fluxCLI is the flux CLI make tools builds.
func fluxCLI(t *testing.T) string {
	t.Helper()
	bin, err := plane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	return framework.FluxCLI(t, bin)
}

// since is a duration for a FIGURE line.
func since(start time.Time) time.Duration { return time.Since(start).Round(100 * time.Millisecond) }
