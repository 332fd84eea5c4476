package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestRelativeLinksResolve: every relative link of README.md and
// docs/**/*.md names a file or directory that exists, and every #anchor
// (on the same page or another Markdown page) names a heading of that
// page, spelled as GitHub spells heading anchors. Links inside code
// blocks and code spans are not links; http(s) and mailto links are not
// checked (no network in tests).
func TestRelativeLinksResolve(t *testing.T) {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		if err != nil {
			return nil, err
		}
		anchors[page] = headingAnchors(string(data))
		return anchors[page], nil
	}
	links := 0
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(data)) {
			if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(l.target) {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(l.target, "#")
			target := page
			if path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), filepath.FromSlash(path))))
				info, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(target)))
				if err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", page, l.line, l.target, target)
					continue
				}
				if info.IsDir() {
					if anchor != "" {
						t.Errorf("%s:%d: link %q: an anchor into a directory", page, l.line, l.target)
					}
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				continue // a line anchor into a source file, as GitHub renders it
			}
			a, err := anchorsOf(target)
			if err != nil {
				t.Fatal(err)
			}
			if !a[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, l.line, l.target, target, anchor)
			}
		}
	}
	if links < 100 {
		t.Fatalf("found only %d relative links in %d pages: the link reader no longer finds them", links, len(pages))
	}
}

type markdownLink struct {
	target string
	line   int
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*(\S+)`)
)

// markdownLinks lists the inline and reference-style link targets of a
// page outside code blocks and code spans.
func markdownLinks(md string) []markdownLink {
	var out []markdownLink
	for i, line := range proseLines(md) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, markdownLink{target: m[1], line: i + 1})
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			out = append(out, markdownLink{target: m[1], line: i + 1})
		}
	}
	return out
}

// proseLines are a page's lines with those of fenced code blocks (and the
// fences) blanked, so line numbers stay the page's.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	inFence := false
	for i, line := range lines {
		if fence.MatchString(line) {
			inFence = !inFence
			lines[i] = ""
		} else if inFence {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation but hyphens and underscores dropped, spaces as
// hyphens, a repeated anchor suffixed -1, -2, ….
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	heading := regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	for _, line := range proseLines(md) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		anchor := headingAnchor(m[1])
		if n := seen[anchor]; n > 0 {
			out[fmt.Sprintf("%s-%d", anchor, n)] = true
		} else {
			out[anchor] = true
		}
		seen[anchor]++
	}
	return out
}

func headingAnchor(text string) string {
	// Links in a heading count by their text.
	text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
