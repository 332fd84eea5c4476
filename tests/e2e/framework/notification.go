package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/capwright/capwright/tests/plane"
)

// FluxSystemExample is the flux-system folder of the example repository:
// the kustomization.yaml `flux bootstrap` writes, with the patch that lets
// Alerts name Capwright's kinds and the read access notification-controller
// needs for them (docs/alerts.md).
const FluxSystemExample = "docs/examples/repository/clusters/management/flux-system"

// fluxSyncStandIn stands in for the gotk-sync.yaml of `flux bootstrap`
// (the GitRepository and Kustomization that sync the cluster's repository,
// which the plane has none of): the namespace they live in.
const fluxSyncStandIn = `apiVersion: v1
kind: Namespace
metadata:
  name: flux-system
`

// StartNotification installs notification-controller's CRDs the way a
// user's Flux does, by building FluxSystemExample with kustomize over the
// CRDs (in place of gotk-components.yaml), applies the result and starts
// notification-controller. A suite calls it before starting the Capwright
// manager, whose --events-addr is the returned controller's EventsURL.
func StartNotification(ctx context.Context, p *plane.Plane) (*plane.NotificationController, error) {
	crds, err := filepath.Glob(filepath.Join(p.NotificationCRDDir(), "*.yaml"))
	if err != nil || len(crds) == 0 {
		return nil, fmt.Errorf("no notification-controller CRDs in %s (built by make tools): %v", p.NotificationCRDDir(), err)
	}
	var components bytes.Buffer
	for _, f := range crds {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		components.WriteString("---\n")
		components.Write(data)
	}
	fs := filesys.MakeFsInMemory()
	files := map[string][]byte{
		"gotk-components.yaml": components.Bytes(),
		"gotk-sync.yaml":       []byte(fluxSyncStandIn),
	}
	for _, name := range []string{"kustomization.yaml", "receiver.yaml", "capwright-notification.yaml"} {
		if files[name], err = os.ReadFile(filepath.Join(p.RepoRoot(), FluxSystemExample, name)); err != nil {
			return nil, err
		}
	}
	for name, data := range files {
		if err := fs.WriteFile(filepath.Join("/flux-system", name), data); err != nil {
			return nil, err
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/flux-system")
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %s: %w", FluxSystemExample, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, err
	}
	objs, err := plane.DecodeYAML(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	// The Receiver is for a Git host's pushes, which these suites have
	// none of (the gitops suite has), and its kind is not served until the
	// CRDs applied here are established.
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Receiver" })
	if err := p.ApplyCRDs(ctx, objs); err != nil {
		return nil, fmt.Errorf("applying %s: %w", FluxSystemExample, err)
	}
	return p.StartNotificationController(ctx)
}
