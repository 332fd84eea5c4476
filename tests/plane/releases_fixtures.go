package plane

import (
	"fmt"
	"os"
	"path/filepath"
)

// CAPAVersion is the Cluster API Provider AWS release that `make fixtures`
// renders into bin/fixtures/capa/<version>/ (infrastructure-components.yaml
// and metadata.yaml): a real provider from outside the cluster-api
// repository, the one the module proxy serves here (see tests/tools/capa.go).
const CAPAVersion = "v2.13.0"

// FixtureRelease is a provider whose releases `make fixtures` renders, and
// the GitHub repository that publishes them.
type FixtureRelease struct {
	// Dir is the directory under bin/fixtures holding one directory per
	// release tag.
	Dir         string
	Owner, Repo string
	// Files are the clusterctl file names of the release (components
	// files and metadata.yaml).
	Files []string
}

// FixtureReleases are the rendered releases, by the repository their real
// releases come from.
var FixtureReleases = []FixtureRelease{
	{
		// Cluster API core, kubeadm bootstrap and kubeadm control plane:
		// one release of kubernetes-sigs/cluster-api carries all three.
		Dir: "capi", Owner: "kubernetes-sigs", Repo: "cluster-api",
		Files: []string{"core-components.yaml", "bootstrap-components.yaml", "control-plane-components.yaml", "metadata.yaml"},
	},
	{
		Dir: "capa", Owner: "kubernetes-sigs", Repo: "cluster-api-provider-aws",
		Files: []string{"infrastructure-components.yaml", "metadata.yaml"},
	},
}

// PublishFixtures publishes every release `make fixtures` rendered under
// binDir/fixtures under the GitHub repository that publishes it for real
// (FixtureReleases), so that the real clusterctl release URLs, with
// github.com replaced by Host, name them: e.g.
// URL("kubernetes-sigs", "cluster-api", "v1.14.2", "core-components.yaml").
func (s *ReleaseServer) PublishFixtures(binDir string) error {
	for _, fr := range FixtureReleases {
		dir := filepath.Join(binDir, "fixtures", fr.Dir)
		tags, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("publishing the %s/%s fixtures: %w (run `make fixtures` at the repository root)", fr.Owner, fr.Repo, err)
		}
		published := 0
		for _, tag := range tags {
			if !tag.IsDir() {
				continue
			}
			if err := s.PublishDir(fr.Owner, fr.Repo, tag.Name(), filepath.Join(dir, tag.Name())); err != nil {
				return err
			}
			published++
		}
		if published == 0 {
			return fmt.Errorf("publishing the %s/%s fixtures: %s holds no release (run `make fixtures` at the repository root)", fr.Owner, fr.Repo, dir)
		}
	}
	return nil
}
