package provider

import (
	"context"
	"sync"

	"github.com/capwright/capwright/internal/artifact"
)

// ArtifactCache keeps checked provider artifacts by manifest digest, so a
// resync resolves the tag (one small request) but does not download and
// unpack the same artifact again.
type ArtifactCache struct {
	// Max is the number of artifacts kept; default 32.
	Max int

	mu      sync.Mutex
	entries map[string]*artifact.ProviderArtifact
	order   []string
}

// Fetch resolves ref and returns its checked artifact, downloading it only
// when its digest is not cached.
func (c *ArtifactCache) Fetch(ctx context.Context, f *artifact.Fetcher, ref artifact.Reference, access artifact.Access, providerType, name, version string) (*artifact.ProviderArtifact, error) {
	digest, err := f.Resolve(ctx, ref, access)
	if err != nil {
		return nil, err
	}
	key := digest + " " + providerType + "/" + name + "@" + version
	if pa := c.get(key); pa != nil {
		return pa, nil
	}
	// Fetch exactly what was resolved, even if the tag moves meanwhile.
	pinned := ref
	pinned.Digest = digest
	fetched, err := f.Fetch(ctx, pinned, access)
	if err != nil {
		return nil, err
	}
	pa, err := artifact.CheckProviderArtifact(fetched, providerType, name, version)
	if err != nil {
		return nil, err
	}
	c.put(key, pa)
	return pa, nil
}

func (c *ArtifactCache) get(key string) *artifact.ProviderArtifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

func (c *ArtifactCache) put(key string, pa *artifact.ProviderArtifact) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*artifact.ProviderArtifact{}
	}
	if _, ok := c.entries[key]; ok {
		return
	}
	max := c.Max
	if max <= 0 {
		max = 32
	}
	for len(c.order) >= max {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.entries[key] = pa
	c.order = append(c.order, key)
}
