package provider

import (
	"bytes"
	"context"
	"strings"
	"testing"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/releasecopy"
	"github.com/capwright/capwright/internal/resolve"
)

// TestReleaseCopyServesARestartedManager checks that a manager starting
// with empty artifact storage and an empty memory, while the release host
// is down, serves Flux the installed release again from its copy in the
// manager's namespace — split over several ConfigMaps when it is large —
// and that without the copy it could not.
func TestReleaseCopyServesARestartedManager(t *testing.T) {
	ctx := context.Background()
	defer func(part int) { releasecopy.PartSize = part }(releasecopy.PartSize)
	releasecopy.PartSize = 256 // several parts of the test's release
	env, core, hosts, _ := releaseEnv(t)
	env.r.Source.Copies.Namespace = "capwright-system"
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	key := ctrl.ObjectKey{Namespace: core.Namespace, Name: "core-cluster-api"}
	var ea sourcev1.ExternalArtifact
	if err := env.client.Get(ctx, key, &ea); err != nil || ea.Status.Artifact == nil {
		t.Fatalf("no served ExternalArtifact: %v", err)
	}
	served := *ea.Status.Artifact

	var copies corev1.ConfigMapList
	if err := env.client.List(ctx, &copies, ctrl.InNamespace("capwright-system"), ctrl.MatchingLabels{releasecopy.Label: releasecopy.ID(core)}); err != nil {
		t.Fatal(err)
	}
	if len(copies.Items) < 2 {
		t.Fatalf("the release is kept in %d ConfigMaps, want it split over several parts of %d bytes", len(copies.Items), releasecopy.PartSize)
	}
	for _, cm := range copies.Items {
		if cm.Annotations[releasecopy.DigestAnnotation] != served.Digest || !strings.Contains(cm.Annotations[releasecopy.ProviderAnnotation], "CoreProvider "+core.Namespace+"/"+core.Name) {
			t.Errorf("ConfigMap %s annotations %v: want the served digest %s and the provider", cm.Name, cm.Annotations, served.Digest)
		}
	}

	// A new manager pod: empty storage, empty memory, and the release
	// host is down.
	hosts.Origin.Close()
	hosts.Download.Close()
	restart := func(t *testing.T) {
		t.Helper()
		storage, err := fluxartifact.New(t.TempDir(), "http://capwright-artifacts.test")
		if err != nil {
			t.Fatal(err)
		}
		env.r.Artifacts, env.r.Source.Cache = storage, &resolve.ArtifactCache{}
	}
	restart(t)
	if err := RestoreAdditional(env.r)(ctx, "externalartifact", key.Namespace, key.Name); err != nil {
		t.Fatal(err)
	}
	if !env.r.Artifacts.Exists(served) {
		t.Fatal("a restarted manager with the release host down does not serve the installed release again from its copy")
	}
	if got := env.r.Source.Copies.Read(ctx, core, served.Digest); fluxartifact.Digest(got) != served.Digest {
		t.Errorf("the copy's parts join to %s, want %s", fluxartifact.Digest(got), served.Digest)
	}

	t.Run("a reconcile serves it again before Flux asks", func(t *testing.T) {
		restart(t)
		env.r.Artifacts.Restore = RestoreAdditional(env.r)
		if err := env.client.Get(ctx, ctrl.ObjectKeyFromObject(core), core); err != nil {
			t.Fatal(err)
		}
		if _, err := env.reconcile(core); err != nil {
			t.Fatal(err)
		}
		if !env.r.Artifacts.Exists(served) {
			t.Fatal("a reconcile of the restarted manager, with the release host down, does not serve the installed release again")
		}
	})

	t.Run("without the copy nothing is served", func(t *testing.T) {
		if err := env.r.Source.Copies.Prune(ctx, core, 0); err != nil {
			t.Fatal(err)
		}
		restart(t)
		_ = RestoreAdditional(env.r)(ctx, "externalartifact", key.Namespace, key.Name)
		if env.r.Artifacts.Exists(served) {
			t.Fatal("served without a copy and without the release host: the test does not show the copy matters")
		}
		var left corev1.ConfigMapList
		if err := env.client.List(ctx, &left, ctrl.InNamespace("capwright-system")); err != nil {
			t.Fatal(err)
		}
		if len(left.Items) != 0 {
			t.Errorf("%d ConfigMaps left after removing the copy", len(left.Items))
		}
	})
}

// TestReleaseCopyPartsShrink checks that a smaller release replacing a
// larger one leaves no part of the larger behind, and that a copy of
// another digest is not read.
func TestReleaseCopyPartsShrink(t *testing.T) {
	ctx := context.Background()
	defer func(part int) { releasecopy.PartSize = part }(releasecopy.PartSize)
	releasecopy.PartSize = 10
	env, core, _, _ := releaseEnv(t)
	env.r.Source.Copies.Namespace = "capwright-system"
	large, small := bytes.Repeat([]byte("a"), 35), []byte("b")
	if err := env.r.Source.Copies.Keep(ctx, "CoreProvider", core, "sha256:large", large); err != nil {
		t.Fatal(err)
	}
	if got := env.r.Source.Copies.Read(ctx, core, "sha256:large"); !bytes.Equal(got, large) {
		t.Fatalf("read %q, want %q", got, large)
	}
	if err := env.r.Source.Copies.Keep(ctx, "CoreProvider", core, "sha256:small", small); err != nil {
		t.Fatal(err)
	}
	if got := env.r.Source.Copies.Read(ctx, core, "sha256:small"); !bytes.Equal(got, small) {
		t.Fatalf("read %q, want %q", got, small)
	}
	if got := env.r.Source.Copies.Read(ctx, core, "sha256:large"); got != nil {
		t.Errorf("the copy of another digest was read: %q", got)
	}
	var left corev1.ConfigMapList
	if err := env.client.List(ctx, &left, ctrl.InNamespace("capwright-system")); err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 1 {
		t.Errorf("%d parts after the copy shrank to one", len(left.Items))
	}
}
