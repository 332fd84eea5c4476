package artifact

import (
	"context"
	"errors"
)

// Tag listing bounds: a provider repository holds one tag per release
// (and a few signature tags), a few hundred over a project's life.
const (
	// TagPageSize is the page size asked of the registry.
	TagPageSize = 1000
	// MaxTagPages bounds the pages read, so MaxTagPages × TagPageSize
	// tags at most.
	MaxTagPages = 5
)

// errEnoughTags stops a listing that reached its bound.
var errEnoughTags = errors.New("enough tags")

// Tags lists the tags of ref's repository: one request per page of
// TagPageSize, at most MaxTagPages pages; a repository with more tags is
// listed in part (the registry's order, lexical for most) and truncated
// tells so. Errors are those of Fetch (*AuthError, *NotFoundError, or
// wrapped transport errors).
func (f *Fetcher) Tags(ctx context.Context, ref Reference, access Access) (tags []string, truncated bool, err error) {
	repo, release, err := access.Repository(ref, f.limit())
	if err != nil {
		return nil, false, err
	}
	defer release()
	repo.TagListPageSize = TagPageSize
	pages := 0
	err = repo.Tags(ctx, "", func(page []string) error {
		tags = append(tags, page...)
		if pages++; pages >= MaxTagPages {
			return errEnoughTags
		}
		return nil
	})
	switch {
	case errors.Is(err, errEnoughTags):
		return tags, true, nil
	case err != nil:
		return nil, false, registryError(Reference{Host: ref.Host, Repository: ref.Repository}, "listing the tags of", err)
	}
	return tags, false, nil
}
