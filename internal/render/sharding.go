package render

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// ShardLabel is Flux's sharding label: a Flux controller started with
// --watch-label-selector=sharding.fluxcd.io/key=shard1 reconciles only
// the objects labelled shard1, and the main controllers, started with
// --watch-label-selector=!sharding.fluxcd.io/key, only those without
// the label (Flux's sharding guide,
// https://fluxcd.io/flux/installation/configuration/sharding/).
const ShardLabel = "sharding.fluxcd.io/key"

// MaxShards bounds --flux-sharding: every shard is a set of Flux
// controller Deployments.
const MaxShards = 100

// Sharding is how the Flux objects Capwright writes for Tenants carry
// ShardLabel (--flux-sharding). The zero value is off: no label, as
// before sharding existed.
type Sharding struct {
	// Shards spreads every Tenant's objects over shard1..shardN by a
	// stable hash of the tenant and the cluster (or, for an object shared
	// by a namespace's clusters, the namespace); 0 spreads nothing.
	Shards int
	// TenantLabel puts every Flux object of a Tenant carrying ShardLabel
	// on the shard it names, whatever the hash says.
	TenantLabel bool
}

// The values of --flux-sharding besides a number of shards.
const (
	ShardingOff         = "off"
	ShardingTenantLabel = "tenant-label"
)

// ParseSharding reads --flux-sharding: "off" (or empty), "tenant-label"
// (only Tenants carrying ShardLabel are sharded, on the shard they
// name), or N (1 to MaxShards: every Tenant's objects spread over
// shard1..shardN, a Tenant's own label overriding the hash).
func ParseSharding(s string) (Sharding, error) {
	switch s = strings.TrimSpace(s); s {
	case "", ShardingOff:
		return Sharding{}, nil
	case ShardingTenantLabel:
		return Sharding{TenantLabel: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxShards {
		return Sharding{}, fmt.Errorf("%q is not a sharding: write %s, %s (only Tenants labelled %s=<shard> are sharded) or a number of shards from 1 to %d (their objects labelled shard1 to shardN)",
			s, ShardingOff, ShardingTenantLabel, ShardLabel, MaxShards)
	}
	return Sharding{Shards: n, TenantLabel: true}, nil
}

// String is the --flux-sharding value s reads from.
func (s Sharding) String() string {
	switch {
	case s.Shards > 0:
		return strconv.Itoa(s.Shards)
	case s.TenantLabel:
		return ShardingTenantLabel
	}
	return ShardingOff
}

// ShardName is the value of ShardLabel for the i-th shard (from 1), as
// Flux's sharding guide names its shards.
func ShardName(i int) string { return "shard" + strconv.Itoa(i) }

// TenantShard is the shard of a Tenant's Flux objects placed by key
// (TenantShardKey): the Tenant's own ShardLabel when TenantLabel is set
// and the label has a value, else the hash's shard, else "" (not
// sharded).
func (s Sharding) TenantShard(t *tenancyv1alpha1.Tenant, key string) string {
	if s.TenantLabel {
		if v := t.Labels[ShardLabel]; v != "" {
			return v
		}
	}
	if s.Shards > 0 {
		return ShardName(jumpHash(keyHash(key), s.Shards) + 1)
	}
	return ""
}

// TenantShardKey is what places one of a tenant's objects on a shard:
// the tenant and the Cluster, for the objects of one cluster (labelled
// with it, see tenantClusterMeta), so that they stay together; else the
// tenant and the object's namespace, for what a namespace's clusters
// share (the source, the target namespace's ExternalArtifact).
func TenantShardKey(tenant string, o Object) string {
	l := o.GetLabels()
	if ns, name := l[tenancyv1alpha1.ClusterNamespaceLabel], l[tenancyv1alpha1.ClusterNameLabel]; ns != "" && name != "" {
		return tenant + "/" + ns + "/" + name
	}
	return tenant + "/" + o.GetNamespace()
}

// LabelTenantObjects sets ShardLabel on the Flux objects (the kinds of
// the *.toolkit.fluxcd.io groups) among objs, rendered for t, and leaves
// the others alone. Nothing is labelled when t has no shard: applied
// without the label, Capwright's own label comes off an object that had
// it. A new shard is only a new label value: Flux's controllers hand the
// object over (the old shard stops watching it, the new one starts), and
// nothing is deleted or created again.
func (s Sharding) LabelTenantObjects(t *tenancyv1alpha1.Tenant, objs ...Object) {
	if s == (Sharding{}) {
		return
	}
	for _, o := range objs {
		if !strings.HasSuffix(o.GetObjectKind().GroupVersionKind().Group, ".toolkit.fluxcd.io") {
			continue
		}
		shard := s.TenantShard(t, TenantShardKey(t.Name, o))
		if shard == "" {
			continue
		}
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ShardLabel] = shard
		o.SetLabels(labels)
	}
}

// keyHash is the first 8 bytes of key's SHA-256: stable across
// processes and releases, unlike Go's map hash, and well mixed for keys
// that differ in a digit (FNV-1a spread those unevenly over 16 shards).
func keyHash(key string) uint64 {
	sum := sha256.Sum256([]byte(key))
	return binary.BigEndian.Uint64(sum[:8])
}

// jumpHash is Lamping and Veach's jump consistent hash of key over n
// buckets (0..n-1): spread evenly, and when n grows by one, only the
// keys the new bucket takes (about 1/n) move, so adding a shard
// relabels a share of the objects instead of nearly all of them.
func jumpHash(key uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}
