// Package render turns a provider custom resource, plus the facts preflight
// established about its artifact, into the Flux objects that install it:
// an OCIRepository pinned to the checked digest, and either a Kustomization
// (provider-artifact layout: one components file) or a HelmRelease (an OCI
// Helm chart).
//
// It is pure — values in, values out, no client — so that the controller,
// an offline `capwright build` and unit tests produce byte-identical
// objects. Anything that needs the cluster or the artifact (the components'
// manager args, clusterctl's namespace fixes, mirror image rewrites, the
// core provider's Kustomization) is an Input field the caller fills.
//
// Rendered objects never alias the provider: every slice, map and pointer
// taken from its spec is copied, so a caller may mutate one without the
// other changing.
package render
