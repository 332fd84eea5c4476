// Package fluxartifact stores and serves the artifacts of the Flux
// ExternalArtifact objects Capwright generates (a provider's additional
// manifests), the way Flux's source-controller stores and serves the
// artifacts of its sources: a tar+gzip file on local disk, named by its
// digest, fetched by kustomize-controller over HTTP from the URL in the
// ExternalArtifact's status.
//
// Flux's own storage library (github.com/fluxcd/pkg/artifact) needs a
// development build of go-digest (BLAKE3), which Capwright's dependency line
// cannot take, so this is the small subset Capwright uses: write, look up,
// prune and serve.
package fluxartifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Storage keeps artifacts under Root as
// <kind>/<namespace>/<name>/<sha256 hex>.tar.gz and advertises them under
// BaseURL.
type Storage struct {
	root    string
	baseURL string
	// Restore, when set, is asked to store again the current artifact of
	// the object kind (lower case, as in the path) namespace/name when a
	// request names a file of it that is not stored: another replica
	// stored it, or the storage was emptied by a restart. It must store
	// only what the object's status points at.
	Restore func(ctx context.Context, kind, namespace, name string) error
}

// New prepares the storage directory root (created, private to the
// manager) and the base URL artifacts are advertised under, e.g.
// http://capwright-artifacts.capwright-system.svc.cluster.local.
func New(root, baseURL string) (*Storage, error) {
	if root == "" {
		return nil, errors.New("artifact storage: no directory given")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("artifact storage: advertised address %q is not an http(s)://host[:port] URL", baseURL)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("artifact storage: creating %s: %w", abs, err)
	}
	return &Storage{root: abs, baseURL: strings.TrimSuffix(baseURL, "/")}, nil
}

// Root is the storage directory.
func (s *Storage) Root() string { return s.root }

// Digest is the digest Flux verifies a fetched artifact against.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Artifact describes data as the artifact of the object kind
// namespace/name: its path, URL, digest (also its revision) and size. It
// does not write anything; Exists and Store do.
func (s *Storage) Artifact(kind, namespace, name string, data []byte, now time.Time) (meta.Artifact, error) {
	dir, err := objectDir(kind, namespace, name)
	if err != nil {
		return meta.Artifact{}, err
	}
	digest := Digest(data)
	p := path.Join(dir, strings.TrimPrefix(digest, "sha256:")+".tar.gz")
	size := int64(len(data))
	return meta.Artifact{
		Path:           p,
		URL:            s.baseURL + "/" + p,
		Revision:       digest,
		Digest:         digest,
		LastUpdateTime: metav1.NewTime(now),
		Size:           &size,
	}, nil
}

// Exists tells whether the artifact's file is stored with its size.
func (s *Storage) Exists(a meta.Artifact) bool {
	fi, err := os.Stat(s.local(a.Path))
	return err == nil && fi.Mode().IsRegular() && a.Size != nil && fi.Size() == *a.Size
}

// Store writes data as the artifact a describes (from Artifact) and
// removes the object's older artifacts. The file appears at once and whole
// (written to a temporary file and renamed), so a fetch never sees half of
// it.
func (s *Storage) Store(a meta.Artifact, data []byte) error {
	if Digest(data) != a.Digest {
		return fmt.Errorf("artifact storage: data does not match %s", a.Digest)
	}
	file := s.local(a.Path)
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("artifact storage: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("artifact storage: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("artifact storage: writing %s: %w", a.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("artifact storage: writing %s: %w", a.Path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("artifact storage: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("artifact storage: %w", err)
	}
	return s.pruneExcept(dir, filepath.Base(file))
}

// Remove deletes every artifact of the object kind namespace/name.
func (s *Storage) Remove(kind, namespace, name string) error {
	dir, err := objectDir(kind, namespace, name)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(s.local(dir)); err != nil {
		return fmt.Errorf("artifact storage: %w", err)
	}
	return nil
}

// pruneExcept removes the files of an object's directory but keep.
func (s *Storage) pruneExcept(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("artifact storage: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == keep || strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Storage) local(p string) string { return filepath.Join(s.root, filepath.FromSlash(p)) }

// objectDir is the storage directory of one object. Kubernetes names
// cannot hold a path separator or "..", but the kind is checked too so a
// path can never leave the storage root.
func objectDir(kind, namespace, name string) (string, error) {
	for _, part := range []string{namespace, name} {
		if errs := validation.IsDNS1123Subdomain(part); len(errs) > 0 {
			return "", fmt.Errorf("artifact storage: %q is not a Kubernetes object name: %s", part, strings.Join(errs, "; "))
		}
	}
	if kind == "" || strings.ContainsAny(kind, `/\.`) {
		return "", fmt.Errorf("artifact storage: %q is not a kind", kind)
	}
	return path.Join(strings.ToLower(kind), namespace, name), nil
}

// Recover asks Restore to store again the current artifact of the object
// kind (lower case) namespace/name, as a request for one of its files
// that is not stored would; nothing without a Restore.
func (s *Storage) Recover(ctx context.Context, kind, namespace, name string) error {
	if s == nil || s.Restore == nil {
		return nil
	}
	return s.Restore(ctx, kind, namespace, name)
}
