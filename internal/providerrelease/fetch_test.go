package providerrelease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/providerrelease/releasetest"
)

const (
	testToken    = "ghp_test-token-never-shown-0123456789"
	testPassword = "deploy-token-password-never-shown"
	coreURL      = "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml"
)

// capiFiles are the real Cluster API release files of the current version.
func capiFiles(t testing.TB, names ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{MetadataFile: clusterctltest.Read(t, clusterctltest.Current, MetadataFile)}
	for _, n := range names {
		files[n] = clusterctltest.Read(t, clusterctltest.Current, n)
	}
	return files
}

func mustParse(t testing.TB, raw string) Source {
	t.Helper()
	src, err := ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// assertSecretsHidden fails when a message shows a credential or the
// download host's signed query.
func assertSecretsHidden(t testing.TB, msg string) {
	t.Helper()
	for _, secret := range []string{testToken, testPassword, "signed-secret"} {
		if strings.Contains(msg, secret) {
			t.Errorf("the message shows %q:\n%s", secret, msg)
		}
	}
}

// TestFetchGitHub fetches the real core provider of Cluster API from a fake
// github.com that redirects to its download host, with a token: the token
// goes to github.com only.
func TestFetchGitHub(t *testing.T) {
	hosts := releasetest.New(t)
	files := capiFiles(t, "core-components.yaml")
	hosts.GitHub("kubernetes-sigs", "cluster-api", clusterctltest.Current, files, testToken)

	f := &Fetcher{Transport: hosts.Transport(), Auth: Auth{BearerToken: testToken}, UserAgent: "capwright-test"}
	r, err := f.Fetch(context.Background(), mustParse(t, coreURL), clusterctltest.Current, "core")
	if err != nil {
		t.Fatal(err)
	}
	if r.Contract != "v1beta2" || r.Version != clusterctltest.Current || r.Type != "core" {
		t.Errorf("release %s %s contract %s", r.Type, r.Version, r.Contract)
	}
	for _, f := range []File{r.Metadata, r.Components} {
		want := files[f.Name]
		if string(f.Data) != string(want) || f.SHA256 != sha(want) {
			t.Errorf("%s: %d bytes, %s", f.Name, len(f.Data), f.SHA256)
		}
		if f.URL != "https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/"+f.Name {
			t.Errorf("%s: URL %s", f.Name, f.URL)
		}
		if f.FetchedFrom != "https://release-assets.githubusercontent.com/github-production-release-asset/123/"+f.Name {
			t.Errorf("%s: fetched from %s", f.Name, f.FetchedFrom)
		}
	}
	if got := r.Files(); len(got) != 2 || got["core-components.yaml"] == nil || got[MetadataFile] == nil {
		t.Errorf("files %v", len(got))
	}
	contract, err := r.Check("cluster-api")
	if err != nil || contract != "v1beta2" {
		t.Fatalf("Check: %q, %v", contract, err)
	}

	var github, download int
	for _, req := range hosts.Requests() {
		switch req.Host {
		case "github.com":
			github++
			if req.Authorization != "Bearer "+testToken {
				t.Errorf("github.com got Authorization %q", req.Authorization)
			}
		case "release-assets.githubusercontent.com":
			download++
			if req.Authorization != "" {
				t.Errorf("the token went to the download host %s after the redirect", req.Host)
			}
		default:
			t.Errorf("unexpected request to %s%s", req.Host, req.Path)
		}
	}
	if github != 2 || download != 2 {
		t.Errorf("%d requests to github.com, %d to the download host; want exactly the two files from each", github, download)
	}
}

// TestFetchComponentsNamedOtherwise takes the components file the URL
// names (as clusterctl's Docker provider entry does) under the contract's
// name.
func TestFetchComponentsNamedOtherwise(t *testing.T) {
	hosts := releasetest.New(t)
	files := capiFiles(t)
	files["core-components-development.yaml"] = clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml")
	hosts.GitHub("o", "r", clusterctltest.Current, files, "")
	f := &Fetcher{Transport: hosts.Transport()}
	r, err := f.Fetch(context.Background(), mustParse(t, "https://github.com/o/r/releases/latest/core-components-development.yaml"), clusterctltest.Current, "core")
	if err != nil {
		t.Fatal(err)
	}
	if r.Components.Name != "core-components.yaml" || !strings.HasSuffix(r.Components.URL, "/core-components-development.yaml") {
		t.Errorf("components %s from %s", r.Components.Name, r.Components.URL)
	}
	if _, err := r.Check("cluster-api"); err != nil {
		t.Fatal(err)
	}
}

// TestFetchGitLab reads a GitLab generic package with a project path, with
// basic auth (a deploy token).
func TestFetchGitLab(t *testing.T) {
	hosts := releasetest.New(t)
	prefix := "/api/v4/projects/capi%2Fkubeadm/packages/generic/bootstrap"
	hosts.Files("gitlab.example.com", prefix, clusterctltest.Current, capiFiles(t, "bootstrap-components.yaml"), func(w http.ResponseWriter, r *http.Request) bool {
		if user, pass, ok := r.BasicAuth(); !ok || user != "deployer" || pass != testPassword {
			http.Error(w, `{"message":"401 Unauthorized"}`, http.StatusUnauthorized)
			return false
		}
		return true
	})
	src := mustParse(t, "https://gitlab.example.com"+prefix+"/latest/bootstrap-components.yaml")
	f := &Fetcher{Transport: hosts.Transport(), Auth: Auth{Username: "deployer", Password: testPassword}}
	r, err := f.Fetch(context.Background(), src, clusterctltest.Current, "bootstrap")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Check("kubeadm"); err != nil {
		t.Fatal(err)
	}
	if r.Metadata.URL != "https://gitlab.example.com"+prefix+"/v1.14.2/metadata.yaml" || r.Metadata.FetchedFrom != r.Metadata.URL {
		t.Errorf("metadata from %s (%s)", r.Metadata.URL, r.Metadata.FetchedFrom)
	}
	if src.ProjectURL() != "https://gitlab.example.com/capi/kubeadm" {
		t.Errorf("project %s", src.ProjectURL())
	}

	// A wrong password: a credentials error that does not show it.
	f.Auth.Password = "wrong-" + testPassword
	_, err = f.Fetch(context.Background(), src, clusterctltest.Current, "bootstrap")
	wantError(t, err, ReasonUnauthorized,
		"https://gitlab.example.com"+prefix+"/v1.14.2/metadata.yaml answered HTTP 401 Unauthorized: the host refused the credentials sent (basic auth for user \"deployer\"); check the credentials in spec.source.release.secretRef")
}

// TestFetchPlainBase reads a plain HTTPS mirror from its base URL.
func TestFetchPlainBase(t *testing.T) {
	hosts := releasetest.New(t)
	hosts.Files("mirror.example.com", "/capi/control-plane-kubeadm", clusterctltest.Current, capiFiles(t, "control-plane-components.yaml"), nil)
	f := &Fetcher{Transport: hosts.Transport()}
	r, err := f.Fetch(context.Background(), mustParse(t, "https://mirror.example.com/capi/control-plane-kubeadm/"), clusterctltest.Current, "control-plane")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Check("kubeadm"); err != nil {
		t.Fatal(err)
	}
	if r.Components.URL != "https://mirror.example.com/capi/control-plane-kubeadm/v1.14.2/control-plane-components.yaml" {
		t.Errorf("components from %s", r.Components.URL)
	}
}

func wantError(t *testing.T, err error, reason Reason, wants ...string) {
	t.Helper()
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("err = %v (%T), want a *providerrelease.Error", err, err)
	}
	if perr.Reason != reason {
		t.Errorf("reason %s, want %s: %v", perr.Reason, reason, err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n  %v\nlacks\n  %s", err, want)
		}
	}
	assertSecretsHidden(t, err.Error())
}

// TestFetchRefusals covers every bad answer a release host may give.
func TestFetchRefusals(t *testing.T) {
	ctx := context.Background()
	files := capiFiles(t, "core-components.yaml")
	base := "https://mirror.example.com/capi/core"
	metadataURL := base + "/v1.14.2/metadata.yaml"
	componentsURL := base + "/v1.14.2/core-components.yaml"
	serve := func(hosts *releasetest.Hosts, h http.HandlerFunc) { hosts.Handle("mirror.example.com", h) }

	t.Run("never released", func(t *testing.T) {
		hosts := releasetest.New(t)
		hosts.GitHub("kubernetes-sigs", "cluster-api", clusterctltest.Current, files, "")
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, coreURL), "v1.14.99", "core")
		wantError(t, err, ReasonNotReleased,
			"version v1.14.99 was never released at https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.99/metadata.yaml (HTTP 404 Not Found); check spec.version against the project's releases at https://github.com/kubernetes-sigs/cluster-api/releases")
	})
	t.Run("never released, or private: GitHub's 404 to credentials it does not accept", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "Not Found", http.StatusNotFound) })
		_, err := (&Fetcher{Transport: hosts.Transport(), Auth: Auth{BearerToken: testToken}}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonNotReleased,
			"version v1.14.2 was never released at "+metadataURL+" (HTTP 404 Not Found), or the host does not accept the credentials sent (a bearer token): hosts such as GitHub answer 404 to them for a private project; check the credentials in spec.source.release.secretRef and that they may read this project's releases, and spec.version against the project's releases")
		_, err = (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonNotReleased,
			"version v1.14.2 was never released at "+metadataURL+" (HTTP 404 Not Found); check spec.version against the project's releases; if the project's releases are private (hosts such as GitHub then answer 404 without credentials), give credentials with spec.source.release.secretRef")
	})
	t.Run("components file missing", func(t *testing.T) {
		hosts := releasetest.New(t)
		hosts.GitHub("kubernetes-sigs", "cluster-api", clusterctltest.Current, files, "")
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, "https://github.com/kubernetes-sigs/cluster-api"), clusterctltest.Current, "infrastructure")
		wantError(t, err, ReasonNotReleased,
			"the release v1.14.2 has no infrastructure-components.yaml: https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/infrastructure-components.yaml answered HTTP 404 Not Found, while its metadata.yaml is there; check the provider type (infrastructure) and the components file the URL names (spec.source.release.url)")
	})
	t.Run("latest", func(t *testing.T) {
		hosts := releasetest.New(t)
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, coreURL), "latest", "core")
		wantError(t, err, ReasonInvalidVersion, `version "latest" is not a release of `+coreURL+`; set spec.version to a release tag`)
		if len(hosts.Requests()) != 0 {
			t.Errorf("requests were sent: %v", hosts.Requests())
		}
	})
	t.Run("HTML page by content type", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("apiVersion: looks like yaml but the host says HTML\n"))
		})
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonNotYAML, metadataURL+" answered with an HTML page, not the release's YAML (Content-Type text/html); check the URL: it must name the release file itself, not a web page")
	})
	t.Run("HTML page by body", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte("\n  <!DOCTYPE html><html><body>Sign in</body></html>"))
		})
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonNotYAML, metadataURL+" answered with an HTML page, not the release's YAML (its body starts with <)", "a login page means the host wants credentials: spec.source.release.secretRef")
	})
	t.Run("JSON error with 200", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"message":"404 Package Not Found"}`))
		})
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonNotYAML, metadataURL+` answered with a JSON error response instead of YAML: {"message":"404 Package Not Found"}`)
	})
	t.Run("over the size bound, by Content-Length", func(t *testing.T) {
		hosts := releasetest.New(t)
		hosts.Files("mirror.example.com", "/capi/core", clusterctltest.Current, files, nil)
		_, err := (&Fetcher{Transport: hosts.Transport(), MaxSize: 100 << 10}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonTooLarge, componentsURL+" does not fit the size limit of 102400 bytes for the release files together", "its Content-Length is 1174587 bytes",
			"raise the manager's --max-artifact-size if this release is really that large")
	})
	t.Run("over the size bound, streamed", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, r *http.Request) {
			data := files[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]
			for len(data) > 0 { // chunked: no Content-Length
				n := min(len(data), 32<<10)
				_, _ = w.Write(data[:n])
				w.(http.Flusher).Flush()
				data = data[n:]
			}
		})
		_, err := (&Fetcher{Transport: hosts.Transport(), MaxSize: 100 << 10, Fields: Fields{MaxSize: "--max-artifact-size"}}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonTooLarge, componentsURL+" does not fit the size limit of 102400 bytes", "it is larger", "raise --max-artifact-size")
	})
	t.Run("metadata without the version's series", func(t *testing.T) {
		hosts := releasetest.New(t)
		old := map[string][]byte{MetadataFile: clusterctltest.Read(t, clusterctltest.Previous, MetadataFile), "core-components.yaml": files["core-components.yaml"]}
		hosts.Files("mirror.example.com", "/capi/core", clusterctltest.Current, old, nil)
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonInvalidRelease, "metadata.yaml from "+metadataURL+" has no release series for version v1.14.2 (v1.14); it lists v1.13 (v1beta2)",
			"check that the URL and the version belong to the same project")
	})
	t.Run("not a metadata file", func(t *testing.T) {
		hosts := releasetest.New(t)
		hosts.Files("mirror.example.com", "/capi/core", clusterctltest.Current, map[string][]byte{MetadataFile: []byte("name: not metadata\n")}, nil)
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonInvalidRelease, "metadata.yaml from "+metadataURL+` has apiVersion "" and kind ""`)
	})
	t.Run("redirect to a host the rules do not allow", func(t *testing.T) {
		hosts := releasetest.New(t)
		hosts.Handle("github.com", http.RedirectHandler("https://evil.example/x/metadata.yaml?"+releasetest.SignedQuery, http.StatusFound))
		hosts.Handle("evil.example", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(files[MetadataFile]) }))
		f := &Fetcher{Transport: hosts.Transport(), Auth: Auth{BearerToken: testToken}}
		_, err := f.Fetch(ctx, mustParse(t, coreURL), clusterctltest.Current, "core")
		wantError(t, err, ReasonRedirectRefused,
			"https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/metadata.yaml redirects to https://evil.example/x/metadata.yaml, a host the redirect rules do not allow; if evil.example is the project's download host, allow it with the manager's --release-redirect-host")
		for _, req := range hosts.Requests() {
			if req.Host == "evil.example" {
				t.Errorf("the refused redirect was followed")
			}
		}

		// Allowed explicitly: followed, without the token.
		f.AllowedRedirectHosts = AllowHosts("evil.example")
		r, err := f.Fetch(ctx, mustParse(t, coreURL), clusterctltest.Current, "core")
		if err != nil {
			t.Fatal(err)
		}
		if r.Components.FetchedFrom != "https://evil.example/x/metadata.yaml" {
			t.Errorf("components fetched from %s", r.Components.FetchedFrom)
		}
		var followed bool
		for _, req := range hosts.Requests() {
			if req.Host == "evil.example" {
				followed = true
				if req.Authorization != "" {
					t.Errorf("the token went to %s after an allowed redirect", req.Host)
				}
			}
		}
		if !followed {
			t.Error("the allowed redirect was not followed")
		}
	})
	t.Run("redirect to plain HTTP", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://mirror.example.com"+r.URL.Path, http.StatusMovedPermanently)
		})
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonRedirectRefused, metadataURL+" redirects to http://mirror.example.com/capi/core/v1.14.2/metadata.yaml, refused; the release must stay on HTTPS")
	})
	t.Run("redirect loop", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path, http.StatusFound) })
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonRedirectRefused, metadataURL+" redirects more than 5 times")
	})
	t.Run("bad token", func(t *testing.T) {
		hosts := releasetest.New(t)
		hosts.GitHub("kubernetes-sigs", "cluster-api", clusterctltest.Current, files, "the-right-token")
		_, err := (&Fetcher{Transport: hosts.Transport(), Auth: Auth{BearerToken: testToken}, Fields: Fields{Credentials: "--release-token-env"}}).Fetch(ctx, mustParse(t, coreURL), clusterctltest.Current, "core")
		wantError(t, err, ReasonUnauthorized,
			"https://github.com/kubernetes-sigs/cluster-api/releases/download/v1.14.2/metadata.yaml answered HTTP 401 Unauthorized: the host refused the credentials sent (a bearer token); check the credentials in --release-token-env and that they may read this project's releases")
	})
	t.Run("credentials required", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "forbidden", http.StatusForbidden) })
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonUnauthorized, metadataURL+" answered HTTP 403 Forbidden: the host requires credentials; give a token or basic auth with spec.source.release.secretRef")
	})
	t.Run("server error", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "oops", http.StatusBadGateway) })
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonHTTPError, metadataURL+" answered HTTP 502 Bad Gateway; check the URL, or retry later")
	})
	t.Run("rate limited", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "slow down", http.StatusTooManyRequests) })
		_, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonHTTPError, metadataURL+" answered HTTP 429 Too Many Requests: the host limits the rate of requests")
	})
	t.Run("a host that does not answer", func(t *testing.T) {
		hosts := releasetest.New(t)
		serve(hosts, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		_, err := (&Fetcher{Transport: hosts.Transport(), Timeout: 200 * time.Millisecond}).Fetch(ctx, mustParse(t, base), clusterctltest.Current, "core")
		wantError(t, err, ReasonUnreachable, "fetching "+metadataURL+": context deadline exceeded",
			"the host did not answer in time: check that it serves and that the network path from here reaches it")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%v does not wrap context.DeadlineExceeded", err)
		}
	})
	t.Run("unknown certificate authority", func(t *testing.T) {
		hosts := releasetest.New(t)
		hosts.Files("127.0.0.1", "/capi/core", clusterctltest.Current, files, nil)
		raw := "https://" + hosts.OriginHost() + "/capi/core"
		_, err := (&Fetcher{}).Fetch(ctx, mustParse(t, raw), clusterctltest.Current, "core")
		wantError(t, err, ReasonUnreachable, "fetching "+raw+"/v1.14.2/metadata.yaml: ", "trust the host's certificate authority with spec.source.release.certSecretRef")

		// Trusted: fetched without a custom transport.
		r, err := (&Fetcher{RootCAs: hosts.RootCAs}).Fetch(ctx, mustParse(t, raw), clusterctltest.Current, "core")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Check("cluster-api"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("plain HTTP", func(t *testing.T) {
		src, err := ParseURLWith("http://127.0.0.1:1/capi/core", URLOptions{AllowPlainHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = (&Fetcher{}).Fetch(ctx, src, clusterctltest.Current, "core")
		wantError(t, err, ReasonInvalidURL, "release URL http://127.0.0.1:1/capi/core is plain HTTP; use https://, or allow plain HTTP explicitly with spec.source.release.insecure")
	})
}

// TestCheckRefusesBrokenComponents runs the artifact checks publish runs
// and names the file's URL.
func TestCheckRefusesBrokenComponents(t *testing.T) {
	hosts := releasetest.New(t)
	files := capiFiles(t)
	files["core-components.yaml"] = []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: [unclosed\n")
	hosts.Files("mirror.example.com", "/capi/core", clusterctltest.Current, files, nil)
	r, err := (&Fetcher{Transport: hosts.Transport()}).Fetch(context.Background(), mustParse(t, "https://mirror.example.com/capi/core"), clusterctltest.Current, "core")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Check("cluster-api")
	wantError(t, err, ReasonInvalidRelease, "core-components.yaml from https://mirror.example.com/capi/core/v1.14.2/core-components.yaml: ")

	// A provider name publish refuses: the artifact check's error, in the chain.
	files["core-components.yaml"] = clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml")
	r, err = (&Fetcher{Transport: hosts.Transport()}).Fetch(context.Background(), mustParse(t, "https://mirror.example.com/capi/core"), clusterctltest.Current, "core")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Check("Not_A_Name")
	wantError(t, err, ReasonInvalidRelease, `provider name "Not_A_Name" (--name) is not a valid provider name`)
	var releaseErr *artifact.ReleaseError
	if !errors.As(err, &releaseErr) {
		t.Errorf("the *artifact.ReleaseError is not in the chain of %v", err)
	}
}
