package faults

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// acquired is what the manager logs (with the lease) when it becomes the
// leader.
const acquired = "Successfully acquired lease"

// TestLeaderElection (fault 6) runs two replicas of the manager with
// leader election behind one Service for their artifacts, as the chart
// does with replicas: 2. Both serve a provider's additional manifests
// (the follower packs them again from the ConfigMap); when the leader is
// SIGKILLed, the other takes the lease once it expires, kustomize-
// controller still gets the artifact, and a change is reconciled by the
// new leader.
func TestLeaderElection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := newClient(t)
	ensureCore(t, ctx, c)
	// The suite's manager makes way for the two replicas.
	manager.Stop()
	t.Cleanup(func() { _ = manager.Restart(context.Background()) })
	framework.EnsureNamespace(t, ctx, c, "capwright-system")
	svc, err := plane.StartService()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Close() }()
	args := []string{
		"--enable-leader-election",
		"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=8s", "--leader-election-retry-period=2s",
		"--artifact-advertise-url=" + svc.URL,
		"--resync-interval=" + resync,
		"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + env.Registry.Host + "/" + framework.CAPIRepository,
		"--insecure-registry=" + env.Registry.Host,
	}
	var replicas []*plane.Capwright
	for _, name := range []string{"capwright-manager-a", "capwright-manager-b"} {
		m, err := env.StartCapwright(ctx, plane.CapwrightOptions{Name: name, Args: args, Env: []string{"RUNTIME_NAMESPACE=capwright-system"}})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Stop()
		replicas = append(replicas, m)
	}
	svc.SetBackends(replicas[0].ArtifactAddr(), replicas[1].ArtifactAddr())
	leads := func(m *plane.Capwright) bool {
		log, err := os.ReadFile(m.LogPath())
		if err != nil {
			return false
		}
		for line := range strings.Lines(string(log)) {
			if strings.Contains(line, acquired) && strings.Contains(line, "capwright-system/capwright-leader-election") {
				return true
			}
		}
		return false
	}
	var leader, follower *plane.Capwright
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		switch {
		case leads(replicas[0]):
			leader, follower = replicas[0], replicas[1]
		case leads(replicas[1]):
			leader, follower = replicas[1], replicas[0]
		}
		return leader != nil, nil
	})
	if err != nil {
		t.Fatal("neither replica became the leader")
	}

	p := testProvider(t, ctx, c, env.Registry.Host, "replicated")
	url := installWithExtras(t, ctx, c, p, extraConfigMap("replicated-extra", "first"))
	defer framework.DeleteProviderAndWait(t, ctx, c, p)
	if !strings.HasPrefix(url, svc.URL+"/") {
		t.Fatalf("the ExternalArtifact points at %s, not at the Service %s", url, svc.URL)
	}
	for _, m := range []*plane.Capwright{leader, follower} {
		if err := framework.GetOK(ctx, "http://"+m.ArtifactAddr()+strings.TrimPrefix(url, svc.URL)); err != nil {
			t.Errorf("replica %s does not serve the artifact: %v", m.LogPath(), err)
		}
	}

	killed := time.Now()
	leader.Kill()
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return leads(follower), nil
	})
	if err != nil {
		t.Fatal("the other replica did not take over")
	}
	took := time.Since(killed)
	t.Logf("the other replica took the lease %s after the leader was killed (lease duration 10s)", took.Round(100*time.Millisecond))
	if took > 25*time.Second {
		t.Errorf("taking over took %s, more than the lease duration and two retry periods allow", took)
	}
	if err := framework.GetOK(ctx, url); err != nil {
		t.Errorf("the artifact is not served through the Service after the leader went: %v", err)
	}

	// The new leader reconciles: a change of the additional manifests
	// reaches the cluster.
	extras := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: "extras"}, extras); err != nil {
		t.Fatal(err)
	}
	extras.Data["manifests"] = extraConfigMap("replicated-extra", "second")
	if err := c.Update(ctx, extras); err != nil {
		t.Fatal(err)
	}
	var applied corev1.ConfigMap
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: "replicated-extra"}, &applied); err != nil {
			return false, nil
		}
		return applied.Data["value"] == "second", nil
	})
	if err != nil {
		t.Fatalf("the new leader did not apply the changed additional manifests: %v", applied.Data)
	}
}
