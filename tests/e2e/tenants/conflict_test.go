package tenants

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestTenantRefusesAUserObjectWithItsName: a Kustomization the user made
// already has the name Capwright would give the tenant's Flux object for a
// cluster. The tenant reports that cluster Failed (NameConflict) on its own
// line, and neither reconciling nor deleting the Tenant touches the user's
// object.
func TestTenantRefusesAUserObjectWithItsName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	const name = "umbrella"
	cluster := types.NamespacedName{Namespace: clusterNamespace, Name: workloads[0].Name}

	mine := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: render.TenantClusterObjectName(name, cluster),
			Labels: map[string]string{"owner": "platform-team"}},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: time.Hour},
			Path:      "./team",
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "platform-team"},
			Suspend:   true,
		},
	}
	if err := c.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(context.Background(), mine) }()
	before := mine.DeepCopy()

	art, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/umbrella", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := kustomizeTenant(name, art, tenancyv1alpha1.ClusterSelector{Names: []string{cluster.Name}, Namespaces: []string{cluster.Namespace}})
	createTenant(t, ctx, c, tn)
	tn = waitTenant(t, ctx, c, name, 2*time.Minute, "the cluster line reports the name conflict", func(tn *tenancyv1alpha1.Tenant) bool {
		line := clusterLine(tn, cluster.Name)
		return line != nil && line.Phase == tenancyv1alpha1.ClusterPhaseFailed && line.Reason == tenancyv1alpha1.NameConflictReason
	})
	line := clusterLine(tn, cluster.Name)
	t.Logf("cluster line: %s %s: %s", line.Phase, line.Reason, line.Message)
	if !strings.Contains(line.Message, mine.Name) {
		t.Errorf("the conflict message does not name Kustomization %s: %q", mine.Name, line.Message)
	}
	if isReady(tn) {
		t.Errorf("Tenant Ready although its only cluster failed: %s", tenantState(tn))
	}
	untouched := func(when string) {
		t.Helper()
		got := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mine), got); err != nil {
			t.Fatalf("%s: the user's Kustomization: %v", when, err)
		}
		if !reflect.DeepEqual(got.Spec, before.Spec) || !reflect.DeepEqual(got.Labels, before.Labels) ||
			len(got.OwnerReferences) > 0 || len(got.Annotations) > 0 {
			t.Errorf("%s: the user's Kustomization was changed: spec %+v labels %v owners %v annotations %v",
				when, got.Spec, got.Labels, got.OwnerReferences, got.Annotations)
		}
	}
	untouched("after the Tenant reported the conflict")

	if err := c.Delete(ctx, tn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "Tenant gone", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	untouched("after the Tenant was deleted")
}
