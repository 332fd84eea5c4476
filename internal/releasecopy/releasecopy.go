// Package releasecopy keeps, in the cluster, the checked release each
// provider's ExternalArtifact serves. The artifact storage is a volume a
// new manager pod starts without, and a release host may be down just
// then; so the very bytes preflight checked are also kept in ConfigMaps of
// the manager's own namespace, and serving them again reads them there,
// verified against the digest the ExternalArtifact pins. One copy per
// provider, replaced when it installs another release and removed with
// the provider. The sync writes copies (Keep, Prune); resolution reads
// them (Read).
package releasecopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// Label marks the ConfigMaps of one provider's copy with a hash of the
	// provider's kind, namespace and name.
	Label = "providers.capwright.io/release-copy"
	// ProviderAnnotation names the provider (Kind namespace/name) for
	// whoever lists the manager's namespace.
	ProviderAnnotation = "providers.capwright.io/provider"
	// DigestAnnotation is the digest of the artifact the copy holds.
	DigestAnnotation = "providers.capwright.io/digest"
	// partsAnnotation is how many ConfigMaps hold it.
	partsAnnotation = "providers.capwright.io/parts"
	// Key is the key of a part in binaryData.
	Key = "artifact.tar.gz"
)

// PartSize is the largest part of an artifact one ConfigMap holds: the
// API server refuses a ConfigMap over 1MiB.
var PartSize = 768 << 10

// Store reads and writes the copies in Namespace; an empty Namespace
// keeps no copies (the manager runs outside the cluster).
type Store struct {
	// Client writes, and reads metadata (cached).
	Client ctrl.Client
	// Reader reads the ConfigMaps' content, uncached.
	Reader ctrl.Reader
	// Namespace is the manager's namespace.
	Namespace string
}

// Of is the provider a copy is of: its type (one copy per kind),
// namespace and name. A v1alpha1.Provider is one.
type Of interface {
	ProviderType() string
	GetNamespace() string
	GetName() string
}

// ID is the hash naming a provider's copy: of its type (one per kind),
// namespace and name.
func ID(obj Of) string {
	sum := sha256.Sum256([]byte(obj.ProviderType() + "/" + obj.GetNamespace() + "/" + obj.GetName()))
	return hex.EncodeToString(sum[:8])
}

// Name is the name of part i of a provider's copy; part 0 carries the
// digest and the number of parts, and is written last.
func Name(obj Of, i int) string {
	return fmt.Sprintf("capwright-release-%s-%d", ID(obj), i)
}

// Keep makes the provider's copy hold packed, of digest; kind is the
// provider's kind, for whoever reads the copy's annotations. A copy that
// already holds digest costs one read of cached metadata.
func (s Store) Keep(ctx context.Context, kind string, obj Of, digest string, packed []byte) error {
	if s.Namespace == "" {
		return nil
	}
	var head metav1.PartialObjectMetadata
	head.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	err := s.Client.Get(ctx, ctrl.ObjectKey{Namespace: s.Namespace, Name: Name(obj, 0)}, &head)
	switch {
	case err == nil && head.GetAnnotations()[DigestAnnotation] == digest:
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	parts := (len(packed) + PartSize - 1) / PartSize
	// The other parts first, part 0 last: a copy cut short by a crash
	// does not name the new digest.
	for i := parts - 1; i >= 0; i-- {
		end := min((i+1)*PartSize, len(packed))
		if err := s.writePart(ctx, kind, obj, i, parts, digest, packed[i*PartSize:end]); err != nil {
			return err
		}
	}
	return s.Prune(ctx, obj, parts)
}

func (s Store) writePart(ctx context.Context, kind string, obj Of, i, parts int, digest string, data []byte) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: Name(obj, i)}}
	err := s.Reader.Get(ctx, ctrl.ObjectKeyFromObject(cm), cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	create := err != nil
	cm.Labels = map[string]string{Label: ID(obj)}
	cm.Annotations = map[string]string{
		ProviderAnnotation: fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName()),
		DigestAnnotation:   digest,
		partsAnnotation:    strconv.Itoa(parts),
	}
	cm.Data = nil
	cm.BinaryData = map[string][]byte{Key: data}
	if create {
		return s.Client.Create(ctx, cm)
	}
	return s.Client.Update(ctx, cm)
}

// Prune removes the parts of the provider's copy from part keep on (all
// of it for 0).
func (s Store) Prune(ctx context.Context, obj Of, keep int) error {
	if s.Namespace == "" {
		return nil
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := s.Client.List(ctx, &list, ctrl.InNamespace(s.Namespace), ctrl.MatchingLabels{Label: ID(obj)}); err != nil {
		return err
	}
	prefix := strings.TrimSuffix(Name(obj, 0), "0")
	for i := range list.Items {
		item := &list.Items[i]
		if n, err := strconv.Atoi(strings.TrimPrefix(item.GetName(), prefix)); err == nil && n < keep {
			continue
		}
		if err := s.Client.Delete(ctx, item); ctrl.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// Read reads the provider's copy, if it holds digest; nil otherwise.
func (s Store) Read(ctx context.Context, obj Of, digest string) []byte {
	if s.Namespace == "" {
		return nil
	}
	var buf bytes.Buffer
	parts := 1
	for i := 0; i < parts; i++ {
		var cm corev1.ConfigMap
		if err := s.Reader.Get(ctx, ctrl.ObjectKey{Namespace: s.Namespace, Name: Name(obj, i)}, &cm); err != nil {
			return nil
		}
		if cm.Annotations[DigestAnnotation] != digest {
			return nil
		}
		if i == 0 {
			n, err := strconv.Atoi(cm.Annotations[partsAnnotation])
			if err != nil || n < 1 || n > 1024 {
				return nil
			}
			parts = n
		}
		buf.Write(cm.BinaryData[Key])
	}
	return buf.Bytes()
}
