package resolve

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// sized is a checked artifact whose files hold n bytes.
func sized(n int) *CheckedArtifact {
	components := bytes.Repeat([]byte("x"), n)
	return providerplan.NewCheckedArtifact(&artifact.ProviderArtifact{
		Fetched:    &artifact.Fetched{Files: map[string][]byte{"core-components.yaml": components}},
		Components: components,
	}, "", "")
}

// TestArtifactCacheIsBoundedByBytes: however many artifacts fit the count,
// the cache never holds more bytes than its bound; the oldest go first,
// and the artifact just fetched is always kept.
func TestArtifactCacheIsBoundedByBytes(t *testing.T) {
	c := &ArtifactCache{Max: 100, MaxBytes: 10 << 10}
	for i := range 8 {
		c.put(fmt.Sprintf("a%d", i), sized(3<<10))
		if got := c.Bytes(); got > c.MaxBytes {
			t.Fatalf("after %d artifacts of 3 KiB the cache holds %d bytes, over its bound of %d", i+1, got, c.MaxBytes)
		}
	}
	if len(c.order) != 3 || c.order[0] != "a5" || c.order[2] != "a7" {
		t.Errorf("kept %v, want the newest three (a5 a6 a7)", c.order)
	}
	// One larger than the bound replaces everything, and is kept.
	c.put("big", sized(20<<10))
	if len(c.order) != 1 || c.entries["big"] == nil || c.Bytes() != 20<<10 {
		t.Errorf("after an artifact over the bound: kept %v (%d bytes), want only it", c.order, c.Bytes())
	}
	// The default bound applies without one set.
	d := &ArtifactCache{}
	for i := range 3 {
		d.put(fmt.Sprintf("d%d", i), sized(int(DefaultCacheBytes/2)))
	}
	if d.Bytes() > DefaultCacheBytes {
		t.Errorf("with the default bound the cache holds %d bytes, over %d", d.Bytes(), DefaultCacheBytes)
	}
}
