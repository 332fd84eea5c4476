package provider

import (
	"context"
	"testing"
	"time"

	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// TestInventoryIsReadOncePerVersion: the clusterctl inventory object is
// read uncached, so a provider that reconciles on every status change of
// its Flux objects reads it once per version it records, and again only
// after half the resync interval, to notice someone else's change.
func TestInventoryIsReadOncePerVersion(t *testing.T) {
	ctx := context.Background()
	docker := dockerProvider("oci://registry.invalid/capwright/manifests/infrastructure-docker", "v1.14.2")
	docker.Status.InstalledVersion = "v1.14.2"
	env := newFakeEnv(t, kindFor(docker), docker)
	reads := func() int { return env.reads(providerplan.InventoryGVK.Kind) }
	record := func() {
		t.Helper()
		if err := env.r.recordInventory(ctx, providerplan.Inventory(docker, env.r.Kind.Name), docker.UID, docker.Status.InstalledVersion, env.r.Source.Interval(docker)); err != nil {
			t.Fatalf("recordInventory: %v", err)
		}
	}

	for range 5 {
		record()
	}
	if n, w := reads(), len(env.fluxWrites()); n != 1 || w != 1 {
		t.Errorf("five reconciles at one version: %d inventory reads and %d writes (%v), want 1 and 1", n, w, env.fluxWrites())
	}

	docker.Status.InstalledVersion = "v1.14.3"
	record()
	record()
	if n, w := reads(), len(env.fluxWrites()); n != 2 || w != 2 {
		t.Errorf("after an upgrade: %d inventory reads and %d writes in all, want 2 and 2", n, w)
	}

	// Half a resync interval later it is read again, and not written
	// while it is as recorded.
	env.r.inventories.m.Store(docker.UID, recentCheck{key: "v1.14.3", at: time.Now().Add(-6 * time.Minute)})
	record()
	if n, w := reads(), len(env.fluxWrites()); n != 3 || w != 2 {
		t.Errorf("after half the resync interval: %d inventory reads and %d writes in all, want 3 and 2", n, w)
	}
}
