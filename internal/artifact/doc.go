// Package artifact reads and writes Cluster API provider artifacts in OCI
// registries with oras-go: one image manifest with a single tar+gzip layer
// holding metadata.yaml and <type>-components.yaml at its root (see "The
// provider artifact contract" in the architecture document). The controller
// uses it for preflight, the CLI for publish, inspect and mirror.
//
// Every read is bounded, every blob is verified against its digest, the only
// thing written to disk is an OCI layout the CLI is asked for (publish
// --output), and credentials never appear in errors.
package artifact
