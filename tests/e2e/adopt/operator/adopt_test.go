package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestAdoptFromClusterAPIOperator: cluster-api-operator v0.29.0 installs
// Cluster API's core, kubeadm bootstrap and kubeadm control plane
// providers v1.13.6 (the control plane provider with additional
// manifests), and a Cluster exists. docs/migrate.md's steps hand them to
// Capwright, with a trip back to the operator after step 4 as its "Going
// back" says: every object the operator installed keeps its UID, the
// Cluster is untouched, clusterctl's inventory names the version, and Flux
// owns the objects from then on — it corrects a hand edit, prunes an
// object the operator created once it leaves the source, and upgrades the
// control plane provider to v1.14.2 in place.
func TestAdoptFromClusterAPIOperator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	c := framework.NewProviderClient(t, env.Config)

	operator := installWithOperator(t, ctx, c)
	cluster := createCluster(t, ctx, c)
	startCapwright(t, ctx)
	before := snapshot(t, ctx, c, oldVersion)
	// What the guide's table says: an operator CR owns every namespaced
	// object it installed (so deleting the CRs would have the garbage
	// collector delete them), and no cluster-scoped one.
	owned := 0
	for _, o := range before {
		if o.operatorOwned {
			owned++
		}
		if o.operatorOwned != o.namespaced {
			t.Errorf("%s: owned by an operator CR: %t; the guide says namespaced objects are, cluster-scoped ones are not", o.key, o.operatorOwned)
		}
	}
	t.Logf("operator installed %d objects (%d owned by its CRs); plane ready for the guide %s after the test started",
		len(before), owned, time.Since(start).Round(time.Millisecond))
	hadInventory := inventoryVersions(t, ctx, c)

	// Step 1: stop the operator. (Its webhook configurations are not
	// installed on the plane: it runs with its webhooks unused.)
	operator.Stop()

	// Step 2: keep a copy of the operator's CRs (as kubectl get -o yaml
	// does) and convert, with the guide's own command line.
	backup := operatorCRs(t, ctx, c)
	dir := t.TempDir()
	report := runGuideConvert(t, ctx, dir)
	for _, p := range providers {
		if !strings.Contains(report, p.operatorKind()+" "+p.namespace+"/"+p.name) {
			t.Errorf("the report does not name %s %s/%s:\n%s", p.operatorKind(), p.namespace, p.name, report)
		}
	}
	if n := strings.Count(report, "attention spec.fetchConfig.oci"); n != len(providers) {
		t.Errorf("the report has %d attention findings on spec.fetchConfig.oci, want one per provider:\n%s", n, report)
	}

	// Step 3: what the report says, as the guide does it for catalog
	// providers: spec.source goes; the files then hold the guide's CRs.
	converted := followReport(t, filepath.Join(dir, "capwright"))
	grants := assertGuideCRs(t, converted)
	// And the grant step 3 shows for the kinds of the additional
	// manifests, applied as the guide shows it.
	for _, g := range grants {
		if err := c.Create(ctx, g); err != nil {
			t.Fatalf("applying the guide's %s %s: %v", g.GetKind(), g.GetName(), err)
		}
	}

	// Step 4: release what the operator owns.
	releaseOperatorCRs(t, ctx, c)
	assertReleased(t, ctx, c)

	// Going back after step 4, as the guide says: the operator's CRs
	// again from the copy, then the operator; it owns the same objects
	// again, recreating none. Then forward: steps 1 and 4 once more.
	goBack := time.Now()
	for _, p := range providers {
		cache := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.operatorType() + "-" + p.name + "-" + oldVersion + "-cache"}}
		if err := c.Delete(ctx, cache); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range backup {
		restored := u.DeepCopy()
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "finalizers"} {
			unstructured.RemoveNestedField(restored.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(restored.Object, "metadata", "annotations", "operator.cluster.x-k8s.io/applied-spec-hash")
		unstructured.RemoveNestedField(restored.Object, "status")
		if err := c.Create(ctx, restored); err != nil {
			t.Fatalf("re-creating %s %s/%s from the copy: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	operator = startOperator(t, ctx)
	waitOperatorReady(t, ctx, c)
	for key, o := range snapshot(t, ctx, c, oldVersion) {
		if o.uid != before[key].uid {
			t.Errorf("going back: %s was recreated: uid %s, was %s", key, o.uid, before[key].uid)
		}
		if o.operatorOwned != o.namespaced {
			t.Errorf("going back: %s owned by an operator CR: %t, want %t", key, o.operatorOwned, o.namespaced)
		}
	}
	t.Logf("going back after step 4: the operator owned the running providers again %s after its CRs were restored", time.Since(goBack).Round(time.Millisecond))
	operator.Stop()
	releaseOperatorCRs(t, ctx, c)
	assertReleased(t, ctx, c)
	leftovers := operatorLeftovers(t, ctx, c)

	// Step 5: apply the Capwright CRs; each goes Ready at the operator's
	// version.
	applyStart := time.Now()
	for _, u := range converted {
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("applying %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	crs := capwrightCRs()
	for _, p := range crs {
		framework.WaitProviderCondition(t, ctx, c, p, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
	}
	t.Logf("the three providers Ready under Capwright %s after their CRs were applied", time.Since(applyStart).Round(time.Millisecond))

	// Step 6: remove the operator's leftovers (the operator's own
	// uninstall is the plane's: its process is stopped).
	removeLeftovers(t, ctx, c, leftovers)

	t.Run("nothing the operator installed was recreated", func(t *testing.T) {
		for i, p := range crs {
			if got := p.GetStatus().InstalledVersion; got != oldVersion {
				t.Errorf("%s: installedVersion %q, want %s", providers[i], got, oldVersion)
			}
			if a := p.GetStatus().Artifact; a == nil || !strings.HasPrefix(a.URL, "https://github.com/kubernetes-sigs/cluster-api/releases/") {
				t.Errorf("%s: installed from %+v, want Cluster API's GitHub release (the catalog)", providers[i], a)
			}
		}
		assertSameUIDs(t, before, snapshot(t, ctx, c, oldVersion))
		assertClusterUntouched(t, ctx, c, cluster)
	})

	t.Run("clusterctl's inventory names the version", func(t *testing.T) {
		t.Logf("inventory before Capwright (written by the operator): %v", hadInventory)
		for name, v := range inventoryVersions(t, ctx, c) {
			if v != oldVersion {
				t.Errorf("inventory Provider %s: version %q, want %s", name, v, oldVersion)
			}
		}
		if got := len(inventoryVersions(t, ctx, c)); got != len(providers) {
			t.Errorf("%d inventory Providers, want %d", got, len(providers))
		}
	})

	t.Run("Flux owns the objects", func(t *testing.T) {
		// kustomize-controller's --override-manager (docs/migrate.md)
		// removed the operator's field managers on its first apply.
		for _, o := range snapshot(t, ctx, c, oldVersion) {
			if len(o.operatorManagers) > 0 {
				t.Errorf("%s: still managed by the operator's %v", o.key, o.operatorManagers)
			}
		}
		for _, p := range providers {
			var d appsv1.Deployment
			if err := c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.deployment}, &d); err != nil {
				t.Fatal(err)
			}
			if got := d.Labels["kustomize.toolkit.fluxcd.io/name"]; got != p.objectName() {
				t.Errorf("Deployment %s/%s: label kustomize.toolkit.fluxcd.io/name=%q, want %s", p.namespace, p.deployment, got, p.objectName())
			}
			var managers []string
			for _, m := range d.ManagedFields {
				managers = append(managers, m.Manager+"/"+string(m.Operation)+"/"+m.Subresource)
			}
			t.Logf("Deployment %s/%s field managers: %v", p.namespace, p.deployment, managers)
			ks := kustomization(t, ctx, c, p)
			if !inInventory(ks, p.namespace, p.deployment, "apps", "Deployment") {
				t.Errorf("Kustomization %s/%s does not list Deployment %s in its inventory", p.namespace, p.objectName(), p.deployment)
			}
		}
	})

	t.Run("drift: kustomize-controller puts back a hand edit", func(t *testing.T) {
		key := client.ObjectKey{Namespace: controlPlane.namespace, Name: controlPlane.deployment}
		var d appsv1.Deployment
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, key, &d); err != nil {
				return err
			}
			d.Spec.Replicas = ptrTo(int32(3))
			return c.Update(ctx, &d, client.FieldOwner("kubectl-edit"))
		})
		if err != nil {
			t.Fatal(err)
		}
		// What `flux reconcile kustomization` asks for.
		if err := framework.RequestReconcile(ctx, c, kustomization(t, ctx, c, controlPlane)); err != nil {
			t.Fatal(err)
		}
		edited := time.Now()
		waitFor(t, ctx, time.Minute, "Deployment "+key.String()+" back at 1 replica", func() (bool, string) {
			if err := c.Get(ctx, key, &d); err != nil {
				return false, err.Error()
			}
			return d.Spec.Replicas != nil && *d.Spec.Replicas == 1, "replicas " + itoa(d.Spec.Replicas)
		})
		if string(d.UID) != before[objectKey("Deployment", key.Namespace, key.Name)].uid {
			t.Errorf("Deployment %s was recreated", key)
		}
		t.Logf("kustomize-controller corrected the edit in %s", time.Since(edited).Round(time.Millisecond))
	})

	t.Run("prune: what the operator created goes when it leaves the source", func(t *testing.T) {
		policy := objectKey("NetworkPolicy", controlPlane.namespace, "kcp-webhook-ingress")
		budget := objectKey("PodDisruptionBudget", controlPlane.namespace, "kcp-controller")
		var cm corev1.ConfigMap
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKey{Namespace: controlPlane.namespace, Name: kcpExtrasName}, &cm); err != nil {
				return err
			}
			cm.Data["manifests"] = kcpExtrasEdited
			return c.Update(ctx, &cm)
		})
		if err != nil {
			t.Fatal(err)
		}
		edited := time.Now()
		waitFor(t, ctx, 2*time.Minute, policy+" pruned", func() (bool, string) {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("networking.k8s.io/v1")
			u.SetKind("NetworkPolicy")
			err := c.Get(ctx, client.ObjectKey{Namespace: controlPlane.namespace, Name: "kcp-webhook-ingress"}, u)
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return false, "still there, uid " + string(u.GetUID())
		})
		t.Logf("Flux pruned %s (uid %s, created by the operator) %s after the ConfigMap edit", policy, before[policy].uid, time.Since(edited).Round(time.Millisecond))
		var pdb policyv1.PodDisruptionBudget
		waitFor(t, ctx, time.Minute, budget+" with minAvailable only", func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: controlPlane.namespace, Name: "kcp-controller"}, &pdb); err != nil {
				return false, err.Error()
			}
			return pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable == nil, fmt.Sprintf("minAvailable %v, maxUnavailable %v", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
		})
		if string(pdb.UID) != before[budget].uid {
			t.Errorf("%s: uid %s, was %s: it stayed in the source and must be changed in place", budget, pdb.UID, before[budget].uid)
		}
	})

	t.Run("upgrade the control plane provider to v1.14.2 through Capwright", func(t *testing.T) {
		kcp := crs[2]
		framework.UpdateProvider(t, ctx, c, kcp, func() { kcp.GetSpec().Version = newVersion })
		upgraded := time.Now()
		framework.WaitProviderCondition(t, ctx, c, kcp, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
		if got := kcp.GetStatus().InstalledVersion; got != newVersion {
			t.Fatalf("installedVersion %q after the upgrade, want %s", got, newVersion)
		}
		key := client.ObjectKey{Namespace: controlPlane.namespace, Name: controlPlane.deployment}
		var d appsv1.Deployment
		waitFor(t, ctx, time.Minute, "Deployment "+key.String()+" rolled out", func() (bool, string) {
			if err := c.Get(ctx, key, &d); err != nil {
				return false, err.Error()
			}
			image := d.Spec.Template.Spec.Containers[0].Image
			done := strings.HasSuffix(image, ":"+newVersion) && d.Status.ObservedGeneration == d.Generation &&
				d.Status.UpdatedReplicas == 1 && d.Status.AvailableReplicas == 1 && d.Status.Replicas == 1
			return done, image + " " + itoa(&d.Status.UpdatedReplicas) + " updated, " + itoa(&d.Status.AvailableReplicas) + " available"
		})
		t.Logf("control plane provider at %s (image %s) %s after spec.version changed", newVersion, d.Spec.Template.Spec.Containers[0].Image, time.Since(upgraded).Round(time.Millisecond))
		// The same objects, updated in place (the operator deletes and
		// recreates the provider's objects on an upgrade).
		now := snapshot(t, ctx, c, newVersion)
		kept := 0
		for key, o := range now {
			if b, ok := before[key]; ok && b.uid != o.uid {
				t.Errorf("%s was recreated by the upgrade: uid %s, was %s", key, o.uid, b.uid)
			} else if ok {
				kept++
			}
		}
		t.Logf("after the upgrade, %d of %d objects still have the UIDs the operator's install gave them", kept, len(now))
		if v := inventoryVersions(t, ctx, c)[controlPlane.inventoryName()]; v != newVersion {
			t.Errorf("inventory Provider %s: version %q after the upgrade, want %s", controlPlane.inventoryName(), v, newVersion)
		}
		assertClusterUntouched(t, ctx, c, cluster)
	})
	t.Logf("the package's test took %s", time.Since(start).Round(time.Millisecond))
}

// runGuideConvert runs step 2's `capwright convert` command line of
// docs/migrate.md in dir against the plane, expects exit code 7 (fields
// need attention) and returns the report it wrote.
func runGuideConvert(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	var line string
	for _, l := range strings.Split(guideSection(t, "### Steps"), "\n") {
		if strings.HasPrefix(l, "capwright convert --from-cluster") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("docs/migrate.md's steps have no `capwright convert --from-cluster` line")
	}
	args := strings.Fields(line)[1:]
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", line, out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("%s: %v, want exit code 7 (fields need attention)", line, err)
	}
	report, err := os.ReadFile(filepath.Join(dir, "convert-report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("convert-report.txt:\n%s", report)
	return string(report)
}

// followReport does what step 3 says for catalog providers installed from
// the operator's OCI artifacts: it deletes spec.source from each
// converted file, and returns the CRs the files then hold.
func followReport(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		oci, found, _ := unstructured.NestedMap(obj, "spec", "source", "oci")
		if !found || !strings.Contains(oci["url"].(string), "/capi-operator/") {
			t.Errorf("%s: spec.source.oci should name the operator's artifact, got spec.source %v", path, obj["spec"])
		}
		unstructured.RemoveNestedField(obj, "spec", "source")
		edited, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out = append(out, u)
		return os.WriteFile(path, edited, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(providers) {
		t.Fatalf("convert wrote %d files under %s, want %d", len(out), dir, len(providers))
	}
	return out
}

// assertGuideCRs: the files hold exactly the Capwright CRs step 3 of the
// guide shows. It returns the other objects the step shows: the
// installer's grant for the kinds of the additional manifests.
func assertGuideCRs(t *testing.T, converted []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	want := map[string]map[string]any{}
	var others []*unstructured.Unstructured
	for _, d := range guideYAML(t, "### Steps") {
		u := &unstructured.Unstructured{Object: d}
		if u.GroupVersionKind().Group != v1alpha1.GroupVersion.Group {
			others = append(others, u)
			continue
		}
		want[objectKey(u.GetKind(), u.GetNamespace(), u.GetName())] = d
	}
	if len(want) != len(converted) {
		t.Fatalf("the guide's step 3 shows %d Capwright CRs, convert gave %d", len(want), len(converted))
	}
	for _, u := range converted {
		key := objectKey(u.GetKind(), u.GetNamespace(), u.GetName())
		if !reflect.DeepEqual(want[key], u.Object) {
			got, _ := yaml.Marshal(u.Object)
			w, _ := yaml.Marshal(want[key])
			t.Errorf("%s: convert and step 3 give\n%s\nthe guide shows\n%s", key, got, w)
		}
	}
	if len(others) != 1 || others[0].GetKind() != "ClusterRole" {
		t.Fatalf("the guide's steps show %d other objects, want the installer's ClusterRole for the additional manifests' kinds", len(others))
	}
	return others
}

// releaseOperatorCRs does step 4 for each operator CR: remove the
// finalizer, then delete with --cascade=orphan; the CR is then gone.
func releaseOperatorCRs(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	for _, p := range providers {
		u := p.operatorObject()
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		if got := u.GetFinalizers(); !slices.Equal(got, []string{"provider.cluster.x-k8s.io"}) {
			t.Errorf("%s %s/%s: finalizers %v, the guide's table names the operator's provider.cluster.x-k8s.io", p.operatorKind(), p.namespace, p.name, got)
		}
		patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`))
		if err := c.Patch(ctx, u, patch); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range providers {
		framework.WaitGone(t, ctx, c, p.operatorObject(), 2*time.Minute)
	}
}

// assertReleased: no object of the providers has an owner reference to
// an operator CR.
func assertReleased(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	for _, o := range snapshot(t, ctx, c, oldVersion) {
		if o.operatorOwned {
			t.Errorf("%s still has an owner reference to an operator CR after step 4", o.key)
		}
	}
}

// operatorCRs reads the operator's CRs of the providers, as step 2's
// kubectl get keeps them.
func operatorCRs(t *testing.T, ctx context.Context, c client.Client) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, p := range providers {
		u := p.operatorObject()
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// leftover is an object of the operator's that step 6 removes.
type leftover struct{ kind, namespace, name string }

// operatorLeftovers finds what the guide's table says stays after step 4:
// per provider a ConfigMap of the release and a cache Secret, without
// owner.
func operatorLeftovers(t *testing.T, ctx context.Context, c client.Client) []leftover {
	t.Helper()
	var out []leftover
	for _, p := range providers {
		var cms corev1.ConfigMapList
		if err := c.List(ctx, &cms, client.InNamespace(p.namespace), client.MatchingLabels{"managed-by.operator.cluster.x-k8s.io": "true"}); err != nil {
			t.Fatal(err)
		}
		want := p.operatorType() + "-" + p.name + "-" + oldVersion
		if len(cms.Items) != 1 || cms.Items[0].Name != want {
			t.Errorf("%s: operator ConfigMaps %v, want one named %s", p.namespace, names(cms.Items), want)
		}
		for _, cm := range cms.Items {
			if len(cm.OwnerReferences) != 0 {
				t.Errorf("ConfigMap %s/%s: owner references %v after step 4", cm.Namespace, cm.Name, cm.OwnerReferences)
			}
			out = append(out, leftover{"ConfigMap", cm.Namespace, cm.Name})
		}
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: want + "-cache"}, &s); err != nil {
			t.Errorf("the operator's cache Secret: %v", err)
			continue
		}
		if len(s.OwnerReferences) != 0 {
			t.Errorf("Secret %s/%s: owner references %v after step 4", s.Namespace, s.Name, s.OwnerReferences)
		}
		out = append(out, leftover{"Secret", s.Namespace, s.Name})
	}
	return out
}

// removeLeftovers does step 6's deletions and checks the user's
// ConfigMap of additional manifests stays.
func removeLeftovers(t *testing.T, ctx context.Context, c client.Client, leftovers []leftover) {
	t.Helper()
	for _, p := range providers {
		if err := c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(p.namespace), client.MatchingLabels{"managed-by.operator.cluster.x-k8s.io": "true"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range leftovers {
		meta := metav1.ObjectMeta{Namespace: l.namespace, Name: l.name}
		if l.kind == "ConfigMap" {
			framework.WaitGone(t, ctx, c, &corev1.ConfigMap{ObjectMeta: meta}, time.Minute)
			continue
		}
		if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: meta}); err != nil {
			t.Fatal(err)
		}
		framework.WaitGone(t, ctx, c, &corev1.Secret{ObjectMeta: meta}, time.Minute)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: controlPlane.namespace, Name: kcpExtrasName}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the user's ConfigMap of additional manifests must stay: %v", err)
	}
}

func kustomization(t *testing.T, ctx context.Context, c client.Client, p provider) *kustomizev1.Kustomization {
	t.Helper()
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.objectName()}, &ks); err != nil {
		t.Fatal(err)
	}
	return &ks
}

// inInventory tells whether a Kustomization's inventory lists the object.
func inInventory(ks *kustomizev1.Kustomization, namespace, name, group, kind string) bool {
	if ks.Status.Inventory == nil {
		return false
	}
	id := namespace + "_" + name + "_" + group + "_" + kind
	for _, e := range ks.Status.Inventory.Entries {
		if e.ID == id {
			return true
		}
	}
	return false
}

// waitFor polls done every half second until it holds or timeout passes;
// the failure names what and the last state.
func waitFor(t *testing.T, ctx context.Context, timeout time.Duration, what string, done func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, state := done()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}
