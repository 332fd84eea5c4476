package resolve

import (
	"context"
	"fmt"

	"github.com/capwright/capwright/internal/upgrades"
)

// Versions lists what the provider's source offers, for the upgrade
// check: the tags of its OCI repository, with the provider's registry
// access, or the latest release of its release URL, with its release
// settings (mirror rules, credentials); source names what was asked. It
// is bounded by the registry timeout.
func (res Result) Versions(ctx context.Context, lister *upgrades.Lister, where upgrades.Where) (l upgrades.Listing, source string, err error) {
	r, q := res.resolver, &res.query
	if r == nil {
		return upgrades.Listing{}, "", fmt.Errorf("the provider was not resolved")
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	if where.Release != "" {
		f, err := r.releaseFetcher(ctx, q)
		if err != nil {
			return upgrades.Listing{}, where.Release, err
		}
		l, err := lister.Release(ctx, where.Release, f)
		return l, where.Release, err
	}
	access, err := r.access(ctx, q, where.OCI)
	if err != nil {
		return upgrades.Listing{}, where.OCI, err
	}
	l, err = lister.OCI(ctx, where.OCI, access)
	return l, where.OCI, err
}
