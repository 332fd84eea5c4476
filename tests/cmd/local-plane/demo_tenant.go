package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// demoStack is the tenant's standard stack: a kustomize artifact of plain
// manifests, a ConfigMap. No Namespace manifest: Capwright has Flux create
// the target namespace (the tenant's name) first.
var demoStack = map[string][]byte{
	"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-settings\ndata:\n  owner: team-a\n"),
}

// demoTenant publishes the stack, applies a Tenant selecting both workload
// clusters, waits until the stack is Ready on each and prints the
// tenant's per-cluster status.
func demoTenant(ctx context.Context, p *plane.Plane, c client.Client) error {
	if err := tenancyv1alpha1.AddToScheme(c.Scheme()); err != nil {
		return err
	}
	art, err := framework.PushFiles(ctx, p.Registry.Host, "stacks/team-a", "v1.0.0", demoStack, nil)
	if err != nil {
		return err
	}
	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: tenancyv1alpha1.TenantSpec{
			Clusters: tenancyv1alpha1.ClusterSelector{
				// By name: labelling the Clusters would go through Cluster
				// API's admission webhooks, which nothing serves here (kwok
				// runs the provider Deployments without their processes).
				Names:      []string{"workload-1", "workload-2"},
				Namespaces: []string{"default"},
			},
			Stack: tenancyv1alpha1.StackSpec{Kustomize: &tenancyv1alpha1.KustomizeStack{
				OCIRepositoryAccess: tenancyv1alpha1.OCIRepositoryAccess{URL: art.URL, Insecure: true},
				Tag:                 art.Tag,
			}},
		},
	}
	fmt.Printf("\ndemo: applying Tenant team-a: the stack %s:%s on CAPI Clusters default/workload-1 and default/workload-2\n", art.URL, art.Tag)
	applied := time.Now()
	if err := c.Create(ctx, tn); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
			return false, nil
		}
		return apimeta.IsStatusConditionTrue(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition) && tn.Status.ReadyClusters == 2, nil
	})
	printTenant(tn)
	if err != nil {
		return fmt.Errorf("tenant team-a was not Ready on both workload clusters in 3m: %w", err)
	}
	fmt.Printf("demo: tenant team-a Ready on %d/%d clusters %s after it was applied\n",
		tn.Status.ReadyClusters, tn.Status.TotalClusters, time.Since(applied).Round(time.Millisecond))
	return nil
}

func printTenant(tn *tenancyv1alpha1.Tenant) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	ready := "Unknown"
	if c := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition); c != nil {
		ready = string(c.Status) + " (" + c.Reason + ")"
	}
	fmt.Fprintf(w, "\nTENANT\tNAMESPACE\tCLUSTERS\tREADY\t\n%s\t%s\t%d/%d\t%s\t\n", tn.Name, tn.Status.Namespace,
		tn.Status.ReadyClusters, tn.Status.TotalClusters, ready)
	fmt.Fprintln(w, "\nCLUSTER\tPHASE\tREVISION\tMESSAGE\t")
	for _, l := range tn.Status.Clusters {
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t\n", l.Namespace, l.Name, l.Phase, l.AppliedRevision, l.Message)
	}
	_ = w.Flush()
}
