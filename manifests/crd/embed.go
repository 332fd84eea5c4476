// Package crd holds Capwright's CustomResourceDefinitions as `make
// manifests` generates them (bases/), for what checks objects against
// them without an API server: `capwright build` admits each custom
// resource as the API server would.
package crd

import "embed"

// Bases are the CustomResourceDefinitions, one per file:
// bases/<group>_<plural>.yaml.
//
//go:embed bases/*_*.yaml
var Bases embed.FS
