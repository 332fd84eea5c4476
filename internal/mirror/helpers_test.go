package mirror_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/mirror"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
)

// project is the path under which the test providers are published, as
// registry.k8s.io/cluster-api/manifests/… upstream.
const project = "cluster-api"

// source is registry A with the three Cluster API providers of the
// fixtures, their images (amd64 and arm64 over a shared base layer) and
// SBOMs attached to the core artifact, to the core controller image and to
// its arm64 manifest.
type source struct {
	reg       *registrytest.Registry
	providers []mirrortest.PushedProvider
	// sboms are the referrers pushed, by the repository they live in.
	sboms map[string][]ocispec.Descriptor
}

func newSource(t *testing.T, opts registrytest.Options) *source {
	t.Helper()
	reg := registrytest.New(t, opts)
	s := &source{reg: reg, sboms: map[string][]ocispec.Descriptor{}}
	for _, p := range mirrortest.CAPIProviders(t, clusterctltest.Current, reg.Host) {
		s.providers = append(s.providers, mirrortest.PushProvider(t, reg.Access(), reg.Ref(p.Repository(project), ""), p, nil))
	}
	core := s.providers[0]
	artifactDesc := mirrortest.Resolve(t, reg.Access(), core.Ref)
	s.attach(t, core.Ref, artifactDesc, "artifact sbom")
	for _, img := range core.Images {
		s.attach(t, img.Ref, img.Index, "image sbom")
		s.attach(t, img.Ref, img.Manifests[1], "arm64 sbom")
	}
	return s
}

func (s *source) attach(t *testing.T, ref artifact.Reference, subject ocispec.Descriptor, payload string) {
	referrer := mirrortest.PushReferrer(t, s.reg.Access(), ref, subject, "", []byte(`{"spdxVersion":"SPDX-2.3","name":"`+payload+`"}`))
	s.sboms[ref.Repository] = append(s.sboms[ref.Repository], referrer)
}

// refs are the three artifact references.
func (s *source) refs() []artifact.Reference {
	var refs []artifact.Reference
	for _, p := range s.providers {
		refs = append(refs, p.Ref)
	}
	return refs
}

// images are all images of the providers.
func (s *source) images() []mirrortest.PushedImage {
	var images []mirrortest.PushedImage
	for _, p := range s.providers {
		for _, img := range p.Images {
			images = append(images, img)
		}
	}
	return images
}

// events records the events of a run.
type events struct {
	mu  sync.Mutex
	all []mirror.Event
	// on, when set, sees each event as it comes.
	on func(mirror.Event)
}

func (e *events) Event(ev mirror.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
	if e.on != nil {
		e.on(ev)
	}
}

// count counts the events of kind about digest d ("" for any).
func (e *events) count(kind mirror.EventKind, d string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Kind == kind && (d == "" || ev.Digest == d) {
			n++
		}
	}
	return n
}

// targetRef is where a source reference lands under target.
func targetRef(target mirror.Target, src artifact.Reference) artifact.Reference {
	return artifact.Reference{Host: target.Host, Repository: target.Repository(src.Repository), Tag: src.Tag}
}

// resolveAt resolves ref's tag with access, returning ok=false when the
// registry does not have it.
func resolveAt(t *testing.T, access artifact.Access, ref artifact.Reference) (ocispec.Descriptor, bool) {
	t.Helper()
	repo, release, err := access.Repository(ref, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	desc, err := repo.Resolve(context.Background(), ref.Tag)
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return ocispec.Descriptor{}, false
		}
		t.Fatalf("resolving %s: %v", ref, err)
	}
	return desc, true
}

// existsAt reports whether ref's repository holds desc.
func existsAt(t *testing.T, access artifact.Access, ref artifact.Reference, desc ocispec.Descriptor) bool {
	t.Helper()
	repo, release, err := access.Repository(ref, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ok, err := repo.Exists(context.Background(), desc)
	if err != nil {
		t.Fatalf("checking %s in %s: %v", desc.Digest, ref, err)
	}
	return ok
}

// referrersAt lists the referrers of subject in ref's repository.
func referrersAt(t *testing.T, access artifact.Access, ref artifact.Reference, subject ocispec.Descriptor) []ocispec.Descriptor {
	t.Helper()
	repo, release, err := access.Repository(ref, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	found, err := registry.Referrers(context.Background(), repo, subject, "")
	if err != nil {
		t.Fatalf("referrers of %s in %s: %v", subject.Digest, ref, err)
	}
	return found
}

// linkingRegistry is a registry that, like distribution, links blobs to
// repositories: a blob uploaded to one repository is unknown in the others
// until it is uploaded or mounted there (go-containerregistry's registry
// shares every blob with all repositories). It counts uploads per digest.
type linkingRegistry struct {
	Host string
	// Mount enables cross-repository mounts; without it the registry
	// answers a mount request by starting an upload, as the spec allows.
	mount bool

	mu sync.Mutex
	// refuse, when set, fails the requests it selects with HTTP 400 (a
	// 5xx would be retried with backoff).
	refuse  func(*http.Request) bool
	links   map[string]bool
	uploads map[string]int
	mounts  map[string]int
}

func newLinkingRegistry(t *testing.T, mount bool) *linkingRegistry {
	l := &linkingRegistry{mount: mount, links: map[string]bool{}, uploads: map[string]int{}, mounts: map[string]int{}}
	next := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		refuse := l.refuse
		l.mu.Unlock()
		if refuse != nil && refuse(r) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"errors":[{"code":"DENIED","message":"quota exceeded"}]}`)
			return
		}
		repo, rest, isBlob := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v2/"), "/blobs/")
		if !isBlob {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		switch {
		case (r.Method == http.MethodHead || r.Method == http.MethodGet) && !strings.HasPrefix(rest, "uploads"):
			if !l.linked(repo, rest) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown to repository"}]}`)
				return
			}
		case r.Method == http.MethodPost && q.Get("mount") != "":
			d := q.Get("mount")
			if l.mount && l.linked(q.Get("from"), d) {
				l.mu.Lock()
				l.links[repo+"@"+d] = true
				l.mounts[d]++
				l.mu.Unlock()
				w.Header().Set("Docker-Content-Digest", d)
				w.Header().Set("Location", "/v2/"+repo+"/blobs/"+d)
				w.WriteHeader(http.StatusCreated)
				return
			}
			r.URL.RawQuery = ""
		case r.Method == http.MethodPut && q.Get("digest") != "":
			rec := &statusRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if rec.status == http.StatusCreated {
				l.mu.Lock()
				l.links[repo+"@"+q.Get("digest")] = true
				l.uploads[q.Get("digest")]++
				l.mu.Unlock()
			}
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	l.Host = strings.TrimPrefix(srv.URL, "http://")
	return l
}

// refuseRequests makes the registry fail the requests refuse selects, or
// none when refuse is nil.
func (l *linkingRegistry) refuseRequests(refuse func(*http.Request) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refuse = refuse
}

func (l *linkingRegistry) linked(repo, d string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.links[repo+"@"+d]
}

func (l *linkingRegistry) counts(d string) (uploads, mounts int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.uploads[d], l.mounts[d]
}

func (l *linkingRegistry) access() artifact.Access {
	return artifact.Access{PlainHTTP: true, UserAgent: "capwright-test"}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}
