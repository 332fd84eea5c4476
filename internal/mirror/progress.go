package mirror

import (
	"sync"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// RefStarted: reading the artifact Ref began.
	RefStarted EventKind = iota + 1
	// RefPlanned: the artifact Ref was read; it is an ArtifactKind and
	// runs Images container images; Notes are what to know about it.
	RefPlanned
	// BlobCopied: a blob of Size bytes was uploaded to Repository.
	BlobCopied
	// BlobMounted: a blob was mounted into Repository from another target
	// repository that received it earlier in the run; no bytes moved.
	BlobMounted
	// BlobSkipped: Repository already held the blob.
	BlobSkipped
	// BlobFailed: copying the blob failed with Err.
	BlobFailed
	// ManifestCopied: a manifest was pushed to Repository by digest.
	ManifestCopied
	// ManifestSkipped: Repository already held the manifest.
	ManifestSkipped
	// TagWritten: Tag now points to Digest in Repository.
	TagWritten
	// ImageDone: the image Subject and its referrers are in place (Err
	// nil) or not; Skipped when the target held all of it already.
	ImageDone
	// Repacked: the artifact Ref was rebuilt in the contract layout; its
	// digest changed from SourceDigest to Digest.
	Repacked
	// RefDone: the artifact Ref is mirrored and tagged; Skipped when the
	// target held all of it already.
	RefDone
	// RefFailed: mirroring the artifact Ref failed with Err; its tag was
	// not written.
	RefFailed
)

// Event is one step of a mirror run. Fields not meaningful for a Kind are
// zero.
type Event struct {
	Kind EventKind
	// Ref is the artifact reference as given (Ref* and Repacked events).
	Ref string
	// Subject is the artifact or image the content belongs to, as its
	// source reference.
	Subject string
	// Repository is the target repository (host/path).
	Repository string
	Digest     string
	// Tag is the tag written (TagWritten).
	Tag  string
	Size int64
	// Images is the number of images of an artifact (RefPlanned).
	Images int
	// ArtifactKind is what the artifact is (Ref* events), Notes what to
	// know about it (RefPlanned).
	ArtifactKind Kind
	Notes        []string
	// SourceDigest is the digest before repacking (Repacked).
	SourceDigest string
	Skipped      bool
	Err          error
}

// Progress receives the events of a run. Event is called from one
// goroutine at a time, in the order things happen; keep it quick.
type Progress interface {
	Event(Event)
}

// ProgressFunc adapts a function to Progress.
type ProgressFunc func(Event)

// Event calls f.
func (f ProgressFunc) Event(e Event) { f(e) }

// Tally counts what was copied, found already present, or failed.
type Tally struct {
	Copied, Skipped, Failed int
}

// BlobTally counts blobs per target repository, and their bytes.
type BlobTally struct {
	// Copied blobs were uploaded; Mounted ones were linked from another
	// target repository without moving bytes; Skipped ones were present.
	Copied, Mounted, Skipped, Failed int
	BytesCopied, BytesSkipped        int64
}

// recorder keeps the tallies of a Summary and forwards events to the
// Progress, one at a time.
type recorder struct {
	mu       sync.Mutex
	summary  *Summary
	progress Progress
}

func (r *recorder) emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.summary
	switch e.Kind {
	case BlobCopied:
		s.Blobs.Copied++
		s.Blobs.BytesCopied += e.Size
	case BlobMounted:
		s.Blobs.Mounted++
	case BlobSkipped:
		s.Blobs.Skipped++
		s.Blobs.BytesSkipped += e.Size
	case BlobFailed:
		s.Blobs.Failed++
	case ManifestCopied:
		s.Manifests.Copied++
	case ManifestSkipped:
		s.Manifests.Skipped++
	case ImageDone:
		count(&s.Images, e)
	case RefDone, RefFailed:
		if e.ArtifactKind == KindImage {
			// An image entry of an OCI layout.
			count(&s.Images, e)
		} else {
			count(&s.Artifacts, e)
		}
	}
	if r.progress != nil {
		r.progress.Event(e)
	}
}

func count(t *Tally, e Event) {
	switch {
	case e.Err != nil || e.Kind == RefFailed:
		t.Failed++
	case e.Skipped:
		t.Skipped++
	default:
		t.Copied++
	}
}
