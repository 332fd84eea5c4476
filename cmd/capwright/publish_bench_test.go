package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// benchComponentsSize is the size of the components file the benchmarks
// publish and inspect: several times the largest Cluster API provider.
const benchComponentsSize = 5 << 20

// crdName finds a CRD's metadata.name, to give copies names of their own.
var crdName = regexp.MustCompile(`(?m)^  name: (\S+)$`)

// largeComponents is the real core components grown to size bytes with
// copies of its CRDs under other names, like a provider with many APIs.
func largeComponents(b *testing.B, size int) []byte {
	b.Helper()
	core := string(clusterctltest.Read(b, clusterctltest.Current, "core-components.yaml"))
	var crds []string
	for _, doc := range strings.Split(core, "\n---\n") {
		if strings.Contains(doc, "\nkind: CustomResourceDefinition\n") {
			crds = append(crds, doc)
		}
	}
	if len(crds) == 0 {
		b.Fatal("the core components have no CRDs")
	}
	var out strings.Builder
	out.WriteString(core)
	for i := 0; out.Len() < size; i++ {
		doc := crds[i%len(crds)]
		copied := crdName.ReplaceAllStringFunc(doc, func(line string) string {
			return strings.Replace(line, "name: ", fmt.Sprintf("name: copy%d.", i), 1)
		})
		out.WriteString("\n---\n" + copied)
	}
	return []byte(out.String())
}

func benchRelease(b *testing.B) (dir string, size int64) {
	b.Helper()
	components := largeComponents(b, benchComponentsSize)
	dir = b.TempDir()
	for name, data := range map[string][]byte{
		"metadata.yaml":        clusterctltest.Read(b, clusterctltest.Current, "metadata.yaml"),
		"core-components.yaml": components,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir, int64(len(components))
}

// BenchmarkPublish publishes a 5 MiB components file to an in-process
// registry: read, validate, pack, upload. Each iteration changes a cluster
// template so that the layer is new and really uploaded.
func BenchmarkPublish(b *testing.B) {
	b.Setenv("DOCKER_CONFIG", b.TempDir())
	reg := registrytest.New(b, registrytest.Options{})
	dir, size := benchRelease(b)
	repo := "oci://" + reg.Host + "/capi/manifests/core-cluster-api"
	b.SetBytes(size)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		template := fmt.Sprintf("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: bench-%d\n", i)
		if err := os.WriteFile(filepath.Join(dir, "cluster-template.yaml"), []byte(template), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		_, stderr, code := cliRun(b, "publish", "--plain-http", dir, "--type", "core", "--name", "cluster-api", "--version", "v1.14.2", repo)
		if code != exitOK {
			b.Fatalf("publish: exit code %d\n%s", code, stderr)
		}
	}
}

// BenchmarkInspect inspects the same artifact from an in-process
// registry: fetch, unpack, parse metadata, variables, images and CRDs.
func BenchmarkInspect(b *testing.B) {
	b.Setenv("DOCKER_CONFIG", b.TempDir())
	reg := registrytest.New(b, registrytest.Options{})
	dir, size := benchRelease(b)
	repo := "oci://" + reg.Host + "/capi/manifests/core-cluster-api"
	if _, stderr, code := cliRun(b, "publish", "--plain-http", dir, "--type", "core", "--name", "cluster-api", "--version", "v1.14.2", repo); code != exitOK {
		b.Fatalf("publish: exit code %d\n%s", code, stderr)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		stdout, stderr, code := cliRun(b, "inspect", "--plain-http", "-o", "json", repo+":v1.14.2")
		if code != exitOK || !strings.Contains(stdout, `"crds"`) {
			b.Fatalf("inspect: exit code %d\n%s", code, stderr)
		}
	}
}
