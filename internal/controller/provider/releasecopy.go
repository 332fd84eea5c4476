package provider

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

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/plan"
)

// The release copy: the artifact storage is a volume a new manager pod
// starts without, and a release host may be down just then. So the checked
// release a provider's ExternalArtifact serves is also kept in the
// cluster, in ConfigMaps of the manager's own namespace
// (ReleaseSettings.CopyNamespace), and restore packs nothing again when it
// can read it there: the very bytes preflight checked, verified against
// the digest the ExternalArtifact pins. One copy per provider, replaced
// when it installs another release and removed with the provider.

const (
	// releaseCopyLabel marks the ConfigMaps of one provider's copy with a
	// hash of the provider's kind, namespace and name.
	releaseCopyLabel = "providers.capwright.io/release-copy"
	// releaseCopyProvider names the provider (Kind namespace/name) for
	// whoever lists the manager's namespace.
	releaseCopyProvider = "providers.capwright.io/provider"
	// releaseCopyDigest is the digest of the artifact the copy holds.
	releaseCopyDigest = "providers.capwright.io/digest"
	// releaseCopyParts is how many ConfigMaps hold it.
	releaseCopyParts = "providers.capwright.io/parts"
	// releaseCopyKey is the key of a part in binaryData.
	releaseCopyKey = "artifact.tar.gz"
)

// releaseCopyPart is the largest part of an artifact one ConfigMap holds:
// the API server refuses a ConfigMap over 1MiB.
var releaseCopyPart = 768 << 10

// releaseCopyID is the hash naming a provider's copy: of its type (one
// per kind), namespace and name.
func releaseCopyID(obj v1alpha1.Provider) string {
	sum := sha256.Sum256([]byte(obj.ProviderType() + "/" + obj.GetNamespace() + "/" + obj.GetName()))
	return hex.EncodeToString(sum[:8])
}

// releaseCopyName is the name of part i of a provider's copy; part 0
// carries the digest and the number of parts, and is written last.
func releaseCopyName(obj v1alpha1.Provider, i int) string {
	return fmt.Sprintf("capwright-release-%s-%d", releaseCopyID(obj), i)
}

// keepReleaseCopy makes the provider's copy hold packed, of digest. A copy
// that already holds digest costs one read of cached metadata.
func (r *Reconciler) keepReleaseCopy(ctx context.Context, obj v1alpha1.Provider, digest string, packed []byte) error {
	ns := r.Releases.CopyNamespace
	if ns == "" {
		return nil
	}
	var head metav1.PartialObjectMetadata
	head.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: ns, Name: releaseCopyName(obj, 0)}, &head)
	switch {
	case err == nil && head.GetAnnotations()[releaseCopyDigest] == digest:
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	parts := (len(packed) + releaseCopyPart - 1) / releaseCopyPart
	// The other parts first, part 0 last: a copy cut short by a crash
	// does not name the new digest.
	for i := parts - 1; i >= 0; i-- {
		end := min((i+1)*releaseCopyPart, len(packed))
		if err := r.writeReleaseCopyPart(ctx, obj, i, parts, digest, packed[i*releaseCopyPart:end]); err != nil {
			return err
		}
	}
	return r.pruneReleaseCopy(ctx, obj, parts)
}

func (r *Reconciler) writeReleaseCopyPart(ctx context.Context, obj v1alpha1.Provider, i, parts int, digest string, data []byte) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Releases.CopyNamespace, Name: releaseCopyName(obj, i)}}
	err := r.Reader.Get(ctx, ctrl.ObjectKeyFromObject(cm), cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	create := err != nil
	cm.Labels = map[string]string{releaseCopyLabel: releaseCopyID(obj)}
	cm.Annotations = map[string]string{
		releaseCopyProvider: fmt.Sprintf("%s %s/%s", r.Kind.Name, obj.GetNamespace(), obj.GetName()),
		releaseCopyDigest:   digest,
		releaseCopyParts:    strconv.Itoa(parts),
	}
	cm.Data = nil
	cm.BinaryData = map[string][]byte{releaseCopyKey: data}
	if create {
		return r.Client.Create(ctx, cm)
	}
	return r.Client.Update(ctx, cm)
}

// pruneReleaseCopy removes the parts of the provider's copy from part
// keep on (all of it for 0).
func (r *Reconciler) pruneReleaseCopy(ctx context.Context, obj v1alpha1.Provider, keep int) error {
	ns := r.Releases.CopyNamespace
	if ns == "" {
		return nil
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(ns), ctrl.MatchingLabels{releaseCopyLabel: releaseCopyID(obj)}); err != nil {
		return err
	}
	prefix := strings.TrimSuffix(releaseCopyName(obj, 0), "0")
	for i := range list.Items {
		item := &list.Items[i]
		if n, err := strconv.Atoi(strings.TrimPrefix(item.GetName(), prefix)); err == nil && n < keep {
			continue
		}
		if err := r.Client.Delete(ctx, item); ctrl.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// releaseCopy reads the provider's copy, if it holds digest; nil
// otherwise.
func (r *Reconciler) releaseCopy(ctx context.Context, obj v1alpha1.Provider, digest string) []byte {
	ns := r.Releases.CopyNamespace
	if ns == "" {
		return nil
	}
	var buf bytes.Buffer
	parts := 1
	for i := 0; i < parts; i++ {
		var cm corev1.ConfigMap
		if err := r.Reader.Get(ctx, ctrl.ObjectKey{Namespace: ns, Name: releaseCopyName(obj, i)}, &cm); err != nil {
			return nil
		}
		if cm.Annotations[releaseCopyDigest] != digest {
			return nil
		}
		if i == 0 {
			n, err := strconv.Atoi(cm.Annotations[releaseCopyParts])
			if err != nil || n < 1 || n > 1024 {
				return nil
			}
			parts = n
		}
		buf.Write(cm.BinaryData[releaseCopyKey])
	}
	return buf.Bytes()
}

// releaseWritten is the release artifact the sync wrote for the provider's
// ExternalArtifact, if it wrote one.
func releaseWritten(obj v1alpha1.Provider, writes []plan.Write) []byte {
	for _, w := range writes {
		if w.Artifact != nil && w.Object.GetName() == objectName(obj) && w.Object.GetNamespace() == obj.GetNamespace() {
			return w.Artifact.Data
		}
	}
	return nil
}
