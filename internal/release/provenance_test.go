package release

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReleaseWritesProvenanceOfEverythingItBuilt(t *testing.T) {
	host := startRegistry(t, nil)
	repo := testRepo(t)
	o := testOptions(t, repo, host+"/capwright")
	o.FilesDir = filepath.Join(t.TempDir(), "files")
	o.BuilderID = "https://ci.example/capwright/release"
	res, err := Release(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Provenance != filepath.Join(o.FilesDir, provenanceFile) || res.Signed || len(res.SBOMs) != 0 {
		t.Errorf("result %+v: want the provenance in %s, unsigned, no SBOM without a generator", res, o.FilesDir)
	}
	data, err := os.ReadFile(res.Provenance)
	if err != nil {
		t.Fatal(err)
	}
	var s inTotoStatement
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	head, err := headCommit(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	def := s.Predicate.BuildDefinition
	if s.Type != inTotoStatementType || s.PredicateType != slsaProvenanceType ||
		def.ExternalParameters.Source != "git+"+sourceURL+"@"+head.hash || def.ResolvedDependencies[0].Digest[gitCommitDigestAlg] != head.hash ||
		def.ExternalParameters.Version != "v1.2.3" || !strings.HasPrefix(def.ExternalParameters.Command, "make release VERSION=v1.2.3") ||
		s.Predicate.RunDetails.Builder.ID != o.BuilderID || def.InternalParameters.Dirty {
		t.Errorf("provenance:\n%s", data)
	}
	// Every artifact by digest: the image index and its two platforms,
	// the chart, the manifests, and the two CLI binaries.
	var digests []string
	for _, sub := range s.Subject {
		digests = append(digests, "sha256:"+sub.Digest["sha256"])
	}
	for _, a := range []Artifact{res.Image, res.Chart, res.Manifests} {
		if !slices.Contains(digests, a.Digest) {
			t.Errorf("provenance subjects %v lack %s", digests, a.Ref())
		}
	}
	if len(s.Subject) != 7 {
		t.Errorf("%d subjects, want 7 (index, 2 platforms, chart, manifests, 2 CLI binaries):\n%s", len(s.Subject), data)
	}
}

func TestSigningFlags(t *testing.T) {
	key := &Signing{Key: "cosign.key"}
	if got := strings.Join(key.flags(true), " "); got != "--yes --key cosign.key --tlog-upload=false --allow-http-registry --allow-insecure-registry" {
		t.Errorf("key signing flags %q", got)
	}
	// Keyless signatures must reach the transparency log: cosign's defaults.
	if got := strings.Join((&Signing{}).flags(false), " "); got != "--yes" {
		t.Errorf("keyless signing flags %q", got)
	}
}

func TestSigningARelease(t *testing.T) {
	o := testOptions(t, testRepo(t), "localhost:5000/capwright")
	o.Signing = &Signing{Cosign: filepath.Join(t.TempDir(), "cosign"), Key: "cosign.key"}
	if _, err := Release(context.Background(), o); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Errorf("a missing cosign: %v, want a refusal saying how to build it", err)
	}
	o.Signing.Cosign = os.Args[0]
	o.Output = t.TempDir()
	if _, err := Release(context.Background(), o); err == nil || !strings.Contains(err.Error(), "capwright mirror") {
		t.Errorf("signing into OUTPUT: %v, want a refusal saying to release to a registry and mirror", err)
	}
}
