package providers

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// driftInterval is the spec.interval the drift test gives the bootstrap
// provider: the shortest the API server takes.
const driftInterval = time.Minute

// driftCorrected has someone edit the installed bootstrap provider's
// Deployment (image, replicas) and delete its ClusterRole and a
// RoleBinding. Flux puts all of it back on its next run, and
// status.lastDriftCorrection names what it put back (Flux may split the
// edits between two runs: the test gathers what each correction it sees
// names). The provider's spec.interval reaches its Kustomization, which
// runs that often; rather than wait out the interval (at least a minute),
// the test asks for the run, as `flux reconcile` does, with
// reconcile.fluxcd.io/requestedAt on the provider, which Capwright passes
// on to its Flux objects — the run it brings applies the same revision as
// the interval's.
func driftCorrected(t *testing.T, ctx context.Context, c client.Client, p installed) {
	obj := p.obj
	updateProvider(t, ctx, c, obj, func() { obj.GetSpec().Interval = &metav1.Duration{Duration: driftInterval} })
	waitCondition(t, ctx, c, obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	defer func() {
		updateProvider(t, ctx, c, obj, func() { obj.GetSpec().Interval = nil })
		waitCondition(t, ctx, c, obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 2*time.Minute)
	}()
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: "bootstrap-kubeadm"}, &ks); err != nil {
		t.Fatal(err)
	}
	if ks.Spec.Interval.Duration != driftInterval {
		t.Fatalf("Kustomization interval %s, want spec.interval %s", ks.Spec.Interval.Duration, driftInterval)
	}

	// Flux's events have a resolution of a second.
	before := time.Now().Truncate(time.Second)
	var dep appsv1.Deployment
	if err := c.Get(ctx, p.deployment, &dep); err != nil {
		t.Fatal(err)
	}
	image, replicas := dep.Spec.Template.Spec.Containers[0].Image, *dep.Spec.Replicas
	dep.Spec.Template.Spec.Containers[0].Image = "example.com/tampered/kubeadm-bootstrap-controller:v0"
	dep.Spec.Replicas = ptr.To(replicas + 2)
	if err := c.Update(ctx, &dep); err != nil {
		t.Fatal(err)
	}
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "capi-kubeadm-bootstrap-manager-role"}}
	roleBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: "capi-kubeadm-bootstrap-leader-election-rolebinding"}}
	for _, o := range []client.Object{clusterRole, roleBinding} {
		if err := c.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("edited Deployment %s (image, replicas %d → %d), deleted ClusterRole %s and RoleBinding %s", p.deployment, replicas, replicas+2, clusterRole.Name, roleBinding.Name)

	var corrected time.Duration
	named := map[string]bool{}
	var d *v1alpha1.DriftCorrection
	want := []string{
		"Deployment/" + p.deployment.Namespace + "/" + p.deployment.Name + " configured",
		"ClusterRole/" + clusterRole.Name + " created",
		"RoleBinding/" + roleBinding.Namespace + "/" + roleBinding.Name + " created",
	}
	// Asked again while something is missing: a run already under way
	// when the edits were made may have put back only part of them.
	var asked time.Time
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, false, func(ctx context.Context) (bool, error) {
		if time.Since(asked) > 20*time.Second {
			requestReconcile(t, ctx, c, obj)
			asked = time.Now()
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj.(client.Object)), obj.(client.Object)); err != nil {
			return false, err
		}
		if d = obj.GetStatus().LastDriftCorrection; d != nil && !d.Time.Time.Before(before) {
			for _, o := range d.Objects {
				named[o] = true
			}
		}
		if err := c.Get(ctx, p.deployment, &dep); err != nil {
			return false, err
		}
		if dep.Spec.Template.Spec.Containers[0].Image != image || *dep.Spec.Replicas != replicas {
			return false, nil
		}
		for _, o := range []client.Object{clusterRole, roleBinding} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); apierrors.IsNotFound(err) {
				return false, nil
			} else if err != nil {
				return false, err
			}
		}
		if corrected == 0 {
			corrected = time.Since(before)
		}
		return named[want[0]] && named[want[1]] && named[want[2]], nil
	})
	if corrected == 0 {
		t.Fatalf("Flux did not put back the Deployment (image %s, replicas %d), the ClusterRole and the RoleBinding within 2m of a reconcile request: %v",
			dep.Spec.Template.Spec.Containers[0].Image, *dep.Spec.Replicas, err)
	}
	t.Logf("Flux put everything back %s after the edits (asked for a reconcile)", corrected.Round(time.Second))
	if err != nil {
		t.Fatalf("status.lastDriftCorrection does not show the whole correction, want %q: last %+v", want, d)
	}
	if !strings.HasSuffix(d.Revision, obj.GetStatus().Artifact.Digest) {
		t.Errorf("lastDriftCorrection revision %q, want the installed %s", d.Revision, obj.GetStatus().Artifact.Revision)
	}
	t.Logf("status.lastDriftCorrection: %+v", d)
	waitCondition(t, ctx, c, obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", time.Minute)
}
