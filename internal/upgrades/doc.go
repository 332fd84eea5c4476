// Package upgrades tells, for the providers installed in a management
// cluster, which newer versions their sources offer and which of them can
// be installed: the knowledge behind `capwright upgrade plan` and the
// manager's UpgradeAvailable condition, in one place so that both say the
// same.
//
// Plan is pure: it takes each provider's installed version, the versions
// its source offers and the metadata.yaml of the newest of them, and
// applies clusterctl's `upgrade plan` rules (Cluster API v1.14.2,
// cmd/clusterctl/client/cluster/upgrader.go and upgrader_info.go):
//
//   - the metadata.yaml of the newest version offered maps every version's
//     major.minor to a release series and its contract (clusterctl reads
//     only that one file, not one per version);
//   - versions newer than the installed one count; pre-releases do not;
//   - the core provider drives the plan: a provider's version is usable
//     when its contract is one the core's contract works with (equal, or
//     v1beta1 under a v1beta2 core), or one a newer core version's
//     contract works with — then the core has to move first;
//   - a core version with another contract is usable only when every other
//     provider can follow it (all providers change contract together).
//
// Lister reads what Plan needs from registries (tags, and the newest tag's
// metadata.yaml, cached by digest) and release hosts, with a bounded number
// of requests per provider.
package upgrades
