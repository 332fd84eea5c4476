package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// publishStack pushes team A's stack at tag where the example's Tenant
// (through the site overlay) takes it from: a ConfigMap baseline whose
// version is the tag. No Namespace manifest: Capwright has Flux create
// the target namespace (the tenant's name) first.
func publishStack(ctx context.Context, p *plane.Plane, tag string) (framework.PushedArtifact, error) {
	files := map[string][]byte{
		"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: baseline\ndata:\n  version: " + tag + "\n"),
	}
	return framework.PushFiles(ctx, p.Registry.Host, framework.ExampleStackRepository, tag, files, nil)
}

// pendingWorkloads are workload clusters starting in the background.
type pendingWorkloads struct {
	wg  sync.WaitGroup
	out []*plane.WorkloadCluster
	err []error
}

// startWorkloads starts a workload cluster per name in the background.
func startWorkloads(ctx context.Context, p *plane.Plane, names ...string) *pendingWorkloads {
	w := &pendingWorkloads{out: make([]*plane.WorkloadCluster, len(names)), err: make([]error, len(names))}
	for i, name := range names {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.out[i], w.err[i] = p.StartWorkloadCluster(ctx, name, plane.WorkloadOptions{ControllerManager: true})
		}()
	}
	return w
}

func (w *pendingWorkloads) get() ([]*plane.WorkloadCluster, error) {
	w.wg.Wait()
	return w.out, errors.Join(w.err...)
}

// demoTenant makes the workload clusters team A's Clusters, as Cluster API
// would once it had made them (the Cluster, through the real Cluster API
// manager's webhooks, and its kubeconfig Secret), labelled for the
// Tenant's selector, waits until the stack is Ready on both and shows it
// there.
func demoTenant(ctx context.Context, p *plane.Plane, c client.Client, clusters []*plane.WorkloadCluster) error {
	var names []string
	for _, w := range clusters {
		names = append(names, tenantNamespace+"/"+w.Name)
	}
	fmt.Printf("demo: registering the workload clusters as Clusters %s, labelled tenant=team-a (what Tenant team-a selects)\n", strings.Join(names, " and "))
	registered := time.Now()
	for _, w := range clusters {
		// The Cluster API manager Flux installed serves the Clusters'
		// webhooks once it has started.
		var last error
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, last = p.RegisterWorkloadCluster(ctx, w, tenantNamespace, w.Name)
			return last == nil, nil
		}); err != nil {
			return fmt.Errorf("registering Cluster %s/%s: %v: %w", tenantNamespace, w.Name, last, err)
		}
		if err := p.LabelCluster(ctx, tenantNamespace, w.Name, map[string]string{"tenant": "team-a"}); err != nil {
			return err
		}
	}
	tn := &tenancyv1alpha1.Tenant{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, tn); err != nil {
			return false, nil
		}
		ready := apimeta.FindStatusCondition(tn.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == tn.Generation && tn.Status.ReadyClusters == 2, nil
	})
	printTenant(tn)
	if err != nil {
		return fmt.Errorf("tenant team-a was not Ready on both workload clusters in 3m: %w", err)
	}
	fmt.Printf("demo: tenant team-a Ready on %d/%d clusters %s after they were registered\n",
		tn.Status.ReadyClusters, tn.Status.TotalClusters, since(registered))
	for _, w := range clusters {
		remote, err := client.New(w.Config, client.Options{})
		if err != nil {
			return err
		}
		cm := &corev1.ConfigMap{}
		if err := remote.Get(ctx, client.ObjectKey{Namespace: stackNamespace, Name: "baseline"}, cm); err != nil {
			return fmt.Errorf("team A's stack on %s: %w", w.Name, err)
		}
		fmt.Printf("demo: on %s: ConfigMap %s/baseline, version %s\n", w.Name, stackNamespace, cm.Data["version"])
	}
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
	if len(tn.Status.Clusters) > 0 {
		fmt.Fprintln(w, "\nCLUSTER\tPHASE\tREVISION\tMESSAGE\t")
		for _, l := range tn.Status.Clusters {
			fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t\n", l.Namespace, l.Name, l.Phase, l.AppliedRevision, l.Message)
		}
	}
	_ = w.Flush()
}

// workloadKubeconfigs lists the workload clusters' kubeconfig files.
func workloadKubeconfigs(clusters []*plane.WorkloadCluster) string {
	var s []string
	for _, w := range clusters {
		s = append(s, w.Name+" "+w.KubeconfigPath)
	}
	return strings.Join(s, ", ")
}
