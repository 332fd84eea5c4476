package mirror

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
)

// summaryOf builds the summary of a run that mirrored artifacts with the
// given images to target, as Run fills it.
func summaryOf(t *testing.T, target Target, artifacts map[string][]string) *Summary {
	t.Helper()
	s := &Summary{Target: target}
	for _, url := range slices.Sorted(maps.Keys(artifacts)) {
		ref, err := artifact.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		res := Result{Source: ref, Target: artifact.Reference{Host: target.Host, Repository: target.Repository(ref.Repository), Tag: ref.Tag}}
		for _, written := range artifacts[url] {
			img, err := parseImage(written)
			if err != nil {
				t.Fatal(err)
			}
			res.Images = append(res.Images, Image{Written: written, Name: img.Name, Source: img.Source,
				Target: artifact.Reference{Host: target.Host, Repository: target.Repository(img.Source.Repository), Tag: img.Source.Tag, Digest: img.Source.Digest}})
		}
		s.Results = append(s.Results, res)
	}
	return s
}

func TestRulesRewriteEveryMirroredReference(t *testing.T) {
	for _, target := range []Target{{Host: "mirror.example.com:5000", Prefix: "capi"}, {Host: "10.0.0.1:5000"}} {
		t.Run(target.String(), func(t *testing.T) {
			s := summaryOf(t, target, map[string][]string{
				"oci://registry.k8s.io/cluster-api/manifests/core-cluster-api:v1.14.2": {"registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2"},
				"oci://ghcr.io/example/manifests/infrastructure-example:v0.3.0": {
					"ghcr.io/example/controller:v0.3.0", "nginx:1.27", "bitnami/kubectl:1.31", "docker.io/busybox:1", "quay.io/a/b@sha256:" + sha,
				},
			})
			rules := s.Rules()

			var buf bytes.Buffer
			if err := WriteRules(&buf, s, time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "mirror-rules.txt")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			read, err := catalog.ReadMirrorFile(path)
			if err != nil {
				t.Fatalf("ReadMirrorFile: %v\n%s", err, buf.String())
			}
			if !slices.Equal(read, rules) {
				t.Errorf("read back %v, wrote %v", read, rules)
			}
			if !strings.Contains(buf.String(), "# Registry mirror rules written by `capwright mirror` on 2026-11-20T10:00:00Z.") ||
				!strings.Contains(buf.String(), "oci://registry.k8s.io/cluster-api/manifests/core-cluster-api:v1.14.2 -> oci://"+target.Host) {
				t.Errorf("header does not say when and what was mirrored:\n%s", buf.String())
			}

			for _, r := range s.Results {
				from, want := r.Source.Host+"/"+r.Source.Repository, r.Target.Host+"/"+r.Target.Repository
				if got, _ := read.Rewrite(from); got != want {
					t.Errorf("artifact %s rewrites to %s, copied to %s", from, got, want)
				}
				// The controller's catalog URL goes through the same rules.
				for _, img := range r.Images {
					want := img.Target.Host + "/" + img.Target.Repository
					if got, _ := read.Rewrite(img.Name); got != want {
						t.Errorf("image %s rewrites to %s, copied to %s", img.Written, got, want)
					}
				}
			}
			// Registry hosts map to the target as a whole.
			for _, host := range []string{"registry.k8s.io", "ghcr.io", "quay.io"} {
				if !slices.Contains(read, catalog.MirrorRule{From: host, To: target.String()}) {
					t.Errorf("no host rule %s=%s in %v", host, target, read)
				}
			}
		})
	}
}

func TestRulesLeaveOutFailedReferences(t *testing.T) {
	s := summaryOf(t, Target{Host: "m:5000"}, map[string][]string{
		"oci://a.example.com/x/manifests/core-x:v1": {"a.example.com/x/controller:v1"},
		"oci://b.example.com/y/manifests/core-y:v1": {"b.example.com/y/controller:v1"},
	})
	s.Results[1].Err = &artifact.NotFoundError{Ref: "b.example.com/y/manifests/core-y:v1"}
	rules := s.Rules()
	if want := (catalog.Mirrors{{From: "a.example.com", To: "m:5000"}}); !slices.Equal(rules, want) {
		t.Errorf("Rules = %v, want %v", rules, want)
	}
	var buf bytes.Buffer
	if err := WriteRules(&buf, s, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "# Not mirrored (failed):\n#   oci://b.example.com/y/manifests/core-y:v1\n") {
		t.Errorf("the header does not list the failed reference:\n%s", buf.String())
	}
}
