package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capwright/capwright/tests/plane"
)

// fluxComponentsStandIn stands in for gotk-components.yaml: what of it the
// guide's patches touch, shaped as `flux install` writes it (the
// part-of and component labels, the app selector, the controllers'
// arguments).
const fluxComponentsStandIn = `apiVersion: v1
kind: Namespace
metadata:
  name: flux-system
  labels: {app.kubernetes.io/part-of: flux}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kustomizations.kustomize.toolkit.fluxcd.io
  labels: {app.kubernetes.io/part-of: flux, app.kubernetes.io/component: kustomize-controller}
spec:
  group: kustomize.toolkit.fluxcd.io
  names: {kind: Kustomization, plural: kustomizations}
  scope: Namespaced
  versions: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: crd-controller-flux-system
  labels: {app.kubernetes.io/part-of: flux}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kustomize-controller
  namespace: flux-system
  labels: {app.kubernetes.io/part-of: flux, app.kubernetes.io/component: kustomize-controller}
---
apiVersion: v1
kind: Service
metadata:
  name: source-controller
  namespace: flux-system
  labels: {app.kubernetes.io/part-of: flux, app.kubernetes.io/component: source-controller}
spec:
  selector: {app: source-controller}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata:
  name: notification-controller
  namespace: flux-system
  labels: {app.kubernetes.io/part-of: flux, app.kubernetes.io/component: notification-controller}
spec:
  selector: {app: notification-controller}
  ports: [{name: http, port: 80, targetPort: http}]
`

// deploymentStandIn is a Flux controller's Deployment as `flux install`
// writes it.
func deploymentStandIn(name string, args ...string) string {
	var b strings.Builder
	b.WriteString(`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: flux-system
  labels: {app.kubernetes.io/part-of: flux, app.kubernetes.io/component: ` + name + `}
spec:
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
      - name: manager
        image: ghcr.io/fluxcd/` + name + `:v1.0.0
        args:
`)
	for _, a := range append([]string{"--events-addr=http://notification-controller.flux-system.svc.cluster.local./", "--watch-all-namespaces=true", "--log-level=info"}, args...) {
		b.WriteString("        - " + a + "\n")
	}
	return b.String()
}

// The Flux setup docs/tenants.md ("Sharding Flux") tells users to commit,
// built with kustomize over a stand-in of gotk-components.yaml for two
// shards: the main controllers watch what has no shard key, each shard's
// controllers their own key — the selectors the plane runs
// kustomize-controller with (plane.WatchLabelSelector), which the
// tenants suite proves Capwright's labels work with.
func TestShardingGuideBuildsShardedFlux(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs", "tenants.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := splitSections(string(guide))["Sharding Flux"]
	if !ok {
		t.Fatal("docs/tenants.md has no section Sharding Flux")
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) != 2 {
		t.Fatalf("the Sharding Flux section has %d YAML blocks, want the shard's kustomization.yaml and flux-system's", len(blocks))
	}
	shardKustomization, fluxSystem := blocks[0][1], blocks[1][1]

	components := fluxComponentsStandIn +
		deploymentStandIn("source-controller", "--storage-path=/data", "--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local.") +
		deploymentStandIn("kustomize-controller") + deploymentStandIn("helm-controller") +
		deploymentStandIn("notification-controller") + deploymentStandIn("image-reflector-controller")
	fs := filesys.MakeFsInMemory()
	files := map[string]string{
		"/flux-system/gotk-components.yaml":      components,
		"/flux-system/gotk-sync.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gotk-sync-stand-in\n  namespace: flux-system\n",
		"/flux-system/kustomization.yaml":        fluxSystem,
		"/flux-system/shard1/kustomization.yaml": shardKustomization,
		"/flux-system/shard2/kustomization.yaml": strings.ReplaceAll(shardKustomization, "shard1", "shard2"),
	}
	for name, data := range files {
		if err := fs.WriteFile(name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	// As kustomize-controller builds it (fluxcd/pkg/kustomize): without
	// load restrictions, which ../gotk-components.yaml needs.
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = kustypes.LoadRestrictionsNone
	res, err := krusty.MakeKustomizer(opts).Run(fs, "/flux-system")
	if err != nil {
		t.Fatalf("kustomize build of the guide's flux-system: %v", err)
	}
	data, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}

	deployments := map[string]appsv1.Deployment{}
	services := map[string]corev1.Service{}
	for _, doc := range yamlDocuments(t, data) {
		var head struct{ Kind string }
		if err := sigsyaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "Deployment":
			var d appsv1.Deployment
			if err := sigsyaml.UnmarshalStrict(doc, &d); err != nil {
				t.Fatal(err)
			}
			deployments[d.Name] = d
		case "Service":
			var s corev1.Service
			if err := sigsyaml.UnmarshalStrict(doc, &s); err != nil {
				t.Fatal(err)
			}
			services[s.Name] = s
		}
	}
	// The main controllers keep the rest of Flux; the shards only have
	// the three.
	want := []string{"notification-controller", "image-reflector-controller"}
	for _, shard := range []string{"", "shard1", "shard2"} {
		for _, controller := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
			name := controller
			if shard != "" {
				name += "-" + shard
			}
			want = append(want, name)
			d, ok := deployments[name]
			if !ok {
				continue
			}
			args := d.Spec.Template.Spec.Containers[0].Args
			if selector := "--watch-label-selector=" + plane.WatchLabelSelector(shard); !slices.Contains(args, selector) {
				t.Errorf("Deployment %s: args %q lack %s", name, args, selector)
			}
			if n := countPrefix(args, "--watch-label-selector="); n != 1 {
				t.Errorf("Deployment %s: %d watch selectors in %q", name, n, args)
			}
			if d.Spec.Selector.MatchLabels["app"] != name || d.Spec.Template.Labels["app"] != name {
				t.Errorf("Deployment %s selects app=%s, its pods are app=%s: want %s for both", name, d.Spec.Selector.MatchLabels["app"], d.Spec.Template.Labels["app"], name)
			}
			if controller == "source-controller" {
				// The last --storage-adv-addr wins: the shard's own Service.
				if got := lastWithPrefix(args, "--storage-adv-addr="); !strings.HasPrefix(got, "--storage-adv-addr="+name+".") {
					t.Errorf("Deployment %s advertises its artifacts at %s, want its own Service %s", name, got, name)
				}
				if s, ok := services[name]; !ok || s.Spec.Selector["app"] != name {
					t.Errorf("Service %s (%v) does not select the pods of Deployment %s", name, ok, name)
				}
			}
		}
	}
	slices.Sort(want)
	got := slices.Sorted(func(yield func(string) bool) {
		for name := range deployments {
			if !yield(name) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Errorf("the build holds Deployments %v, want %v", got, want)
	}
}

func countPrefix(args []string, prefix string) int {
	n := 0
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			n++
		}
	}
	return n
}

func lastWithPrefix(args []string, prefix string) string {
	out := ""
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			out = a
		}
	}
	return out
}
