package plane

import (
	"context"
	"fmt"
	"strings"
)

// fluxUserRoles are the ClusterRoles `flux install` adds for people and
// tenants (flux2's manifests/rbac/edit.yaml and view.yaml, suffixed with
// the namespace as the install names them), aggregated into Kubernetes'
// user-facing roles: flux-edit into admin and edit (write every Flux
// kind), flux-view into admin, edit and view (read them). A tenant bound to admin in its namespace may
// therefore create Kustomizations and HelmReleases there.
const fluxUserRoles = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: flux-edit-flux-system
  labels:
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
rules:
- apiGroups: [notification.toolkit.fluxcd.io, source.toolkit.fluxcd.io, source.extensions.fluxcd.io, helm.toolkit.fluxcd.io, image.toolkit.fluxcd.io, kustomize.toolkit.fluxcd.io]
  resources: ['*']
  verbs: [create, delete, deletecollection, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: flux-view-flux-system
  labels:
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: [notification.toolkit.fluxcd.io, source.toolkit.fluxcd.io, source.extensions.fluxcd.io, helm.toolkit.fluxcd.io, image.toolkit.fluxcd.io, kustomize.toolkit.fluxcd.io]
  resources: ['*']
  verbs: [get, list, watch]
`

// FluxLockdownArgs are the flags of Flux's multi-tenancy lockdown, per
// controller, for Options.ExtraArgs: Kustomizations and HelmReleases
// without spec.serviceAccountName impersonate the ServiceAccount
// "default" of their namespace, may not reference objects in other
// namespaces, and kustomizations may not pull remote bases.
func FluxLockdownArgs() map[string][]string {
	return map[string][]string{
		"kustomize-controller": {"--no-cross-namespace-refs=true", "--default-service-account=default", "--no-remote-bases=true"},
		"helm-controller":      {"--no-cross-namespace-refs=true", "--default-service-account=default"},
	}
}

// InstallFluxUserRoles applies the ClusterRoles `flux install` aggregates
// into admin, edit and view (fluxUserRoles).
func (p *Plane) InstallFluxUserRoles(ctx context.Context) error {
	if _, err := p.applyYAML(ctx, strings.NewReader(fluxUserRoles)); err != nil {
		return fmt.Errorf("installing Flux's user roles: %w", err)
	}
	return nil
}
