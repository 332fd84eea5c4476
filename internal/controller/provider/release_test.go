package provider

import (
	"context"
	"net/http"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/providerrelease/releasetest"
	"github.com/capwright/capwright/internal/resolve"
)

// releaseEnv serves release v1.14.2 of Cluster API's core at github.com
// (through the fake hosts' transport) and reconciles a CoreProvider
// without a source: the catalog sends it to clusterctl's release URL.
func releaseEnv(t *testing.T) (*fakeEnv, *v1alpha1.CoreProvider, *releasetest.Hosts, map[string][]byte) {
	t.Helper()
	hosts := releasetest.New(t)
	files := map[string][]byte{"metadata.yaml": clusterctltest.Metadata("v1.14.2", "v1beta2"), "core-components.yaml": []byte(clusterctltest.CoreComponents)}
	hosts.GitHub("kubernetes-sigs", "cluster-api", "v1.14.2", files, "")
	core := coreProvider("", "v1.14.2")
	core.Spec.Source = nil
	env := newFakeEnv(t, kindFor(core), core)
	storage, err := fluxartifact.New(t.TempDir(), "http://capwright-artifacts.test")
	if err != nil {
		t.Fatal(err)
	}
	env.r.Artifacts = storage
	env.r.Source.Releases = resolve.ReleaseSettings{Transport: hosts.Transport()}
	env.r.Source.Resolutions = &resolve.Resolutions{}
	return env, core, hosts, files
}

// TestProviderInstallsFromItsGitHubRelease checks the install of a
// catalog provider from its release assets: exactly metadata.yaml and the
// components file of spec.version are fetched (through GitHub's redirect
// to its download host), Flux gets an ExternalArtifact the manager serves
// and a Kustomization reading it, no OCIRepository; the files' sha256 are
// in status; a resync asks the release host nothing; a reconcile request
// fetches again, and a re-uploaded file keeps the installed revision with
// reason ReleaseChanged, naming the file and both digests.
func TestProviderInstallsFromItsGitHubRelease(t *testing.T) {
	ctx := context.Background()
	env, core, hosts, files := releaseEnv(t)
	if _, err := env.reconcile(core); err != nil {
		t.Fatal(err)
	}
	got := env.get(core)
	c := condition(got, v1alpha1.ArtifactResolvedCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ResolvedReason {
		t.Fatalf("ArtifactResolved = %+v, want True Resolved", c)
	}
	art := got.GetStatus().Artifact
	if art == nil || art.URL != "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml" || len(art.Files) != 2 ||
		!strings.HasPrefix(art.Revision, "v1.14.2@sha256:") {
		t.Fatalf("status.artifact = %+v, want the catalog's release URL, v1.14.2@digest and two files", art)
	}
	for _, f := range art.Files {
		if !strings.HasPrefix(f.SHA256, "sha256:") || !strings.Contains(f.URL, "release-assets.githubusercontent.com") || strings.Contains(f.URL, "?") {
			t.Errorf("file %+v: want its sha256 and the download URL it came from, without the signed query", f)
		}
	}
	var paths []string
	for _, r := range hosts.Requests() {
		paths = append(paths, r.Host+r.Path)
	}
	want := []string{
		"github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/metadata.yaml",
		"release-assets.githubusercontent.com/github-production-release-asset/123/metadata.yaml",
		"github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/core-components.yaml",
		"release-assets.githubusercontent.com/github-production-release-asset/123/core-components.yaml",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant exactly:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}

	key := ctrl.ObjectKey{Namespace: core.Namespace, Name: "core-cluster-api"}
	var ea sourcev1.ExternalArtifact
	if err := env.client.Get(ctx, key, &ea); err != nil {
		t.Fatalf("no ExternalArtifact for the release: %v", err)
	}
	if ea.Status.Artifact == nil || ea.Status.Artifact.Digest != art.Digest || !env.r.Artifacts.Exists(*ea.Status.Artifact) {
		t.Fatalf("ExternalArtifact status %+v: want the stored artifact of digest %s", ea.Status.Artifact, art.Digest)
	}
	var ks kustomizev1.Kustomization
	if err := env.client.Get(ctx, key, &ks); err != nil {
		t.Fatal(err)
	}
	if ks.Spec.SourceRef.Kind != sourcev1.ExternalArtifactKind || ks.Spec.SourceRef.Name != key.Name || ks.Spec.Path != "./components" {
		t.Errorf("Kustomization reads %+v at %s, want the ExternalArtifact at ./components", ks.Spec.SourceRef, ks.Spec.Path)
	}
	if err := env.client.Get(ctx, key, &sourcev1.OCIRepository{}); !apierrors.IsNotFound(err) {
		t.Errorf("an OCIRepository was written for a provider installed from its release: %v", err)
	}

	t.Run("a resync asks the release host nothing", func(t *testing.T) {
		before := len(hosts.Requests())
		for range 3 {
			if _, err := env.reconcile(env.get(core)); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(hosts.Requests()) - before; n != 0 {
			t.Errorf("three resyncs made %d requests to the release host, want 0", n)
		}
	})

	t.Run("a re-uploaded file keeps the installed revision", func(t *testing.T) {
		installed := env.get(core)
		installed.GetStatus().InstalledVersion = "v1.14.2" // as the fold leaves it once Flux applied it
		if err := env.client.Status().Update(ctx, installed); err != nil {
			t.Fatal(err)
		}
		files["core-components.yaml"] = []byte(clusterctltest.CoreComponents + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slipped-in\n  namespace: capi-system\n")
		requested := env.get(core)
		requested.SetAnnotations(map[string]string{meta.ReconcileRequestAnnotation: "now"})
		if err := env.client.Update(ctx, requested); err != nil {
			t.Fatal(err)
		}
		if _, err := env.reconcile(env.get(core)); err != nil {
			t.Fatal(err)
		}
		got := env.get(core)
		c := condition(got, v1alpha1.ArtifactResolvedCondition)
		var old string
		for _, f := range art.Files {
			if f.Name == "core-components.yaml" {
				old = f.SHA256
			}
		}
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReleaseChangedReason ||
			!strings.Contains(c.Message, "core-components.yaml was "+old+" and is now sha256:") || !strings.Contains(c.Message, "spec.source.release.digest") {
			t.Fatalf("ArtifactResolved = %+v, want True ReleaseChanged naming the file, both digests and the pin", c)
		}
		if !isWarning(*c) {
			t.Errorf("ReleaseChanged is not a Warning")
		}
		if a := got.GetStatus().Artifact; a.Digest != art.Digest {
			t.Errorf("status.artifact moved to %s, want the installed %s", a.Digest, art.Digest)
		}
		var after sourcev1.ExternalArtifact
		if err := env.client.Get(ctx, key, &after); err != nil {
			t.Fatal(err)
		}
		if after.Status.Artifact.Digest != art.Digest {
			t.Errorf("the ExternalArtifact serves %s now, want the installed %s", after.Status.Artifact.Digest, art.Digest)
		}
	})

	t.Run("the release host down keeps the installed revision", func(t *testing.T) {
		hosts.Handle("github.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "unicorn", http.StatusServiceUnavailable)
		}))
		requested := env.get(core)
		requested.SetAnnotations(map[string]string{meta.ReconcileRequestAnnotation: "later"})
		if err := env.client.Update(ctx, requested); err != nil {
			t.Fatal(err)
		}
		if _, err := env.reconcile(env.get(core)); err != nil {
			t.Fatal(err)
		}
		c := condition(env.get(core), v1alpha1.ArtifactResolvedCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReleaseUnreachableReason || !strings.Contains(c.Message, "503") {
			t.Fatalf("ArtifactResolved = %+v, want True ReleaseUnreachable saying what the host answered", c)
		}
	})
}

// TestBadReleasesAreRefused checks that what is not a release of the
// version asked for is refused with a condition naming the URL and the
// fix, and nothing is written for Flux.
func TestBadReleasesAreRefused(t *testing.T) {
	for _, tt := range []struct {
		name    string
		version string
		serve   func(h *releasetest.Hosts)
		reason  string
		says    []string
	}{
		{name: "a version never released", version: "v1.14.99", reason: v1alpha1.ReleaseNotFoundReason,
			says: []string{"v1.14.99 was never released", "https://github.com/kubernetes-sigs/cluster-api/releases"}},
		{name: "an HTML page instead of YAML", version: "v1.14.2", reason: v1alpha1.ReleaseInvalidReason,
			serve: func(h *releasetest.Hosts) {
				h.Handle("github.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/html")
					_, _ = w.Write([]byte("<html>Sign in</html>"))
				}))
			},
			says: []string{"answered with an HTML page", "metadata.yaml"}},
		{name: "metadata.yaml without the version's release series", version: "v1.14.2", reason: v1alpha1.ReleaseInvalidReason,
			serve: func(h *releasetest.Hosts) {
				h.GitHub("kubernetes-sigs", "cluster-api", "v1.14.2", map[string][]byte{
					"metadata.yaml": clusterctltest.Metadata("v1.13.0", "v1beta2"), "core-components.yaml": []byte(clusterctltest.CoreComponents)}, "")
			},
			says: []string{"metadata.yaml from https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/metadata.yaml", "v1.14"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env, core, hosts, _ := releaseEnv(t)
			if tt.serve != nil {
				tt.serve(hosts)
			}
			core.Spec.Version = tt.version
			if err := env.client.Update(context.Background(), core); err != nil {
				t.Fatal(err)
			}
			if _, err := env.reconcile(env.get(core)); err != nil {
				t.Fatal(err)
			}
			c := condition(env.get(core), v1alpha1.ArtifactResolvedCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.reason {
				t.Fatalf("ArtifactResolved = %+v, want False %s", c, tt.reason)
			}
			for _, s := range tt.says {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q does not say %q", c.Message, s)
				}
			}
			if objs := env.fluxObjects(); len(objs) != 0 {
				t.Errorf("Flux objects written for a refused release: %v", objs)
			}
		})
	}
}
