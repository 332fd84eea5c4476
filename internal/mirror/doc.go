// Package mirror copies Cluster API provider artifacts, and the Flux
// artifact and Helm chart of Capwright's own release, with the container
// images they run and the referrers (signatures, SBOMs) of both, from their
// registries or from an OCI image layout bundle (RunLayout) into one target
// registry, for air-gapped sites: `capwright mirror`. Provider releases
// fetched from where their projects publish them (RunWithReleases) are
// pushed as provider artifacts the same way.
//
// A source repository host/path lands at TARGET/PREFIX/path, digests
// unchanged, so the rules "host=TARGET/PREFIX" (Rules, WriteRules) send the
// controller and the Kustomization images to the copies. Copies are
// resumable and never look complete before they are: content the target
// already holds is skipped after a HEAD, children go before parents, and a
// tag is written only once everything below it is in place, an artifact's
// tag only after its images and referrers.
package mirror
