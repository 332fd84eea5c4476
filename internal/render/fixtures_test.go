package render

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/tests/bindir"
)

// capiVersion is the Cluster API release whose real components `make
// tools` renders into bin/fixtures/capi/<version>/.
const capiVersion = "v1.14.2"

// testDigest stands for the manifest digest preflight checked.
const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// fixture reads a file of the real Cluster API release. Missing fixtures
// fail the test: they are built by `make tools`, never skipped.
func fixture(t testing.TB, file string) []byte {
	t.Helper()
	bin, err := bindir.Default()
	if err != nil {
		t.Fatalf("locating bin/: %v; run `make tools` at the repository root or set CAPWRIGHT_BIN_DIR", err)
	}
	path := filepath.Join(bin, "fixtures", "capi", capiVersion, file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the Cluster API %s fixture %s: %v; run `make tools` at the repository root", capiVersion, path, err)
	}
	return data
}

// componentsFile is the clusterctl name of a provider type's components.
func componentsFile(p v1alpha1.Provider) string { return p.ProviderType() + "-components.yaml" }

// providerLabel is clusterctl's provider label value (what
// clusterctl.ProviderLabelValue computes; render takes it as input).
func providerLabel(p v1alpha1.Provider) string {
	if p.ProviderType() == v1alpha1.CoreProviderType {
		return "cluster-api"
	}
	return p.ProviderType() + "-" + p.GetName()
}

// managerOf finds the Deployment with a "manager" container in the
// components, as the controller does, and returns it and that container's
// args.
func managerOf(t testing.TB, components []byte) (*appsv1.Deployment, []string) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(components), 4096)
	for {
		var dep appsv1.Deployment
		err := dec.Decode(&dep)
		if errors.Is(err, io.EOF) {
			t.Fatal("the components have no Deployment with a manager container")
		}
		if err != nil {
			t.Fatalf("decoding the components: %v", err)
		}
		if dep.Kind != "Deployment" {
			continue
		}
		for _, c := range dep.Spec.Template.Spec.Containers {
			if c.Name == managerContainer {
				return &dep, c.Args
			}
		}
	}
}

// inputFor is what the controller passes for a provider whose artifact is
// the real Cluster API release.
func inputFor(t testing.TB, p v1alpha1.Provider) Input {
	t.Helper()
	components := fixture(t, componentsFile(p))
	dep, args := managerOf(t, components)
	decoded, err := clusterctl.Decode(components)
	if err != nil {
		t.Fatal(err)
	}
	return Input{
		Provider:          p,
		ArtifactURL:       "oci://registry.example.com/cluster-api/manifests/" + p.ProviderType() + "-" + p.GetName(),
		Tag:               p.GetSpec().Version,
		Digest:            testDigest,
		ComponentsFile:    componentsFile(p),
		ProviderLabel:     providerLabel(p),
		ManagerDeployment: dep.Name,
		ManagerArgs:       args,

		SkipCRDSubstitution: decoded.CRDsSubstitutionFree(),
	}
}
