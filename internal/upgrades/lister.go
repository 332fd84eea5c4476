package upgrades

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/providerrelease"
)

// maxCachedMetadata bounds the metadata files Lister keeps: one per
// provider repository is what it needs (the newest tag's).
const maxCachedMetadata = 256

// Lister reads what Plan needs from a provider's source. For a release
// URL it makes one request (the host's latest link) and, for a release it
// has not seen, one download of metadata.yaml. Per provider and check it
// makes, for an OCI repository: one tag-list request per page of
// artifact.TagPageSize tags (one for any real provider), one manifest
// request resolving the newest tag, and — only when that digest's
// metadata.yaml is not cached yet — three more: the tag resolved again,
// the manifest and the layer holding metadata.yaml (the registry's token
// exchange, when it has one, comes on top). The zero value is ready to use; it is safe for concurrent use.
type Lister struct {
	// Fetcher reads artifacts (its MaxArtifactSize bounds every read).
	Fetcher *artifact.Fetcher

	inflight singleflight.Group
	mu       sync.Mutex
	metadata map[string]*clusterctl.Metadata // by manifest digest, or release project and version
	order    []string
	hits     int
}

// Listing is what a source offers.
type Listing struct {
	// Versions are the tags (or releases) as listed.
	Versions []string
	// Newest is the newest version; Digest its manifest digest, whose
	// metadata.yaml Metadata is.
	Newest, Digest string
	Metadata       *clusterctl.Metadata
	// Truncated tells that the repository has more tags than were listed.
	Truncated bool
	// LatestOnly tells that the source names its latest release only (a
	// release host), not every version.
	LatestOnly bool
}

// OCI lists the version tags of the oci:// repository url and reads the
// metadata.yaml of the newest.
func (l *Lister) OCI(ctx context.Context, url string, access artifact.Access) (Listing, error) {
	ref, err := artifact.ParseURL(url)
	if err != nil {
		return Listing{}, err
	}
	ref.Tag, ref.Digest = "", ""
	tags, truncated, err := l.Fetcher.Tags(ctx, ref, access)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Versions: tags, Truncated: truncated, Newest: Newest(tags)}
	if out.Newest == "" {
		return out, &artifact.NotFoundError{Ref: ref.String() + " (no tag is a version such as v1.14.2)"}
	}
	ref.Tag = out.Newest
	if out.Digest, err = l.Fetcher.Resolve(ctx, ref, access); err != nil {
		return out, err
	}
	ref.Digest = out.Digest
	m, err, _ := l.inflight.Do(out.Digest, func() (any, error) {
		if m := l.cached(out.Digest); m != nil {
			return m, nil
		}
		fetched, err := l.Fetcher.Fetch(ctx, ref, access)
		if err != nil {
			return nil, err
		}
		data, ok := fetched.Files["metadata.yaml"]
		if !ok {
			return nil, &artifact.LayoutError{Ref: ref.String(), Problem: "it holds no metadata.yaml, so the contracts of the versions are unknown"}
		}
		m, err := clusterctl.ParseMetadata(data)
		if err != nil {
			return nil, &artifact.LayoutError{Ref: ref.String(), Problem: err.Error()}
		}
		l.put(out.Digest, m)
		return m, nil
	})
	if err != nil {
		return out, err
	}
	out.Metadata = m.(*clusterctl.Metadata)
	return out, nil
}

// CacheHits is how many listings found their metadata.yaml cached.
func (l *Lister) CacheHits() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hits
}

func (l *Lister) cached(digest string) *clusterctl.Metadata {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.metadata[digest]
	if m != nil {
		l.hits++
	}
	return m
}

func (l *Lister) put(digest string, m *clusterctl.Metadata) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.metadata == nil {
		l.metadata = map[string]*clusterctl.Metadata{}
	}
	if _, ok := l.metadata[digest]; ok {
		return
	}
	if len(l.order) >= maxCachedMetadata {
		delete(l.metadata, l.order[0])
		l.order = l.order[1:]
	}
	l.metadata[digest] = m
	l.order = append(l.order, digest)
}

// Where is where a provider's versions are listed from, as its status
// records the source it was installed from.
type Where struct {
	// OCI is the oci:// repository (after the manager's mirror rules).
	OCI string
	// Release is the release URL, for a provider installed from release
	// assets.
	Release string
	// Unsupported says why the source is not checked (a Helm chart).
	Unsupported string
}

// Release reads the latest release of the project of the release URL
// url: its version, from the host's link to its latest release (one
// request that downloads nothing; never the host's API, which GitHub
// rate-limits), and its metadata.yaml (one download, cached by project
// and version). A release host tells only its latest release, so that is
// the one version offered.
func (l *Lister) Release(ctx context.Context, url string, f *providerrelease.Fetcher) (Listing, error) {
	src, err := providerrelease.ParseURLWith(url, providerrelease.URLOptions{AllowPlainHTTP: f.AllowPlainHTTP, Fields: f.Fields})
	if err != nil {
		return Listing{}, err
	}
	newest, err := f.Latest(ctx, src)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Versions: []string{newest}, Newest: newest, LatestOnly: true}
	key := "release " + src.ProjectURL() + " " + newest
	// Providers of one project (core, kubeadm bootstrap and control
	// plane) are checked at the same moment: one of them downloads.
	m, err, _ := l.inflight.Do(key, func() (any, error) {
		if m := l.cached(key); m != nil {
			return m, nil
		}
		file, err := f.Metadata(ctx, src, newest)
		if err != nil {
			return nil, err
		}
		m, err := clusterctl.ParseMetadata(file.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file.URL, err)
		}
		l.put(key, m)
		return m, nil
	})
	if err != nil {
		return out, err
	}
	out.Metadata = m.(*clusterctl.Metadata)
	return out, nil
}
