package tenants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// stackWithoutNamespace is a kustomize artifact of plain manifests with
// no Namespace among them: Flux must create the target namespace.
var stackWithoutNamespace = map[string][]byte{
	"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stack-config\ndata:\n  greeting: hello\n"),
}

// TestKustomizeStackWithoutNamespaceManifest: an artifact of plain
// manifests, with no Namespace among them, installs on every selected
// workload cluster — Flux creates the target namespace first, from the
// ExternalArtifact Capwright serves — and deleting the Tenant uninstalls
// the stack but leaves the namespace, as Helm's createNamespace does.
func TestKustomizeStackWithoutNamespaceManifest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	const name = "vandelay" // and the target namespace
	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/vandelay", "v1.0.0", stackWithoutNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	remote := make([]client.Client, len(workloads))
	var names []string
	for i, w := range workloads {
		remote[i] = newClient(t, w.Config)
		names = append(names, w.Name)
	}
	t.Cleanup(func() {
		// The namespace outlives the Tenant: leave the clusters as found.
		for _, r := range remote {
			_ = r.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	tn := kustomizeTenant(name, art, tenancyv1alpha1.ClusterSelector{Names: names, Namespaces: []string{clusterNamespace}})
	start := time.Now()
	createTenant(t, ctx, c, tn)
	got := waitTenant(t, ctx, c, name, 2*time.Minute, "Tenant Ready on every cluster", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && int(tn.Status.ReadyClusters) == len(workloads)
	})
	took := time.Since(start)
	t.Logf("Tenant Ready on %d clusters %s after it was created", len(workloads), took.Round(time.Millisecond))
	// Capwright writes each stack's Kustomization as soon as its
	// namespace Kustomization is Ready, without a dependsOn (which Flux
	// would follow on every new revision of the stack): a stack applied
	// before its namespace existed would fail and be retried only after
	// a minute, one waiting on a dependency only after
	// kustomize-controller's --requeue-dependency (30 s).
	if took > 25*time.Second {
		t.Errorf("the stack took %s: it failed on a missing namespace or waited out kustomize-controller's --requeue-dependency", took.Round(time.Millisecond))
	}
	var stacks kustomizev1.KustomizationList
	if err := c.List(ctx, &stacks, client.MatchingLabels{tenancyv1alpha1.TenantLabel: name}); err != nil {
		t.Fatal(err)
	}
	for _, ks := range stacks.Items {
		if len(ks.Spec.DependsOn) > 0 {
			t.Errorf("Kustomization %s/%s dependsOn %+v, want none", ks.Namespace, ks.Name, ks.Spec.DependsOn)
		}
	}

	for i, w := range workloads {
		cluster := types.NamespacedName{Namespace: clusterNamespace, Name: w.Name}
		if l := clusterLine(got, w.Name); l == nil || l.FluxObject == nil || l.FluxObject.Name != render.TenantClusterObjectName(name, cluster) {
			t.Errorf("%s: line %+v, want it to name the stack's Kustomization", w.Name, l)
		}
		ns := &corev1.Namespace{}
		if err := remote[i].Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			t.Fatalf("%s: the target namespace: %v", w.Name, err)
		}
		if ns.Labels[tenancyv1alpha1.TenantLabel] != name || ns.Labels["kustomize.toolkit.fluxcd.io/name"] != render.TenantNamespaceObjectName(name, cluster) {
			t.Errorf("%s: Namespace %s labels %v, want the tenant's and the namespace Kustomization's", w.Name, name, ns.Labels)
		}
		if got := stackGreeting(t, ctx, remote[i], name, w.Name); got != "hello" {
			t.Errorf("%s: greeting %q", w.Name, got)
		}
	}
	// One ExternalArtifact for the namespace all clusters are in.
	var eas sourcev1.ExternalArtifactList
	if err := c.List(ctx, &eas, client.MatchingLabels{tenancyv1alpha1.TenantLabel: name}); err != nil || len(eas.Items) != 1 || eas.Items[0].Status.Artifact == nil {
		t.Fatalf("ExternalArtifacts of the tenant: %+v (%v), want one with its artifact", eas.Items, err)
	}

	t.Run("a new targetNamespace is created and the stack moves there at once", func(t *testing.T) {
		moveTargetNamespace(t, ctx, c, remote, name, name+"-moved")
	})
	t.Run("a deleted target namespace is created again and the stack applied at once", func(t *testing.T) {
		recreateDeletedNamespace(t, ctx, c, workloads[0], remote[0], name, name+"-moved")
	})

	if err := c.Delete(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	eventually(t, 2*time.Minute, "Tenant gone", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	t.Logf("Tenant deleted %s after the delete request", time.Since(start).Round(time.Millisecond))
	labelled := client.MatchingLabels{tenancyv1alpha1.TenantLabel: name}
	var kss kustomizev1.KustomizationList
	if err := c.List(ctx, &kss, labelled); err != nil || len(kss.Items) > 0 {
		t.Errorf("Kustomizations left: %d (%v)", len(kss.Items), err)
	}
	if err := c.List(ctx, &eas, labelled); err != nil || len(eas.Items) > 0 {
		t.Errorf("ExternalArtifacts left: %d (%v)", len(eas.Items), err)
	}
	for i, w := range workloads {
		err := remote[i].Get(ctx, client.ObjectKey{Namespace: name, Name: "stack-config"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: the stack's ConfigMap after the Tenant was deleted: %v", w.Name, err)
		}
		ns := &corev1.Namespace{}
		if err := remote[i].Get(ctx, client.ObjectKey{Name: name}, ns); err != nil || !ns.DeletionTimestamp.IsZero() {
			t.Errorf("%s: the target namespace after the Tenant was deleted: %v (deleting since %v), want it kept", w.Name, err, ns.DeletionTimestamp)
		}
	}
}

// TestStackWaitsForItsNamespace: a kustomize stack's Kustomization is
// written only once the Kustomization creating its target namespace is
// Ready. A Tenant created suspended gets the namespace Kustomization
// (suspended, so it never runs) and no stack Kustomization, and its line
// says why; resumed, the namespace is created, then the stack is written
// and installed.
func TestStackWaitsForItsNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	const name = "wernham" // and the target namespace
	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/wernham", "v1.0.0", stackWithoutNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := workloads[0]
	remote := newClient(t, w.Config)
	t.Cleanup(func() {
		_ = remote.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	cluster := types.NamespacedName{Namespace: clusterNamespace, Name: w.Name}
	tn := kustomizeTenant(name, art, tenancyv1alpha1.ClusterSelector{Names: []string{w.Name}, Namespaces: []string{clusterNamespace}})
	tn.Spec.Suspend = true
	createTenant(t, ctx, c, tn)

	nsKey := client.ObjectKey{Namespace: clusterNamespace, Name: render.TenantNamespaceObjectName(name, cluster)}
	stackKey := client.ObjectKey{Namespace: clusterNamespace, Name: render.TenantClusterObjectName(name, cluster)}
	waitTenant(t, ctx, c, name, time.Minute, "the cluster's line waiting for the namespace", func(tn *tenancyv1alpha1.Tenant) bool {
		l := clusterLine(tn, w.Name)
		return l != nil && strings.Contains(l.Message, "is written once the target namespace exists")
	})
	if err := c.Get(ctx, nsKey, &kustomizev1.Kustomization{}); err != nil {
		t.Fatalf("the namespace Kustomization %s: %v", nsKey, err)
	}
	time.Sleep(3 * time.Second) // several reconciles of the Tenant
	if err := c.Get(ctx, stackKey, &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the stack Kustomization %s exists before its namespace was created (%v)", stackKey, err)
	}

	updateTenant(t, ctx, c, name, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Suspend = false })
	start := time.Now()
	waitTenant(t, ctx, c, name, 2*time.Minute, "Tenant Ready once resumed", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && tn.Status.ReadyClusters == 1
	})
	t.Logf("Ready %s after the Tenant was resumed", time.Since(start).Round(time.Millisecond))
	if got := stackGreeting(t, ctx, remote, name, w.Name); got != "hello" {
		t.Errorf("greeting %q", got)
	}
}

// moveTargetNamespace changes the Tenant's spec.stack.targetNamespace from
// from to to. The stack's Kustomization is written at once (its
// generation changes, so the Tenant is not Ready before the move is
// applied), and Flux creates the new namespace from the ExternalArtifact's
// new revision at the same time; a stack whose apply came first fails on
// the missing namespace, and Capwright asks Flux to retry it once the
// namespace Kustomization ran, rather than after the stack's retryInterval
// (a minute). The old namespace stays, without the stack.
func moveTargetNamespace(t *testing.T, ctx context.Context, c client.Client, remote []client.Client, from, to string) {
	t.Cleanup(func() {
		for _, r := range remote {
			_ = r.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: to}})
		}
	})
	var tn tenancyv1alpha1.Tenant
	if err := c.Get(ctx, client.ObjectKey{Name: from}, &tn); err != nil {
		t.Fatal(err)
	}
	tn.Spec.Stack.TargetNamespace = to
	if err := c.Update(ctx, &tn); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitTenant(t, ctx, c, from, 2*time.Minute, "Tenant Ready with the stack in "+to, func(got *tenancyv1alpha1.Tenant) bool {
		return isReady(got) && int(got.Status.ReadyClusters) == len(workloads)
	})
	took := time.Since(start)
	t.Logf("the stack moved to %s on %d clusters %s after the change", to, len(workloads), took.Round(time.Millisecond))
	if took > 25*time.Second {
		t.Errorf("the move took %s: a stack applied before its new namespace existed waited out its retryInterval", took.Round(time.Millisecond))
	}
	for i, w := range workloads {
		if got := stackGreeting(t, ctx, remote[i], to, w.Name); got != "hello" {
			t.Errorf("%s: greeting %q in %s", w.Name, got, to)
		}
		err := remote[i].Get(ctx, client.ObjectKey{Namespace: from, Name: "stack-config"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: the stack's ConfigMap in the old namespace %s: %v, want it pruned", w.Name, from, err)
		}
		ns := &corev1.Namespace{}
		if err := remote[i].Get(ctx, client.ObjectKey{Name: from}, ns); err != nil || !ns.DeletionTimestamp.IsZero() {
			t.Errorf("%s: the old target namespace %s: %v (deleting since %v), want it kept", w.Name, from, err, ns.DeletionTimestamp)
		}
	}
}

// recreateDeletedNamespace deletes the tenant's target namespace, with the
// stack in it, on workload cluster w, and has kustomize-controller look
// at the stack: its apply fails on the missing namespace, Capwright asks
// the namespace Kustomization to create it again, and once that ran, the
// stack to apply again — at once, not after its retryInterval (a
// minute).
func recreateDeletedNamespace(t *testing.T, ctx context.Context, c client.Client, w *plane.WorkloadCluster, remote client.Client, tenant, namespace string) {
	// The plane's workload clusters run no namespace controller: empty
	// the namespace and finalize it as the namespace controller would.
	if err := remote.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "stack-config"}}); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{}
	if err := remote.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		t.Fatal(err)
	}
	if err := remote.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(w.Config)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "namespace "+namespace+" gone on "+w.Name, func() (bool, string) {
		err := remote.Get(ctx, client.ObjectKey{Name: namespace}, ns)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		ns.Spec.Finalizers = nil
		_, err = cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		return false, fmt.Sprintf("finalizing: %v", err)
	})

	cluster := types.NamespacedName{Namespace: clusterNamespace, Name: w.Name}
	stack := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(tenant, cluster)}}
	start := time.Now()
	if err := framework.RequestReconcile(ctx, c, stack); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the stack in "+namespace+" on "+w.Name+" again", func() (bool, string) {
		err := remote.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "stack-config"}, &corev1.ConfigMap{})
		return err == nil, fmt.Sprint(err)
	})
	took := time.Since(start)
	t.Logf("namespace %s and the stack back on %s %s after kustomize-controller was asked to look", namespace, w.Name, took.Round(time.Millisecond))
	if took > 25*time.Second {
		t.Errorf("the stack came back after %s: it waited out its retryInterval for the namespace", took.Round(time.Millisecond))
	}
	waitTenant(t, ctx, c, tenant, time.Minute, "Tenant Ready again", func(got *tenancyv1alpha1.Tenant) bool {
		return isReady(got) && int(got.Status.ReadyClusters) == len(workloads)
	})
}
