package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
	"github.com/capwright/capwright/tests/plane/hcpsim"
)

// demoCluster is the loop after the providers: the Cluster API core
// manager Flux installed runs (as a local process: kwok runs no
// containers), a team gets a Tenant, and one Cluster of a ClusterClass
// whose control plane is a chart Flux installs (the plane's simulated
// hosted-control-plane operator starts a real API server for it) gets the
// team's stack.
func demoCluster(ctx context.Context, p *plane.Plane, c client.Client) error {
	if err := clustersv1alpha1.AddToScheme(c.Scheme()); err != nil {
		return err
	}
	fmt.Println("\ndemo: running the Cluster API core manager Flux installed (ClusterTopology on), and hcpsim, the plane's simulated hosted-control-plane operator")
	if _, err := p.StartCAPIManager(ctx, plane.CAPIManagerOptions{Namespace: "capi-system"}); err != nil {
		return err
	}
	chart, err := framework.StartHostedControlPlanes(ctx, p)
	if err != nil {
		return err
	}
	art, err := framework.PushFiles(ctx, p.Registry.Host, "stacks/team-b", "v1.0.0", demoStack, nil)
	if err != nil {
		return err
	}
	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-b"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{Selector: &metav1.LabelSelector{}},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: art.URL, Insecure: true}, Tag: art.Tag}},
		},
	}
	fmt.Println("demo: applying Tenant team-b (every Cluster in its namespace tenant-team-b gets its stack)")
	if err := c.Create(ctx, tn); err != nil {
		return err
	}
	ns := "tenant-team-b"
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) == nil, nil
	}); err != nil {
		return fmt.Errorf("the namespace of tenant team-b: %w", err)
	}
	cpt := &clustersv1alpha1.CapwrightControlPlaneTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosted"},
		Spec: clustersv1alpha1.CapwrightControlPlaneTemplateSpec{Template: clustersv1alpha1.CapwrightControlPlaneTemplateResource{
			Spec: framework.HostedControlPlaneSpec(chart, nil),
		}},
	}
	ct := &clustersv1alpha1.CapwrightClusterTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosted"}}
	class := &unstructured.Unstructured{}
	class.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"})
	class.SetNamespace(ns)
	class.SetName("hosted")
	_ = unstructured.SetNestedMap(class.Object, map[string]any{
		"controlPlane":   map[string]any{"templateRef": map[string]any{"apiVersion": clustersv1alpha1.GroupVersion.String(), "kind": "CapwrightControlPlaneTemplate", "name": "hosted"}},
		"infrastructure": map[string]any{"templateRef": map[string]any{"apiVersion": clustersv1alpha1.GroupVersion.String(), "kind": "CapwrightClusterTemplate", "name": "hosted"}},
	}, "spec")
	fmt.Printf("demo: applying ClusterClass %s/hosted (control plane: chart %s:%s through Flux)\n", ns, chart, hcpsim.ChartVersion)
	for _, o := range []client.Object{cpt, ct} {
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	if err := framework.CreateWithRetry(ctx, c, class); err != nil {
		return err
	}
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"})
	cluster.SetNamespace(ns)
	cluster.SetName("dev")
	_ = unstructured.SetNestedMap(cluster.Object, map[string]any{"classRef": map[string]any{"name": "hosted"}, "version": "v1.31.0"}, "spec", "topology")
	fmt.Printf("demo: applying Cluster %s/dev of ClusterClass hosted, Kubernetes v1.31.0\n", ns)
	applied := time.Now()
	// The Cluster webhook accepts a topology once the ClusterClass
	// controller has reconciled the class.
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.Create(ctx, cluster.DeepCopy()) == nil, nil
	}); err != nil {
		return fmt.Errorf("creating Cluster %s/dev: %w", ns, err)
	}
	var available, stack time.Duration
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
			return false, nil
		}
		if available == 0 && clusterConditionTrue(cluster, "Available") {
			available = time.Since(applied)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
			return false, nil
		}
		if stack == 0 && tn.Status.ReadyClusters == 1 {
			stack = time.Since(applied)
		}
		return available > 0 && stack > 0, nil
	})
	var cps clustersv1alpha1.CapwrightControlPlaneList
	_ = c.List(ctx, &cps, client.InNamespace(ns))
	printControlPlanes(cps.Items, cluster)
	printTenant(tn)
	if err != nil {
		return fmt.Errorf("cluster %s/dev did not become Available with the team's stack in 4m: %w", ns, err)
	}
	fmt.Printf("demo: Cluster %s/dev Available %s after it was applied; the team's stack Ready on it after %s\n", ns,
		available.Round(time.Millisecond), stack.Round(time.Millisecond))
	return nil
}

func clusterConditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

func printControlPlanes(cps []clustersv1alpha1.CapwrightControlPlane, cluster *unstructured.Unstructured) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nCONTROL PLANE\tCLUSTER AVAILABLE\tINITIALIZED\tVERSION\tENDPOINT\tREADY\tMESSAGE\t")
	for _, cp := range cps {
		ready, msg := "Unknown", ""
		if c := apimeta.FindStatusCondition(cp.Status.Conditions, clustersv1alpha1.ReadyCondition); c != nil {
			ready, msg = string(c.Status), c.Message
		}
		initialized := cp.Status.Initialization.ControlPlaneInitialized != nil && *cp.Status.Initialization.ControlPlaneInitialized
		fmt.Fprintf(w, "%s/%s\t%t\t%t\t%s\t%s:%d\t%s\t%s\t\n", cp.Namespace, cp.Name, clusterConditionTrue(cluster, "Available"), initialized,
			cp.Status.Version, cp.Spec.ControlPlaneEndpoint.Host, cp.Spec.ControlPlaneEndpoint.Port, ready, msg)
	}
	_ = w.Flush()
}
