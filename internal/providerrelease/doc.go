// Package providerrelease reads a Cluster API provider release the way
// clusterctl does: from the assets of a GitHub release, from a GitLab
// generic package, or from a plain HTTPS location serving the same files
// (an internal mirror such as an artifact repository).
//
// ParseURL understands clusterctl's URL forms and gives each release file's
// exact URL for one version; Fetcher GETs exactly metadata.yaml and the
// components file of that version over net/http, with bounded reads,
// redirects only to allowed hosts, credentials sent only to the URL's own
// host and the sha256 of every file recorded; Release.Check checks the
// files with the same code `capwright publish` runs on local files, so that
// the result can be packed into the provider artifact of internal/artifact.
//
// "latest" is never resolved: the version to fetch is always given.
// Errors are *Error, naming the URL concerned and what fixes it; they never
// carry credentials.
package providerrelease
