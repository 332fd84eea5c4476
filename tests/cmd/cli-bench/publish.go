package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

// componentsSize is the size of the components file publish and inspect
// are timed with.
const componentsSize = 5 << 20

// speedTarget is issue 33's bound on publish and inspect of that file.
const speedTarget = 300 * time.Millisecond

// crdName finds a CRD's metadata.name, to give copies names of their own.
var crdName = regexp.MustCompile(`(?m)^  name: (\S+)$`)

// largeComponents is the real core components grown to size bytes with
// copies of its CRDs under other names, like a provider with many APIs
// (the file cmd/capwright's BenchmarkPublish and BenchmarkInspect use).
func largeComponents(h *harness, size int) []byte {
	core := string(clusterctltest.Read(h, clusterctltest.Current, "core-components.yaml"))
	var crds []string
	for _, doc := range strings.Split(core, "\n---\n") {
		if strings.Contains(doc, "\nkind: CustomResourceDefinition\n") {
			crds = append(crds, doc)
		}
	}
	if len(crds) == 0 {
		h.Fatal("the core components have no CRDs")
	}
	var out strings.Builder
	out.WriteString(core)
	for i := 0; out.Len() < size; i++ {
		copied := crdName.ReplaceAllStringFunc(crds[i%len(crds)], func(line string) string {
			return strings.Replace(line, "name: ", fmt.Sprintf("name: copy%d.", i), 1)
		})
		out.WriteString("\n---\n" + copied)
	}
	return []byte(out.String())
}

// benchPublishInspect times publish (a new cluster template each run, so
// that the layer is new and really uploaded) and inspect of the artifact,
// against a registry on loopback.
func benchPublishInspect(h *harness, cli string, runs int) {
	reg := newServer(0)
	h.Cleanup(reg.close)
	dir := h.TempDir()
	files := map[string][]byte{
		"metadata.yaml":        clusterctltest.Read(h, clusterctltest.Current, "metadata.yaml"),
		"core-components.yaml": largeComponents(h, componentsSize),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			h.Fatal(err)
		}
	}
	repo := "oci://" + reg.Host + "/capi/manifests/core-cluster-api"
	publish := func(i int) (time.Duration, time.Duration) {
		template := fmt.Sprintf("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: bench-%d\n", i)
		if err := os.WriteFile(filepath.Join(dir, "cluster-template.yaml"), []byte(template), 0o644); err != nil {
			h.Fatal(err)
		}
		return runCPU(h, nil, cli, "publish", "--plain-http", dir, "--type", "core", "--name", "cluster-api", "--version", clusterctltest.Current, repo)
	}
	inspect := func() (time.Duration, time.Duration) {
		return runCPU(h, nil, cli, "inspect", "--plain-http", "-o", "json", repo+":"+clusterctltest.Current)
	}
	publish(-1) // warms the page cache and the registry
	inspect()
	var pub, insp, pubCPU, inspCPU timings
	for i := range runs {
		wall, cpu := publish(i)
		pub, pubCPU = append(pub, wall), append(pubCPU, cpu)
		wall, cpu = inspect()
		insp, inspCPU = append(insp, wall), append(inspCPU, cpu)
	}
	fmt.Printf("\npublish and inspect of a %.1f MiB components file, a process each, registry on loopback (target ≤ %s each):\n",
		float64(len(files["core-components.yaml"]))/(1<<20), speedTarget)
	fmt.Printf("  publish  %s  %s; CPU %s\n", pub, verdict(pub.median() <= speedTarget), pubCPU)
	fmt.Printf("  inspect  %s  %s; CPU %s\n", insp, verdict(insp.median() <= speedTarget), inspCPU)
}
