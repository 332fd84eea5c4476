package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/plan"
	capwrightscheme "github.com/capwright/capwright/internal/scheme"
	"github.com/capwright/capwright/tests/plane"
)

// WriteRepository writes objs as a user's Git repository holds them — the
// kind, name, namespace, labels, annotations and spec, nothing the API
// server or a controller set — one file per object under dir, and
// returns dir.
func WriteRepository(t *testing.T, dir string, objs ...client.Object) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, obj := range objs {
		u, err := ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		repo := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}
		meta := map[string]any{"name": u.GetName()}
		if ns := u.GetNamespace(); ns != "" {
			meta["namespace"] = ns
		}
		if l := u.GetLabels(); len(l) > 0 {
			meta["labels"] = l
		}
		if a := u.GetAnnotations(); len(a) > 0 {
			delete(a, "kubectl.kubernetes.io/last-applied-configuration")
			if len(a) > 0 {
				meta["annotations"] = a
			}
		}
		repo["metadata"] = meta
		for k, v := range u.Object {
			if k != "apiVersion" && k != "kind" && k != "metadata" && k != "status" {
				repo[k] = v
			}
		}
		data, err := yaml.Marshal(repo)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%02d-%s-%s.yaml", i, strings.ToLower(u.GetKind()), u.GetName())
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ToUnstructured is obj with its apiVersion and kind (from Capwright's
// scheme when the typed object lacks them, as one read by a client does).
func ToUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	gvks, _, err := Scheme().ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u, nil
}

// Build runs `capwright build -o json` with args and the environment env
// added, and returns the objects it printed and its stderr; the test fails
// when it does not exit 0.
func Build(t *testing.T, ctx context.Context, cli string, env []string, args ...string) ([]*unstructured.Unstructured, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, cli, append([]string{"build", "-o", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("capwright build %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		t.Fatalf("capwright build -o json printed no List: %v\n%s", err, stdout.String())
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for _, o := range list.Items {
		out = append(out, &unstructured.Unstructured{Object: o})
	}
	return out, stderr.String()
}

// AssertBuildMatchesManager checks that built — what `capwright build`
// printed for the custom resources owners — is what the manager applied
// on the plane, field by field: the manager's hash of each object it
// applied (plan.HashAnnotation, over every field it sets) is the hash of
// the built object once the owner references carry the live owners' UIDs
// (a repository has none), and a differing object is shown field by
// field. Every Flux object the manager keeps for owners is among built.
// It returns the number of objects compared.
func AssertBuildMatchesManager(t *testing.T, ctx context.Context, c client.Client, owners []client.Object, built []*unstructured.Unstructured) int {
	t.Helper()
	uids := map[types.UID]bool{}
	for _, o := range owners {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("reading %s: %v", o.GetName(), err)
		}
		uids[o.GetUID()] = true
	}
	seen := map[string]bool{}
	for _, b := range built {
		ref := objectRef(b)
		seen[ref] = true
		want := b.DeepCopy()
		refs := want.GetOwnerReferences()
		for i, r := range refs {
			owner := &unstructured.Unstructured{}
			owner.SetAPIVersion(r.APIVersion)
			owner.SetKind(r.Kind)
			key := client.ObjectKey{Namespace: want.GetNamespace(), Name: r.Name}
			if r.Kind == "Tenant" {
				key.Namespace = ""
			}
			if err := c.Get(ctx, key, owner); err != nil {
				t.Errorf("%s: its owner %s %s: %v", ref, r.Kind, r.Name, err)
				continue
			}
			refs[i].UID = owner.GetUID()
		}
		want.SetOwnerReferences(refs)
		annotations := want.GetAnnotations()
		delete(annotations, plan.HashAnnotation)
		if len(annotations) == 0 {
			annotations = nil // as the plan left it: no annotations field
		}
		want.SetAnnotations(annotations)
		applied, err := plan.AsApplied(want, plan.HashAnnotation)
		if err != nil {
			t.Fatal(err)
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(b.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKey{Namespace: b.GetNamespace(), Name: b.GetName()}, live); err != nil {
			t.Errorf("build prints %s, which the manager did not write: %v", ref, err)
			continue
		}
		if got, wantHash := live.GetAnnotations()[plan.HashAnnotation], applied.GetAnnotations()[plan.HashAnnotation]; got != wantHash {
			t.Errorf("%s differs from what the manager applied (hash %s, built %s):\n%s", ref, got, wantHash,
				strings.Join(fieldDiff("", applied.Object, live.Object), "\n"))
		}
	}
	for _, gvk := range []schema.GroupVersionKind{
		sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind), sourcev1.GroupVersion.WithKind(sourcev1.ExternalArtifactKind),
		kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind), helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind),
	} {
		// Unstructured: the caller's client need not know Flux's kinds.
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			owner := metav1.GetControllerOf(o)
			if owner == nil || !uids[owner.UID] {
				continue
			}
			if ref := gvk.Kind + " " + o.GetNamespace() + "/" + o.GetName(); !seen[ref] {
				t.Errorf("the manager keeps %s for %s, and build does not print it", ref, owner.Name)
			}
		}
	}
	return len(built)
}

func objectRef(u *unstructured.Unstructured) string {
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// fieldDiff lists the fields of want whose value differs in got, and the
// fields of got's spec, labels and annotations want lacks (server-set
// fields such as status, managedFields and defaults outside the spec
// aside).
func fieldDiff(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if !wok || !gok {
		if !reflect.DeepEqual(want, got) {
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(got)
			return []string{fmt.Sprintf("  %s: built %s, applied %s", path, w, g)}
		}
		return nil
	}
	var out []string
	keys := make([]string, 0, len(wm))
	for k := range wm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := gm[k]; !ok {
			out = append(out, fmt.Sprintf("  %s.%s: built, not applied", path, k))
			continue
		}
		out = append(out, fieldDiff(path+"."+k, wm[k], gm[k])...)
	}
	if slices.Contains([]string{".spec", ".metadata.labels", ".metadata.annotations"}, path) {
		for k := range gm {
			if _, ok := wm[k]; !ok && k != plan.HashAnnotation {
				out = append(out, fmt.Sprintf("  %s.%s: applied, not built", path, k))
			}
		}
	}
	return out
}

// Scheme is Capwright's scheme (internal/scheme): its kinds, Flux's and
// the Cluster API kinds it reads.
func Scheme() *runtime.Scheme {
	s, err := capwrightscheme.New()
	if err != nil {
		panic(err)
	}
	return s
}

var cli struct {
	once sync.Once
	path string
	err  error
}

// CLI is the capwright CLI built from the working tree into the plane's
// bin directory, once per test binary.
func CLI(t *testing.T, ctx context.Context, p *plane.Plane) string {
	t.Helper()
	cli.once.Do(func() { cli.path, cli.err = p.BuildCLI(ctx) })
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	return cli.path
}
