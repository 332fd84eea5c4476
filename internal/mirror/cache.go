package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/go-digest"
)

// Cache keeps, between runs on one machine, two things a re-run would
// otherwise pay for again:
//
//   - listings: what reading an artifact found (its kind, the images it
//     runs, the notes), by the artifact's manifest digest. Content under a
//     digest never changes, so a listing never goes stale: a moved tag
//     resolves to another digest, which has no listing yet, and the
//     artifact is read and parsed again.
//   - completions: that a run mirrored a reference completely (its tag
//     written, after its images and referrers) into a target, with the
//     digest it had and the digests its images' tags resolved to.
//
// A reference with a completion is not walked again when, at the time of
// the re-run, the source still resolves it to the recorded digest (one
// request, none for a reference by digest alone) and the target still
// holds the reference's tag (or digest) at that digest (one request): a
// moved tag, or a target that lost the copy (reset, repository or tag
// deleted), is noticed and the reference mirrored again. Its images'
// tags are taken as recorded (complete). A completion older than
// CompletionTTL is walked again in full, every image tag resolved anew, to
// pick up a re-tagged image and referrers (signatures, SBOMs) added
// upstream since.
//
// Entries are small JSON files; a missing, unreadable or corrupt one is a
// miss, never an error, and the directory may be deleted at any time.
type Cache struct {
	dir string
	now func() time.Time
}

// CompletionTTL is how long a completion spares a reference the walk of
// its content: a run a day later copies the referrers added upstream in
// between.
const CompletionTTL = 24 * time.Hour

// cacheFormat names the layout of the entries, and what a run lists of an
// artifact: change it when either changes, so that older entries are not
// read.
const cacheFormat = "v1"

// maxCacheEntry bounds each entry read.
const maxCacheEntry = 1 << 20

// NewCache keeps its entries under dir (created when needed).
func NewCache(dir string) *Cache {
	return &Cache{dir: filepath.Join(dir, cacheFormat), now: time.Now}
}

// listing is what reading an artifact found.
type listing struct {
	Kind Kind `json:"kind"`
	// MediaType and Size of the manifest, for a reference by digest alone.
	MediaType string `json:"mediaType"`
	Size      int64  `json:"size"`
	// Images as written in the artifact.
	Images []string `json:"images"`
	Notes  []string `json:"notes,omitempty"`
}

// completion is a reference mirrored completely into a target.
type completion struct {
	// Target and Source say what the entry is for (its file name is their
	// hash).
	Target string `json:"target"`
	Source string `json:"source"`
	// Digest of the artifact's manifest, at the source and the target.
	Digest string `json:"digest"`
	// Images maps each image's source reference to the manifest digest it
	// resolved to.
	Images    map[string]string `json:"images"`
	Completed time.Time         `json:"completed"`
}

func (c *Cache) listingPath(d digest.Digest) string {
	return filepath.Join(c.dir, "listings", d.Algorithm().String()+"-"+d.Encoded()+".json")
}

func (c *Cache) completionPath(target, source string) string {
	sum := sha256.Sum256([]byte(target + "\n" + source))
	return filepath.Join(c.dir, "completions", hex.EncodeToString(sum[:])+".json")
}

// listing returns the listing of the artifact with manifest digest d.
func (c *Cache) listing(d digest.Digest) (*listing, bool) {
	if c == nil || d.Validate() != nil {
		return nil, false
	}
	var l listing
	if !c.read(c.listingPath(d), &l) || l.Kind == "" {
		return nil, false
	}
	return &l, true
}

func (c *Cache) putListing(d digest.Digest, l listing) {
	if c == nil || d.Validate() != nil {
		return
	}
	c.write(c.listingPath(d), l)
}

// completion returns the completion of source at target, unless it is
// older than CompletionTTL.
func (c *Cache) completion(target, source string) (*completion, bool) {
	if c == nil {
		return nil, false
	}
	var done completion
	if !c.read(c.completionPath(target, source), &done) || done.Target != target || done.Source != source {
		return nil, false
	}
	if age := c.now().Sub(done.Completed); age < 0 || age > CompletionTTL {
		return nil, false
	}
	return &done, true
}

func (c *Cache) putCompletion(done completion) {
	if c == nil {
		return
	}
	done.Completed = c.now().UTC()
	c.write(c.completionPath(done.Target, done.Source), done)
}

// forget drops the completion of source at target: the target no longer
// holds what it records.
func (c *Cache) forget(target, source string) {
	if c == nil {
		return
	}
	_ = os.Remove(c.completionPath(target, source))
}

func (c *Cache) read(path string, v any) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCacheEntry+1))
	if err != nil || len(data) > maxCacheEntry {
		return false
	}
	return json.Unmarshal(data, v) == nil
}

// write replaces the entry at path atomically, so that concurrent runs
// read a whole entry or none; failures are ignored, as a cache may.
func (c *Cache) write(path string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".entry-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return
	}
	if tmp.Close() != nil {
		return
	}
	_ = os.Rename(tmp.Name(), path)
}

// DefaultCacheDir is where `capwright mirror` keeps its cache: capwright/mirror
// under the user's cache directory ($XDG_CACHE_HOME, else ~/.cache on
// Linux).
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the mirror: %w", err)
	}
	return filepath.Join(dir, "capwright", "mirror"), nil
}
