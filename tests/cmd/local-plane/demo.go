package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// demo starts the plane, has Flux deliver an OCI artifact onto it, prints
// what runs and what Flux reports, and stops (CAPWRIGHT_DEMO_KEEP=1 keeps it
// up until Ctrl-C).
func demo(_ []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	p, err := plane.Start(ctx, plane.Options{Log: os.Stdout})
	if err != nil {
		return err
	}
	defer p.Stop()
	up := time.Since(start)

	c, err := framework.NewClient(p.Config)
	if err != nil {
		return err
	}
	fmt.Println("demo: pushing an artifact to the in-process registry and letting Flux apply it")
	d, err := framework.Deliver(ctx, c, p.Registry.Host, plane.FluxNamespace, "demo", map[string][]byte{"app.yaml": []byte(framework.SmokeManifests)})
	if err != nil {
		return err
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "smoke", Name: "smoke-app"}, &dep); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return err
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "\nLocal management plane (up in %s), logs in %s\n", up.Round(time.Millisecond), p.RunDir)
	fmt.Fprintln(w, "COMPONENT\tLOG")
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "source-controller", "kustomize-controller", "helm-controller", "certsim", "webhook-router"} {
		fmt.Fprintf(w, "%s\t%s\n", name, p.LogPath(name))
	}
	fmt.Fprintf(w, "registry\thttp://%s (in-process)\n", p.Registry.Host)
	fmt.Fprintf(w, "nodes\t%d simulated by kwok\n", len(nodes.Items))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "FLUX OBJECT\tREADY\tREVISION")
	fmt.Fprintf(w, "OCIRepository/%s\tTrue\t%s\n", d.Repository.Name, d.Repository.Status.Artifact.Revision)
	fmt.Fprintf(w, "Kustomization/%s\tTrue\t%s\n", d.Kustomization.Name, d.Kustomization.Status.LastAppliedRevision)
	fmt.Fprintf(w, "Deployment smoke/%s\t%d/%d ready\t\n", dep.Name, dep.Status.ReadyReplicas, *dep.Spec.Replicas)
	if err := w.Flush(); err != nil {
		return err
	}
	if os.Getenv("CAPWRIGHT_DEMO_KEEP") != "" {
		fmt.Printf("\nCAPWRIGHT_DEMO_KEEP is set: the plane stays up (KUBECONFIG=%s); Ctrl-C stops it.\n", p.Kubeconfig)
		<-ctx.Done()
	}
	fmt.Println("\ndemo: stopping the plane")
	return p.Stop()
}
