package plane

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// NotificationCRDDir holds notification-controller's CRDs (Alert,
// Provider, Receiver) as `make tools` copies them from the module. The
// plane does not install them: a suite applies them the way a user's Flux
// does, e.g. built with the kustomize patch that lets Alerts name
// Capwright's kinds.
func (p *Plane) NotificationCRDDir() string {
	return filepath.Join(p.opts.BinDir, "assets", "crds", "notification")
}

// NotificationServiceAccount is the ServiceAccount notification-controller
// runs as on the plane, named and namespaced as `flux install` does.
const NotificationServiceAccount = "notification-controller"

// fluxControllerRBAC is what `flux install` grants notification-controller
// (and source-controller): the ClusterRole crd-controller-<namespace>,
// bound to its ServiceAccount. Running it with exactly this shows which
// extra permissions Capwright's Alerts need.
const fluxControllerRBAC = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: notification-controller
  namespace: flux-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: crd-controller-flux-system
rules:
- apiGroups: [source.toolkit.fluxcd.io, kustomize.toolkit.fluxcd.io, helm.toolkit.fluxcd.io, notification.toolkit.fluxcd.io, image.toolkit.fluxcd.io]
  resources: ['*']
  verbs: ['*']
- apiGroups: ['']
  resources: [namespaces, secrets, configmaps, serviceaccounts]
  verbs: [get, list, watch]
- apiGroups: ['']
  resources: [events]
  verbs: [create, patch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: ['*']
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: crd-controller-flux-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: crd-controller-flux-system
subjects:
- kind: ServiceAccount
  name: notification-controller
  namespace: flux-system
`

// NotificationController is Flux's notification-controller running on
// the plane.
type NotificationController struct {
	*Process
	// EventsURL is its event receiver, what a controller's --events-addr
	// names.
	EventsURL string
}

// StartNotificationController runs Flux's notification-controller (the
// same Flux line as the plane's other controllers, built by `make tools`)
// against the plane as an opt-in component: only the suites that forward
// events start it. It runs as its ServiceAccount with the role `flux
// install` gives it and nothing more. Its CRDs must be installed first
// (NotificationCRDDir).
func (p *Plane) StartNotificationController(ctx context.Context) (*NotificationController, error) {
	if _, err := p.applyYAML(ctx, strings.NewReader(fluxControllerRBAC)); err != nil {
		return nil, fmt.Errorf("granting notification-controller Flux's role: %w", err)
	}
	kubeconfig, err := p.ServiceAccountKubeconfig(ctx, FluxNamespace, NotificationServiceAccount)
	if err != nil {
		return nil, err
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	metrics, health, events, receiver := ports[0], ports[1], ports[2], ports[3]
	proc, err := p.StartProcess(ctx, ProcessOptions{
		Name:   "notification-controller",
		Binary: filepath.Join(p.opts.BinDir, "notification-controller"),
		Args: []string{
			"--watch-all-namespaces=true",
			"--enable-leader-election=false",
			"--log-level=debug",
			"--log-encoding=json",
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(metrics),
			"--health-addr=127.0.0.1:" + strconv.Itoa(health),
			"--events-addr=127.0.0.1:" + strconv.Itoa(events),
			"--receiverAddr=127.0.0.1:" + strconv.Itoa(receiver),
		},
		// Like the other Flux controllers, it has no --kubeconfig flag.
		Env:      []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + FluxNamespace},
		ReadyURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", health),
	})
	if err != nil {
		return nil, fmt.Errorf("starting notification-controller (built by make tools into %s): %w", p.opts.BinDir, err)
	}
	p.logf("notification-controller running as ServiceAccount %s/%s (log %s)", FluxNamespace, NotificationServiceAccount, proc.LogPath())
	return &NotificationController{Process: proc, EventsURL: fmt.Sprintf("http://127.0.0.1:%d/", events)}, nil
}
