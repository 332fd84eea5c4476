package docs

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/plane"
)

// TestKindQuickstartInstallsCAPD reads docs/quickstart-kind.md as a user
// follows it: exactly the providers `clusterctl init --infrastructure
// docker` installs, each from its GitHub release through the catalog at
// the version the local plane installs, every variable it sets one of the
// real release's (a misspelt one would be substituted nowhere), and
// Cluster API's ClusterTopology gate on wherever the release has it (the
// workload cluster is generated from a ClusterClass); the kind cluster
// mounts Docker's socket, through which CAPD makes machines; and the
// clean-up removes everything the guide creates.
func TestKindQuickstartInstallsCAPD(t *testing.T) {
	const guide = "docs/quickstart-kind.md"
	q := readQuickstart(t, guide)
	vars := q.checkCatalogReleases(t, "clusterctl init --infrastructure docker", map[string]string{
		providersv1alpha1.CoreProviderType + "/cluster-api":      plane.CAPIVersion,
		providersv1alpha1.BootstrapProviderType + "/kubeadm":     plane.CAPIVersion,
		providersv1alpha1.ControlPlaneProviderType + "/kubeadm":  plane.CAPIVersion,
		providersv1alpha1.InfrastructureProviderType + "/docker": plane.CAPIVersion,
	})
	for _, p := range q.providers {
		key, spec := providerKey(p), p.GetSpec()
		names := map[string]bool{}
		for _, v := range vars[key] {
			names[v.Name] = true
		}
		if len(names) == 0 {
			continue // not found: checkCatalogReleases said why
		}
		for name := range spec.Variables {
			if !names[name] {
				t.Errorf("%s: %s sets variable %s, which its release's components do not use", guide, key, name)
			}
		}
		if names["CLUSTER_TOPOLOGY"] && spec.Variables["CLUSTER_TOPOLOGY"] != "true" {
			t.Errorf("%s: %s leaves CLUSTER_TOPOLOGY unset; the guide's workload cluster comes from a ClusterClass", guide, key)
		}
	}
	if !regexp.MustCompile(`(?m)hostPath: /var/run/docker.sock\n\s+containerPath: /var/run/docker.sock$`).MatchString(q.text) {
		t.Errorf("%s: the kind cluster does not mount /var/run/docker.sock, which CAPD needs", guide)
	}
	checkCleanUp(t, guide, q.text)
}

// checkCleanUp reads a guide's shell commands in order and checks that
// they undo everything they create: every Cluster API Cluster generated
// is deleted (and its Docker containers looked for) before the kind
// management cluster goes, every kind cluster created is deleted, and
// every file written is removed.
func checkCleanUp(t *testing.T, guide, text string) {
	t.Helper()
	var commands []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		joined := strings.ReplaceAll(block[1], "\\\n", " ")
		commands = append(commands, strings.Split(joined, "\n")...)
	}
	// "Save this as `F`" before a YAML block writes F too.
	var files []string
	for _, m := range regexp.MustCompile("[Ss]ave (?:this|it) as `([^`]+)`").FindAllStringSubmatch(text, -1) {
		files = append(files, m[1])
	}
	index := func(re string) int {
		return slices.IndexFunc(commands, regexp.MustCompile(re).MatchString)
	}
	var kindClusters, capiClusters []string
	for _, c := range commands {
		if m := regexp.MustCompile(`^kind create cluster --name (\S+)`).FindStringSubmatch(c); m != nil {
			kindClusters = append(kindClusters, m[1])
		}
		if m := regexp.MustCompile(`^clusterctl generate cluster (\S+)`).FindStringSubmatch(c); m != nil {
			capiClusters = append(capiClusters, m[1])
		}
		for _, m := range regexp.MustCompile(`>\s*([A-Za-z0-9_.-]+\.[a-z]+)`).FindAllStringSubmatch(c, -1) {
			files = append(files, m[1])
		}
	}
	if len(kindClusters) == 0 || len(capiClusters) == 0 || len(files) == 0 {
		t.Fatalf("%s: found kind clusters %v, Clusters %v, files %v: the reader no longer finds what the guide creates", guide, kindClusters, capiClusters, files)
	}
	for _, name := range kindClusters {
		deleted := index(`^kind delete cluster --name ` + regexp.QuoteMeta(name) + `(\s|$)`)
		if deleted < 0 {
			t.Errorf("%s creates kind cluster %s and never deletes it", guide, name)
		}
		for _, cluster := range capiClusters {
			gone := index(`^kubectl delete cluster ` + regexp.QuoteMeta(cluster) + `(\s|$)`)
			if gone < 0 || gone > deleted {
				t.Errorf("%s: Cluster %s is not deleted before kind cluster %s: CAPD's containers of it would keep running", guide, cluster, name)
			}
		}
	}
	for _, cluster := range capiClusters {
		if index(`^docker ps -a --filter label=io.x-k8s.kind.cluster=`+regexp.QuoteMeta(cluster)+`(\s|$)`) < 0 {
			t.Errorf("%s: the clean-up does not look for CAPD's containers of Cluster %s", guide, cluster)
		}
	}
	removed := map[string]bool{}
	for _, c := range commands {
		if strings.HasPrefix(c, "rm ") {
			for _, f := range strings.Fields(c)[1:] {
				removed[f] = true
			}
		}
	}
	for _, f := range files {
		if !removed[f] {
			t.Errorf("%s writes %s and its clean-up does not remove it", guide, f)
		}
	}
}
