// Package dryrun asks the API server, before Capwright upgrades a
// provider, whether it would accept every object Flux is about to apply
// for the new version, so that a refusal (by the API server's validation,
// RBAC or a webhook) stops the upgrade while nothing has changed.
//
// Build does in process what kustomize-controller does with the new
// version's files, with Flux's own libraries (pkg/kustomize: generator,
// secure build, post-build substitution), and the labels and annotations
// it sets at apply time. Runner server-side applies the result with
// dryRun=All, as kustomize-controller's field manager, and as
// DryRunUser, an identity bound to the same role Flux
// installs providers with (capwright-provider-installer), which an
// admission policy allows dry runs only: the manager may ask "would this
// be accepted?", never write what the installer may.
//
// Nothing either returns holds the value of a Secret: the values the
// substitution read, and those of Secrets among the objects, are masked
// as *** in every message.
package dryrun
