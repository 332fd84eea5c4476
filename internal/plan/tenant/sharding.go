package tenant

import (
	"github.com/capwright/capwright/internal/plan"
)

// shardFlux labels the Flux objects among the writes with their shard
// (Facts.Sharding, render.Sharding.LabelTenantObjects): whatever Flux
// object the plan writes for the tenant, a cluster's together on the
// cluster's shard. The rendered objects are the writes' own, so
// Desired.Rendered shows the labels too. A shard that changes is a new
// label value on the same objects: applied, Flux's controllers hand them
// over, and nothing is deleted or created again.
func shardFlux(f Facts, writes []plan.Write) {
	for _, w := range writes {
		f.Sharding.LabelTenantObjects(f.Tenant, w.Object)
	}
}
