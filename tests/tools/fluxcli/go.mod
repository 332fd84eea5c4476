// Wrapper module that pins the flux CLI (Flux v2.9.5, the release the
// product targets) and lets the builder fetch its modules ahead of the
// build. The CLI is not built from this module: it is built from a copy of
// the flux2 module source in bin/, as its own main module, once the
// manifests it embeds are generated (see fluxcli.go in the builder). Keep
// the version in step with fluxCLIVersion there.
module github.com/capwright/capwright/tests/tools/fluxcli

go 1.26.0

require github.com/fluxcd/flux2/v2 v2.9.5

// flux2's own replace (CVE-2022-28948), repeated so that this module
// resolves the same versions as the build in the copy, where flux2 is the
// main module and its replace applies.
replace gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.1
