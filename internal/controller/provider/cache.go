package provider

import (
	"context"
	"sync"

	"github.com/fluxcd/pkg/apis/kustomize"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
)

// ArtifactCache keeps checked provider artifacts by manifest digest, so a
// resync resolves the tag (one small request) but does not download and
// unpack the same artifact again.
type ArtifactCache struct {
	// Max is the number of artifacts kept; default 32.
	Max int

	mu      sync.Mutex
	entries map[string]*CheckedArtifact
	order   []string
}

// CheckedArtifact is a provider artifact that passed the layout checks,
// with what preflight and render read from its components file. Each is
// worked out from the file once, on first use, and kept with the
// artifact: a provider reconciles on every status change of its Flux
// objects, and decoding a core components file (over a megabyte of YAML)
// takes tens of milliseconds each time.
type CheckedArtifact struct {
	*artifact.ProviderArtifact

	once       sync.Once
	variables  []clusterctl.Variable
	varsErr    error
	images     []string
	imagesErr  error
	coreObjs   []string
	coreErr    error
	deployment string
	args       []string

	mu      sync.Mutex
	patches map[string]namespacePatches
}

type namespacePatches struct {
	patches []kustomize.Patch
	err     error
}

func (a *CheckedArtifact) analyse() {
	a.once.Do(func() {
		c := a.Components
		a.variables, a.varsErr = clusterctl.ParseVariables(c)
		a.images, a.imagesErr = clusterctl.Images(c)
		a.coreObjs, a.coreErr = clusterctl.ObjectsInGroups(c, coreGroups)
		a.deployment, a.args = managerDeployment(c)
	})
}

// Variables are the clusterctl variables of the components.
func (a *CheckedArtifact) Variables() ([]clusterctl.Variable, error) {
	a.analyse()
	return a.variables, a.varsErr
}

// Images are the container images the components run.
func (a *CheckedArtifact) Images() ([]string, error) {
	a.analyse()
	return a.images, a.imagesErr
}

// CoreObjects names the components' objects of the core provider's kinds.
func (a *CheckedArtifact) CoreObjects() ([]string, error) {
	a.analyse()
	return a.coreObjs, a.coreErr
}

// ManagerDeployment is the components' controller Deployment and its
// manager container's args (managerDeployment).
func (a *CheckedArtifact) ManagerDeployment() (string, []string) {
	a.analyse()
	return a.deployment, a.args
}

// NamespacePatches are clusterctl's patches that move the components into
// namespace, kept per namespace.
func (a *CheckedArtifact) NamespacePatches(namespace string) ([]kustomize.Patch, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.patches[namespace]; ok {
		return p.patches, p.err
	}
	patches, err := clusterctl.NamespacePatches(a.Components, namespace)
	if a.patches == nil {
		a.patches = map[string]namespacePatches{}
	}
	a.patches[namespace] = namespacePatches{patches, err}
	return patches, err
}

// Fetch resolves ref and returns its checked artifact, downloading it only
// when its digest is not cached.
func (c *ArtifactCache) Fetch(ctx context.Context, f *artifact.Fetcher, ref artifact.Reference, access artifact.Access, providerType, name, version string) (*CheckedArtifact, error) {
	digest, err := f.Resolve(ctx, ref, access)
	if err != nil {
		return nil, err
	}
	key := digest + " " + providerType + "/" + name + "@" + version
	if ca := c.get(key); ca != nil {
		return ca, nil
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
	return c.put(key, &CheckedArtifact{ProviderArtifact: pa}), nil
}

func (c *ArtifactCache) get(key string) *CheckedArtifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

// put keeps ca under key and returns the entry kept: one fetched at the
// same time by another reconcile wins, so its analysis is shared.
func (c *ArtifactCache) put(key string, ca *CheckedArtifact) *CheckedArtifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*CheckedArtifact{}
	}
	if kept, ok := c.entries[key]; ok {
		return kept
	}
	max := c.Max
	if max <= 0 {
		max = 32
	}
	for len(c.order) >= max {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.entries[key] = ca
	c.order = append(c.order, key)
	return ca
}
