package providerrelease

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/providerrelease/releasetest"
)

// fakeLatest serves github.com's links for kubernetes-sigs/cluster-api:
// the latest link redirects to latest's download link (when latest is
// set), which redirects to the download host serving metadata.yaml.
func fakeLatest(t *testing.T, latest string, metadata []byte) *releasetest.Hosts {
	t.Helper()
	hosts := releasetest.New(t)
	const repo = "/kubernetes-sigs/cluster-api/releases/"
	hosts.Handle("github.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == repo+"latest/download/metadata.yaml" && latest != "":
			http.Redirect(w, r, "https://github.com"+repo+"download/"+latest+"/metadata.yaml", http.StatusFound)
		case strings.HasPrefix(r.URL.Path, repo+"download/") && strings.HasSuffix(r.URL.Path, "/metadata.yaml"):
			http.Redirect(w, r, "https://release-assets.githubusercontent.com/github-production-release-asset/1/metadata.yaml?"+releasetest.SignedQuery, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	hosts.Handle("release-assets.githubusercontent.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(metadata)
	}))
	return hosts
}

// TestLatest: the latest release is what the host's latest link redirects
// to, asked with one request that downloads nothing; then metadata.yaml
// alone of that release is fetched.
func TestLatest(t *testing.T) {
	ctx := context.Background()
	metadata := capiFiles(t)[MetadataFile]
	hosts := fakeLatest(t, "v1.14.2", metadata)
	f := &Fetcher{Transport: hosts.Transport()}
	src := mustParse(t, "https://github.com/kubernetes-sigs/cluster-api/releases/v1.13.6/core-components.yaml")

	latest, err := f.Latest(ctx, src)
	if err != nil || latest != "v1.14.2" {
		t.Fatalf("Latest = %q, %v", latest, err)
	}
	if reqs := hosts.Requests(); len(reqs) != 1 || reqs[0].Host != "github.com" {
		t.Errorf("Latest made %d requests, want 1 to github.com: %+v", len(reqs), reqs)
	}
	file, err := f.Metadata(ctx, src, latest)
	if err != nil || string(file.Data) != string(metadata) || !strings.HasSuffix(file.URL, "/releases/download/v1.14.2/metadata.yaml") {
		t.Fatalf("Metadata: %+v, %v", file.URL, err)
	}

	// No release, no latest link: a clear error.
	none := fakeLatest(t, "", metadata)
	_, err = (&Fetcher{Transport: none.Transport()}).Latest(ctx, src)
	var re *Error
	if !errors.As(err, &re) || re.Reason != ReasonNotReleased || !strings.Contains(err.Error(), "no latest release") {
		t.Errorf("no latest: %v", err)
	}

	// GitLab has no latest link.
	gitlab := mustParse(t, "https://gitlab.example.com/api/v4/projects/1/packages/generic/capx/v0.1.0/infrastructure-components.yaml")
	if _, err := f.Latest(ctx, gitlab); err == nil || !strings.Contains(err.Error(), "no link to its latest release") {
		t.Errorf("GitLab: %v", err)
	}

	// A mirror rule sends the latest link to the mirror.
	mirrored := &Fetcher{Transport: hosts.Transport(), Rewrite: func(u string) string {
		return strings.Replace(u, "https://github.com/", "https://mirror.example.com/gh/", 1)
	}}
	hosts.Handle("mirror.example.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gh/kubernetes-sigs/cluster-api/releases/latest/download/metadata.yaml" {
			http.Redirect(w, r, "/gh/kubernetes-sigs/cluster-api/releases/download/v1.14.9/metadata.yaml", http.StatusFound)
			return
		}
		http.NotFound(w, r)
	}))
	if latest, err := mirrored.Latest(ctx, src); err != nil || latest != "v1.14.9" {
		t.Errorf("mirrored Latest = %q, %v", latest, err)
	}
}
