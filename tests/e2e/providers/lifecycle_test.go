package providers

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

const (
	oldVersion = "v1.13.6"
	newVersion = "v1.14.2"
)

// installed describes one of the three providers of the lifecycle test.
type installed struct {
	obj        v1alpha1.Provider
	deployment client.ObjectKey
}

// TestProviderLifecycle installs the core, kubeadm bootstrap and kubeadm
// control plane providers of Cluster API v1.13 from artifacts in the
// upstream layout, upgrades them to v1.14 and deletes them, checking what
// Flux applied on the API server at each step. The bootstrap provider goes
// into a namespace of its own (clusterctl's namespace fixes).
func TestProviderLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := newClient(t)

	// No spec.source: the catalog names registry.k8s.io, the manager's
	// mirror rule sends it to the plane's registry.
	for _, v := range []string{oldVersion, newVersion} {
		publish(t, ctx, v1alpha1.CoreProviderType, "cluster-api", v)
		publish(t, ctx, v1alpha1.BootstrapProviderType, "kubeadm", v)
		publish(t, ctx, v1alpha1.ControlPlaneProviderType, "kubeadm", v)
	}
	for _, ns := range []string{"capi-system", "kubeadm-bootstrap", "capi-kubeadm-control-plane-system"} {
		ensureNamespace(t, ctx, c, ns)
	}
	core := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion}}
	bootstrap := &v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeadm-bootstrap", Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion,
			Variables: map[string]string{"KUBEADM_BOOTSTRAP_TOKEN_TTL": "30m"}}}
	controlPlane := &v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"},
		Spec: v1alpha1.ProviderSpec{Version: oldVersion}}
	providers := []installed{
		{core, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}},
		{bootstrap, client.ObjectKey{Namespace: "kubeadm-bootstrap", Name: "capi-kubeadm-bootstrap-controller-manager"}},
		{controlPlane, client.ObjectKey{Namespace: "capi-kubeadm-control-plane-system", Name: "capi-kubeadm-control-plane-controller-manager"}},
	}

	start := time.Now()
	for _, p := range providers {
		if err := c.Create(ctx, p.obj.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range providers {
		waitCondition(t, ctx, c, p.obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
	}
	t.Logf("three providers %s Ready %s after their CRs were applied", oldVersion, time.Since(start).Round(time.Millisecond))
	logWrites(t, start)
	assertInstalledEvent(t, ctx, c, core)
	for _, p := range providers {
		assertInstalled(t, ctx, c, p, oldVersion, "v1beta2")
	}
	t.Run("Flux starts at once and skips substituting CRDs", func(t *testing.T) { fluxStartedAtOnce(t, ctx, c, start, providers) })
	t.Run("capwright status shows each provider's Flux objects and what Flux applied", func(t *testing.T) { statusShowsProviders(t, ctx, providers) })

	t.Run("upgrade plan and UpgradeAvailable name v1.14 and block an incompatible contract", func(t *testing.T) {
		upgradePlanShown(t, ctx, c, providers, oldVersion, newVersion)
	})

	t.Run("upgrade to v1.14 moves all three and prunes what v1.14 dropped", func(t *testing.T) {
		dropped := droppedObjects(t, oldVersion, newVersion)
		for _, p := range providers {
			updateProvider(t, ctx, c, p.obj, func() { p.obj.GetSpec().Version = newVersion })
		}
		for _, p := range providers {
			waitCondition(t, ctx, c, p.obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 5*time.Minute)
			assertInstalled(t, ctx, c, p, newVersion, "v1beta2")
		}
		upgradesCleared(t, ctx, c, providers)
		for _, d := range dropped {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(d.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKey{Namespace: d.GetNamespace(), Name: d.GetName()}, u)
			if err == nil {
				t.Errorf("%s %s/%s was dropped by %s but is still there", d.GetKind(), d.GetNamespace(), d.GetName(), newVersion)
			}
		}
		t.Logf("%d objects dropped by %s were pruned", len(dropped), newVersion)
	})

	t.Run("a no-op resync writes nothing", func(t *testing.T) {
		// Let the dust settle, then make every provider reconcile.
		time.Sleep(3 * time.Second)
		since := time.Now()
		for _, p := range providers {
			poke(t, ctx, c, p.obj)
		}
		time.Sleep(5 * time.Second)
		noManagerWrites(t, since, "a resync with nothing changed")
	})

	t.Run("the metrics say what the status says", func(t *testing.T) { installedMetrics(t, ctx, newVersion) })

	t.Run("a reconcile request reaches Flux and is acknowledged once", func(t *testing.T) {
		reconcileRequestReachesFlux(t, ctx, c, providers[0].obj)
	})

	t.Run("nothing is written while Flux re-reconciles", func(t *testing.T) {
		var objs []v1alpha1.Provider
		for _, p := range providers {
			objs = append(objs, p.obj)
		}
		nothingWrittenWhileIdle(t, ctx, c, objs)
	})

	t.Run("Clusters are not watched while no Tenant or contract object needs them", func(t *testing.T) {
		noClusterWatch(t, ctx, c)
	})

	t.Run("drift is put back on Flux's next run and shown in the status", func(t *testing.T) { driftCorrected(t, ctx, c, providers[1]) })
	refusals(t, ctx, c)
	t.Run("a downgrade is refused, also once the status is lost", func(t *testing.T) {
		downgradeRefused(t, ctx, c, core, newVersion, oldVersion)
	})
	t.Run("kstatus", func(t *testing.T) { kstatusWait(t, ctx, c) })
	t.Run("events reach an Alert through notification-controller", func(t *testing.T) { alertsReceiveEvents(t, ctx, c) })
	t.Run("additional manifests", func(t *testing.T) { additionalManifests(t, ctx, c) })
	t.Run("spec.dependsOn holds the install until the dependency is Ready", func(t *testing.T) { waitsForDependsOn(t, ctx, c) })
	t.Run("cosign signatures are verified, also at a mirror", func(t *testing.T) { signatures(t, ctx, c) })
	charts(t, ctx, c)
	t.Run("capwright build prints what the manager applied", func(t *testing.T) { buildMatchesManager(t, ctx, c, providers) })

	t.Run("deleting a provider waits for objects of its kinds, the core provider also for other providers", func(t *testing.T) {
		manager, err := env.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: "capi-system"})
		if err != nil {
			t.Fatal(err)
		}
		defer manager.Stop()
		if err := env.InstallTestInfraClusterCRD(ctx); err != nil {
			t.Fatal(err)
		}
		cluster := plane.NewTestCluster("default", "blocker")
		if err := framework.CreateWithRetry(ctx, c, cluster); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, core); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, ctx, c, core, v1alpha1.DeletingCondition, metav1.ConditionTrue, v1alpha1.DeletionBlockedReason, time.Minute)
		msg := conditionMessage(core, v1alpha1.DeletingCondition)
		for _, want := range []string{"Cluster default/blocker", "BootstrapProvider kubeadm-bootstrap/kubeadm", "ControlPlaneProvider capi-kubeadm-control-plane-system/kubeadm"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Deleting message %q does not name %s", msg, want)
			}
		}
		// Still installed while blocked.
		assertDeploymentAvailable(t, ctx, c, providers[0].deployment)

		// An object of the bootstrap provider's own kinds holds it up,
		// as a Cluster holds the core provider up.
		admitAll(t, ctx, c, "kubeadm-bootstrap", "capi-kubeadm-bootstrap-webhook-service", "capi-kubeadm-bootstrap-webhook-service-cert")
		config := &unstructured.Unstructured{}
		config.SetGroupVersionKind(schema.GroupVersionKind{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfig"})
		config.SetNamespace("default")
		config.SetName("blocker-config")
		if err := framework.CreateWithRetry(ctx, c, config); err != nil {
			t.Fatal(err)
		}
		for _, p := range providers[1:] {
			if err := c.Delete(ctx, p.obj.(client.Object)); err != nil {
				t.Fatal(err)
			}
		}
		waitCondition(t, ctx, c, bootstrap, v1alpha1.DeletingCondition, metav1.ConditionTrue, v1alpha1.DeletionBlockedReason, time.Minute)
		if msg := conditionMessage(bootstrap, v1alpha1.DeletingCondition); !strings.Contains(msg, "KubeadmConfig default/blocker-config") {
			t.Errorf("the bootstrap provider's Deleting message %q does not name KubeadmConfig default/blocker-config", msg)
		}
		// The control plane provider has no such object and goes; the
		// bootstrap provider stays installed while blocked.
		waitGone(t, ctx, c, controlPlane, 3*time.Minute)
		waitGone(t, ctx, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: providers[2].deployment.Namespace, Name: providers[2].deployment.Name}}, time.Minute)
		assertDeploymentAvailable(t, ctx, c, providers[1].deployment)
		if err := c.Delete(ctx, config); err != nil {
			t.Fatal(err)
		}
		// Asked to look again rather than waiting out its 10 s requeue.
		poke(t, ctx, c, bootstrap)
		waitGone(t, ctx, c, bootstrap, 3*time.Minute)
		waitGone(t, ctx, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: providers[1].deployment.Namespace, Name: providers[1].deployment.Name}}, time.Minute)
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(core), core); err != nil {
				return false, err
			}
			msg := conditionMessage(core, v1alpha1.DeletingCondition)
			return strings.Contains(msg, "Cluster default/blocker") && !strings.Contains(msg, "Provider"), nil
		})
		if err != nil {
			t.Errorf("after the other providers are gone, Deleting should name only the Cluster: %q", conditionMessage(core, v1alpha1.DeletingCondition))
		}
		if err := c.Delete(ctx, cluster); err != nil {
			t.Fatal(err)
		}
		waitGone(t, ctx, c, cluster, 2*time.Minute)
		waitGone(t, ctx, c, core, 3*time.Minute)
		waitGone(t, ctx, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-controller-manager"}}, time.Minute)
		// The namespace holding the provider CR (and the user's Secrets)
		// stays, and so do the CRDs: deleting a provider must never delete
		// users' objects.
		var ns corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, &ns); err != nil || !ns.DeletionTimestamp.IsZero() {
			t.Fatalf("namespace capi-system was pruned with the core provider: %v %v", err, ns.DeletionTimestamp)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: "clusters.cluster.x-k8s.io"}, &crd); err != nil {
			t.Fatalf("the Cluster CRD was removed with the core provider: %v", err)
		}
		var ks kustomizev1.Kustomization
		if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "core-cluster-api"}, &ks); !apierrors.IsNotFound(err) {
			t.Fatalf("the core provider's Kustomization is still there: %v", err)
		}
	})
}

func assertInstalled(t *testing.T, ctx context.Context, c client.Client, p installed, version, contract string) {
	t.Helper()
	status := p.obj.GetStatus()
	if status.InstalledVersion != version || status.Contract != contract {
		t.Errorf("%s: installedVersion %q contract %q, want %s %s", p.obj.GetName(), status.InstalledVersion, status.Contract, version, contract)
	}
	if status.Artifact == nil || !strings.HasPrefix(status.Artifact.Revision, version+"@sha256:") {
		t.Errorf("%s: artifact %+v, want revision %s@sha256:…", p.obj.GetName(), status.Artifact, version)
	}
	assertDeploymentAvailable(t, ctx, c, p.deployment)
	var repo sourcev1.OCIRepository
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.obj.GetNamespace(), Name: status.FluxObjects[0].Name}, &repo); err != nil {
		t.Fatal(err)
	}
	if repo.Spec.Reference == nil || repo.Spec.Reference.Digest != status.Artifact.Digest {
		t.Errorf("%s: OCIRepository is not pinned to the checked digest %s: %+v", p.obj.GetName(), status.Artifact.Digest, repo.Spec.Reference)
	}
	// The CRDs carry the contract label and clusterctl's provider label.
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds, client.MatchingLabels{"cluster.x-k8s.io/provider": labelValue(p.obj)}); err != nil {
		t.Fatal(err)
	}
	if len(crds.Items) == 0 {
		t.Errorf("%s: no CRD labelled cluster.x-k8s.io/provider=%s", p.obj.GetName(), labelValue(p.obj))
	}
	for _, crd := range crds.Items {
		// Provider CRDs declare the contract they implement; the core's own
		// CRDs define it and carry no such label.
		if _, ok := crd.Labels["cluster.x-k8s.io/"+contract]; !ok && p.obj.ProviderType() != v1alpha1.CoreProviderType {
			t.Errorf("CRD %s lacks the contract label cluster.x-k8s.io/%s: %v", crd.Name, contract, crd.Labels)
		}
		if _, ok := crd.Labels["clusterctl.cluster.x-k8s.io"]; !ok {
			t.Errorf("CRD %s lacks the clusterctl label", crd.Name)
		}
	}
	// clusterctl's inventory.
	inv := &unstructured.Unstructured{}
	inv.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "Provider"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.obj.GetNamespace(), Name: labelValue(p.obj)}, inv); err != nil {
		t.Errorf("%s: clusterctl inventory: %v", p.obj.GetName(), err)
	} else if inv.Object["version"] != version {
		t.Errorf("%s: clusterctl inventory version %v, want %s", p.obj.GetName(), inv.Object["version"], version)
	}
}

func labelValue(p v1alpha1.Provider) string {
	if p.ProviderType() == v1alpha1.CoreProviderType {
		return "cluster-api"
	}
	return p.ProviderType() + "-" + p.GetName()
}

func assertDeploymentAvailable(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey) {
	t.Helper()
	var dep appsv1.Deployment
	if err := c.Get(ctx, key, &dep); err != nil {
		t.Fatalf("Deployment %s: %v", key, err)
	}
	for _, cond := range dep.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
			return
		}
	}
	t.Fatalf("Deployment %s not Available: %+v", key, dep.Status)
}

// droppedObjects lists objects of the three providers' components in from
// that to no longer has (the upgrade must prune them).
func droppedObjects(t *testing.T, from, to string) []*unstructured.Unstructured {
	t.Helper()
	keys := func(version string) map[string]*unstructured.Unstructured {
		out := map[string]*unstructured.Unstructured{}
		for _, f := range []string{"core-components.yaml", "bootstrap-components.yaml", "control-plane-components.yaml"} {
			data, err := os.ReadFile(env.CAPIComponentsPath(version, f))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := plane.DecodeYAML(strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				ns := o.GetNamespace()
				if f == "bootstrap-components.yaml" && ns != "" {
					ns = "kubeadm-bootstrap"
					o.SetNamespace(ns)
				}
				out[o.GetKind()+"/"+ns+"/"+o.GetName()] = o
			}
		}
		return out
	}
	old, cur := keys(from), keys(to)
	var dropped []*unstructured.Unstructured
	for k, o := range old {
		if _, ok := cur[k]; !ok && o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "Namespace" {
			dropped = append(dropped, o)
		}
	}
	return dropped
}

func conditionMessage(p v1alpha1.Provider, condType string) string {
	for _, c := range p.GetConditions() {
		if c.Type == condType {
			return c.Message
		}
	}
	return ""
}

// logWrites reports the manager's API writes since start, by resource.
func logWrites(t *testing.T, since time.Time) {
	t.Helper()
	writes, err := env.Writes(plane.CapwrightUser, since)
	if err != nil {
		t.Fatal(err)
	}
	byResource := map[string]int{}
	for _, w := range writes {
		key := w.Verb + " " + w.Resource
		if w.Subresource != "" {
			key += "/" + w.Subresource
		}
		byResource[key]++
	}
	t.Logf("the manager made %d API writes for the three installs: %v", len(writes), byResource)
}

// assertInstalledEvent checks the Flux-shaped event of an installation: a
// Kubernetes Event on the provider carrying the revision annotation that
// notification-controller forwards.
func assertInstalledEvent(t *testing.T, ctx context.Context, c client.Client, p v1alpha1.Provider) {
	t.Helper()
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(p.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == p.GetName() && e.Reason == v1alpha1.InstalledReason && e.Type == corev1.EventTypeNormal &&
			strings.HasPrefix(e.Annotations[v1alpha1.GroupVersion.Group+"/revision"], p.GetSpec().Version+"@sha256:") {
			return
		}
	}
	t.Errorf("no Installed event with a revision annotation for %s/%s among %d events", p.GetNamespace(), p.GetName(), len(events.Items))
}
