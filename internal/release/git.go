package release

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// commit is what a release records of the source: the commit and its
// time, which stands in for every timestamp so builds are reproducible.
type commit struct {
	hash string
	time time.Time
}

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// headCommit is HEAD's hash and committer time.
func headCommit(ctx context.Context, dir string) (commit, error) {
	out, err := git(ctx, dir, "log", "-1", "--format=%H %ct")
	if err != nil {
		return commit{}, fmt.Errorf("reading the commit to release (the repository needs at least one commit): %w", err)
	}
	hash, secs, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	unix, err := strconv.ParseInt(secs, 10, 64)
	if !ok || err != nil {
		return commit{}, fmt.Errorf("unexpected git log output in %s: %q", dir, out)
	}
	return commit{hash: hash, time: time.Unix(unix, 0).UTC()}, nil
}

// dirtyFiles lists what git status --porcelain reports: modified, staged
// and untracked files (ignored ones, such as bin/, are not), except under
// the exclude paths (the release's own output).
func dirtyFiles(ctx context.Context, dir string, exclude ...string) ([]string, error) {
	args := []string{"status", "--porcelain", "--", "."}
	for _, p := range exclude {
		if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
			args = append(args, ":(exclude)"+filepath.ToSlash(rel))
		}
	}
	out, err := git(ctx, dir, args...)
	if err != nil {
		return nil, err
	}
	var files []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if len(line) > 3 {
			files = append(files, line[3:])
		}
	}
	return files, nil
}

// checkClean refuses a working tree with uncommitted changes: the
// artifacts would not be what the commit they name holds.
func checkClean(ctx context.Context, dir string, exclude ...string) error {
	files, err := dirtyFiles(ctx, dir, exclude...)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return nil
	}
	const shown = 10
	list := files
	more := ""
	if len(files) > shown {
		list, more = files[:shown], fmt.Sprintf(" and %d more", len(files)-shown)
	}
	return fmt.Errorf("refusing to release from %s: the working tree has uncommitted changes (%s%s); commit or stash them, or pass ALLOW_DIRTY=1 to release anyway",
		dir, strings.Join(list, ", "), more)
}
