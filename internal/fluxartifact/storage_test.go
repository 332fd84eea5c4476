package fluxartifact

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newStorage(t *testing.T) *Storage {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "artifacts"), "http://capwright-artifacts.capwright-system.svc.cluster.local./")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreServeAndPrune(t *testing.T) {
	s := newStorage(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	first := []byte("first artifact")
	a, err := s.Artifact("ExternalArtifact", "capi-system", "core-cluster-api-additional", first, now)
	if err != nil {
		t.Fatal(err)
	}
	wantPath := "externalartifact/capi-system/core-cluster-api-additional/" + strings.TrimPrefix(Digest(first), "sha256:") + ".tar.gz"
	if a.Path != wantPath || a.URL != "http://capwright-artifacts.capwright-system.svc.cluster.local./"+wantPath ||
		a.Digest != Digest(first) || a.Revision != a.Digest || *a.Size != int64(len(first)) || !a.LastUpdateTime.Time.Equal(now) {
		t.Fatalf("artifact = %+v", a)
	}
	if s.Exists(a) {
		t.Fatal("Artifact must not write anything")
	}
	if err := s.Store(a, []byte("other bytes")); err == nil {
		t.Fatal("stored data that does not match the artifact's digest")
	}
	if err := s.Store(a, first); err != nil {
		t.Fatal(err)
	}
	if !s.Exists(a) {
		t.Fatal("stored artifact does not exist")
	}
	fi, err := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(a.Path)))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stored file mode %v (%v), want 0600", fi.Mode(), err)
	}

	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	if code, body := get(t, srv.URL+"/"+a.Path); code != http.StatusOK || body != string(first) {
		t.Errorf("GET %s = %d %q", a.Path, code, body)
	}

	second := []byte("second artifact")
	b, err := s.Artifact("ExternalArtifact", "capi-system", "core-cluster-api-additional", second, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store(b, second); err != nil {
		t.Fatal(err)
	}
	if s.Exists(a) || !s.Exists(b) {
		t.Error("storing a new artifact must remove the object's older ones and keep the new one")
	}
	if err := s.Remove("ExternalArtifact", "capi-system", "core-cluster-api-additional"); err != nil {
		t.Fatal(err)
	}
	if s.Exists(b) {
		t.Error("Remove left the artifact")
	}
}

func TestHandlerServesOnlyFiles(t *testing.T) {
	s := newStorage(t)
	data := []byte("manifests")
	a, err := s.Artifact("ExternalArtifact", "ns", "obj", data, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store(a, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(s.Root()), "outside"), []byte("not served"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, p := range []string{"/", "/externalartifact/", "/externalartifact/ns/obj/", "/../outside", "/externalartifact/ns/obj/../../../../outside", "/%2e%2e/outside", "/externalartifact/ns/obj/missing.tar.gz"} {
		if code, body := get(t, srv.URL+p); code != http.StatusNotFound {
			t.Errorf("GET %s = %d %q, want 404", p, code, body)
		}
	}
	resp, err := http.Post(srv.URL+"/"+a.Path, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", resp.StatusCode)
	}
}

func TestRefusals(t *testing.T) {
	if _, err := New("", "http://x"); err == nil {
		t.Error("no directory accepted")
	}
	for _, u := range []string{"", "capwright-artifacts:80", "ftp://x", "http://"} {
		if _, err := New(t.TempDir(), u); err == nil {
			t.Errorf("advertised URL %q accepted", u)
		}
	}
	s := newStorage(t)
	for _, tt := range [][3]string{{"ExternalArtifact", "..", "x"}, {"ExternalArtifact", "ns", "a/b"}, {"../kind", "ns", "x"}, {"ExternalArtifact", "NS", "x"}} {
		if _, err := s.Artifact(tt[0], tt[1], tt[2], []byte("x"), time.Now()); err == nil {
			t.Errorf("Artifact(%q, %q, %q) accepted a name that is no Kubernetes name", tt[0], tt[1], tt[2])
		}
	}
}

func TestServerStopsWithItsContext(t *testing.T) {
	s := newStorage(t)
	addr := make(chan string, 1)
	srv := &Server{Storage: s, Addr: "127.0.0.1:0", Listening: func(a string) { addr <- a }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	url := "http://" + <-addr + "/"
	if code, _ := get(t, url); code != http.StatusNotFound {
		t.Errorf("GET / = %d, want 404 (no listing)", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHandlerRestoresWhatItDoesNotHold checks that a request for an
// artifact the storage does not hold asks Restore for that object, and
// serves the file if Restore stored it; paths that name no object's file
// never reach Restore.
func TestHandlerRestoresWhatItDoesNotHold(t *testing.T) {
	s := newStorage(t)
	data := []byte("manifests the leader stored")
	a, err := s.Artifact("ExternalArtifact", "ns", "obj", data, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	s.Restore = func(_ context.Context, kind, namespace, name string) error {
		asked = append(asked, kind+"/"+namespace+"/"+name)
		if name != "obj" {
			return os.ErrNotExist
		}
		return s.Store(a, data)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	if code, body := get(t, srv.URL+"/"+a.Path); code != http.StatusOK || body != string(data) {
		t.Errorf("GET %s = %d %q, want the restored artifact", a.Path, code, body)
	}
	if code, _ := get(t, srv.URL+"/externalartifact/ns/other/"+strings.TrimPrefix(Digest(data), "sha256:")+".tar.gz"); code != http.StatusNotFound {
		t.Errorf("an artifact Restore cannot store = %d, want 404", code)
	}
	for _, p := range []string{"/externalartifact/ns/obj/", "/externalartifact/Bad_NS/obj/x.tar.gz", "/a/b"} {
		get(t, srv.URL+p)
	}
	if want := []string{"externalartifact/ns/obj", "externalartifact/ns/other"}; strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("Restore was asked for %v, want %v", asked, want)
	}
}
