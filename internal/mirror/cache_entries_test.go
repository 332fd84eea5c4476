package mirror

import (
	"os"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
)

func TestCacheEntries(t *testing.T) {
	c := NewCache(t.TempDir())
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }

	d := digest.FromString("artifact")
	if _, ok := c.listing(d); ok {
		t.Fatal("an empty cache has a listing")
	}
	c.putListing(d, listing{Kind: KindProvider, MediaType: "application/vnd.oci.image.manifest.v1+json", Size: 42, Images: []string{"registry.example.com/a:v1"}})
	if l, ok := c.listing(d); !ok || l.Kind != KindProvider || l.Size != 42 || len(l.Images) != 1 {
		t.Errorf("listing = %+v, %v", l, ok)
	}

	c.putCompletion(completion{Target: "mirror.example.com/capi", Source: "registry.example.com/x:v1", Digest: d.String()})
	if _, ok := c.completion("mirror.example.com/capi", "registry.example.com/x:v1"); !ok {
		t.Error("a fresh completion is not found")
	}
	if _, ok := c.completion("mirror.example.com/other", "registry.example.com/x:v1"); ok {
		t.Error("a completion at one target is found for another")
	}
	now = now.Add(CompletionTTL + time.Minute)
	if _, ok := c.completion("mirror.example.com/capi", "registry.example.com/x:v1"); ok {
		t.Errorf("a completion older than %s is still trusted", CompletionTTL)
	}

	// A corrupt entry is a miss, not an error.
	if err := os.WriteFile(c.listingPath(d), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.listing(d); ok {
		t.Error("a corrupt listing is read")
	}
}
