// Package clusterctl holds the semantics of clusterctl that Capwright keeps
// when it installs providers through Flux instead of clusterctl: provider
// types and labels, metadata.yaml release series and contracts, upgrade
// rules, variables, images, the inventory of a components file (namespace,
// CRDs) and the fixes clusterctl makes when it moves components into another
// namespace.
//
// Everything here is a pure function of its arguments, so the controller,
// the CLI (offline `capwright build`) and tests share the same answers.
package clusterctl
