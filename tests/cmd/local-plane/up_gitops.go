package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// bootstrapFleet makes the plane a management cluster synced from its Git
// server, as a user's is: it commits the example repository's flux-system
// customisation (docs/gitops.md) to fleet.git and runs the real `flux
// bootstrap git` for clusters/management, so Flux comes up from what the
// repository says and applies whatever is committed there. The Receiver
// the customisation lists gets a token of its own (Secret receiver-token).
func bootstrapFleet(ctx context.Context, p *plane.Plane) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(upFailure)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	var rep upReporter
	dir := filepath.Join(p.RunDir, "bootstrap")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	w := framework.CloneFleet(rep, ctx, p.Git, dir)
	examples := framework.ExampleRepository(rep, p.RepoRoot())
	for _, name := range []string{"kustomization.yaml", "receiver.yaml", "capwright-notification.yaml"} {
		w.Write(framework.ManagementPath+"/flux-system/"+name, examples[framework.ManagementPath+"/flux-system/"+name])
	}
	w.Write(framework.ManagementPath+"/flux-system/gotk-components.yaml", nil)
	w.Write(framework.ManagementPath+"/flux-system/gotk-sync.yaml", nil)
	w.CommitAndPush(ctx, "Customise Flux for Capwright")

	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	token := hex.EncodeToString(secret)
	kube, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := kube.CoreV1().Secrets("flux-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "receiver-token"},
		StringData: map[string]string{"token": token},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	bin, err := plane.DefaultBinDir()
	if err != nil {
		return err
	}
	fmt.Print(framework.Bootstrap(rep, ctx, p, framework.FluxCLI(rep, bin), dir, framework.ManagementPath))
	return nil
}

// upReporter lets the framework's helpers, written for tests, report to
// local-plane up: Fatalf ends bootstrapFleet with the error.
type upReporter struct{}

// upFailure carries a Fatalf out of the helpers.
type upFailure struct{ err error }

func (upReporter) Helper() {}

func (upReporter) Logf(format string, args ...any) { fmt.Printf("plane: "+format+"\n", args...) }

func (upReporter) Fatalf(format string, args ...any) { panic(upFailure{fmt.Errorf(format, args...)}) }
