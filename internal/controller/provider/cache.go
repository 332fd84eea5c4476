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
// unpack the same artifact again. It is bounded by count and by bytes; the
// oldest entries go first.
type ArtifactCache struct {
	// Max is the number of artifacts kept; default 32.
	Max int
	// MaxBytes bounds the bytes of the artifacts' files kept; default
	// DefaultCacheBytes. The artifact just fetched is kept whatever its
	// size (the fetch bounds it), alone if it must be.
	MaxBytes int64

	mu      sync.Mutex
	entries map[string]*CheckedArtifact
	order   []string
	bytes   int64
}

// DefaultCacheBytes is the default byte bound of an ArtifactCache: one
// artifact of the largest size the fetcher accepts by default, a small
// share of the manager's memory limit, and room for dozens of real
// provider releases (a core components file is about 1.2 MB).
const DefaultCacheBytes = artifact.DefaultMaxArtifactSize

// CheckedArtifact is a provider artifact that passed the layout checks,
// with what preflight and render read from its components file. The file
// is decoded once, on first use, and the answers are kept with the
// artifact (not the decoded objects, which take many times the file's
// size): a provider reconciles on every status change of its Flux objects,
// and decoding a core components file — over a megabyte of YAML — takes
// tens of milliseconds each time.
type CheckedArtifact struct {
	*artifact.ProviderArtifact
	// home is the namespace of the provider that fetched the artifact.
	home string

	mu         sync.Mutex
	analysed   bool
	decodeErr  error
	variables  []clusterctl.Variable
	varsErr    error
	images     []string
	imagesErr  error
	coreObjs   []string
	crdsFree   bool
	deployment string
	args       []string
	patches    map[string]namespacePatches
}

type namespacePatches struct {
	patches []kustomize.Patch
	err     error
}

// analyse decodes the components once and answers every question, and
// the namespace patches for namespace ("": home, the namespace of the
// provider that fetched the artifact); another namespace decodes again.
func (a *CheckedArtifact) analyse(namespace string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if namespace == "" {
		namespace = a.home
	}
	if a.analysed {
		if _, ok := a.patches[namespace]; ok || a.decodeErr != nil {
			return a.decodeErr
		}
	}
	c, err := clusterctl.Decode(a.Components)
	if a.patches == nil {
		a.patches = map[string]namespacePatches{}
	}
	if !a.analysed {
		a.analysed, a.decodeErr = true, err
		if err == nil {
			a.variables, a.varsErr = c.Variables()
			a.images, a.imagesErr = c.ResolvedImages(nil)
			a.coreObjs = c.ObjectsInGroups(coreGroups)
			a.crdsFree = c.CRDsSubstitutionFree()
			a.deployment, a.args = c.ManagerDeployment()
		}
	}
	if err == nil {
		patches, perr := c.NamespacePatches(namespace)
		a.patches[namespace] = namespacePatches{patches, perr}
	}
	return a.decodeErr
}

// Variables are the clusterctl variables of the components.
func (a *CheckedArtifact) Variables() ([]clusterctl.Variable, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.variables, a.varsErr
}

// Images are the container images the components run.
func (a *CheckedArtifact) Images() ([]string, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.images, a.imagesErr
}

// CoreObjects names the components' objects of the core provider's kinds.
func (a *CheckedArtifact) CoreObjects() ([]string, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.coreObjs, nil
}

// CRDsSubstitutionFree tells whether no CRD of the components holds a
// variable (clusterctl.Components.CRDsSubstitutionFree); false when the
// components cannot be decoded.
func (a *CheckedArtifact) CRDsSubstitutionFree() bool {
	return a.analyse("") == nil && a.crdsFree
}

// ManagerDeployment is the components' controller Deployment and its
// manager container's args (clusterctl.Components.ManagerDeployment).
func (a *CheckedArtifact) ManagerDeployment() (string, []string) {
	if a.analyse("") != nil {
		return "", nil
	}
	return a.deployment, a.args
}

// NamespacePatches are clusterctl's patches that move the components into
// namespace.
func (a *CheckedArtifact) NamespacePatches(namespace string) ([]kustomize.Patch, error) {
	if err := a.analyse(namespace); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.patches[namespace]
	return p.patches, p.err
}

// Fetch resolves ref and returns its checked artifact, downloading it only
// when its digest is not cached.
func (c *ArtifactCache) Fetch(ctx context.Context, f *artifact.Fetcher, ref artifact.Reference, access artifact.Access, providerType, name, version, namespace string) (*CheckedArtifact, error) {
	digest, err := f.Resolve(ctx, ref, access)
	if err != nil {
		return nil, err
	}
	if ca := c.Cached(digest, providerType, name, version); ca != nil {
		return ca, nil
	}
	key := cacheKey(digest, providerType, name, version)
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
	ca := c.put(key, &CheckedArtifact{ProviderArtifact: pa, home: namespace})
	// Decode the components while the reconcile goes on with the cheap
	// checks (or waits for the core provider).
	go func() { _ = ca.analyse("") }()
	return ca, nil
}

// Cached returns the checked artifact of digest for the provider and
// version, nil if it is not cached.
func (c *ArtifactCache) Cached(digest, providerType, name, version string) *CheckedArtifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[cacheKey(digest, providerType, name, version)]
}

func cacheKey(digest, providerType, name, version string) string {
	return digest + " " + providerType + "/" + name + "@" + version
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
	maxCount, maxBytes := c.Max, c.MaxBytes
	if maxCount <= 0 {
		maxCount = 32
	}
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	size := ca.size()
	for len(c.order) > 0 && (len(c.order) >= maxCount || c.bytes+size > maxBytes) {
		c.bytes -= c.entries[c.order[0]].size()
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.entries[key] = ca
	c.order = append(c.order, key)
	c.bytes += size
	return ca
}

// Bytes is what the cached artifacts' files hold.
func (c *ArtifactCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// size is the bytes of the artifact's files (the components, metadata and
// templates share them).
func (a *CheckedArtifact) size() int64 {
	var n int64
	if a.Fetched != nil {
		for _, f := range a.Fetched.Files {
			n += int64(len(f))
		}
		return n
	}
	n = int64(len(a.Components) + len(a.Metadata))
	for _, t := range a.Templates {
		n += int64(len(t))
	}
	return n
}
