package mirror

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/capwright/capwright/internal/catalog"
)

// Rules returns the registry mirror rules that send everything the run
// mirrored to where it went: HOST=TARGET[/PREFIX] for each source registry
// host (artifacts and images keep their paths), plus an exact rule for each
// name the host rules would miss (Docker Hub short names such as nginx,
// whose copy is at TARGET/library/nginx), plus TYPE/NAME=REPOSITORY for
// each provider release whose artifact stands for no OCI repository of
// the catalog (catalog.MirrorRule). Failed references are left out.
// The controller reads these rules with --registry-mirror-file (see
// WriteRules) and rewrites artifact URLs and container images with them,
// and installs a provider without spec.source from its rule's repository.
func (s *Summary) Rules() catalog.Mirrors {
	type pair struct{ from, to string }
	var pairs []pair
	var providers catalog.Mirrors
	for _, r := range s.Results {
		if r.Err != nil {
			continue
		}
		to := r.Target.Host + "/" + r.Target.Repository
		if r.Provider != "" && r.Source.Host == "" {
			providers = append(providers, catalog.MirrorRule{From: r.Provider, To: to})
		} else {
			pairs = append(pairs, pair{r.Source.Host + "/" + r.Source.Repository, to})
		}
		for _, img := range r.Images {
			pairs = append(pairs, pair{img.Name, img.Target.Host + "/" + img.Target.Repository})
		}
	}
	var hosts []string
	for _, p := range pairs {
		if first, _, ok := strings.Cut(p.from, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") && !slices.Contains(hosts, first) {
			hosts = append(hosts, first)
		}
	}
	var rules catalog.Mirrors
	for _, h := range hosts {
		rules = append(rules, catalog.MirrorRule{From: h, To: s.Target.String()})
	}
	for _, p := range pairs {
		if got, ok := rules.Rewrite(p.from); !ok || got != p.to {
			rules = append(rules, catalog.MirrorRule{From: p.from, To: p.to})
		}
	}
	rules = append(rules, providers...)
	slices.SortFunc(rules, func(a, b catalog.MirrorRule) int { return strings.Compare(a.From, b.From) })
	return slices.Compact(rules)
}

// WriteRules writes the rules of a run in the format of the controller's
// --registry-mirror-file (catalog.ReadMirrorFile): one FROM=TO per line,
// after a comment header saying when and what was mirrored.
func WriteRules(w io.Writer, s *Summary, now time.Time) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Registry mirror rules written by `capwright mirror` on %s.\n", now.UTC().Format(time.RFC3339))
	fmt.Fprintf(bw, "# Target: %s\n", s.Target)
	fmt.Fprintf(bw, "# Mirrored:\n")
	for _, r := range s.Results {
		if r.Err != nil {
			continue
		}
		note := fmt.Sprintf("%d image(s)", len(r.Images))
		if r.Repacked {
			note += fmt.Sprintf(", repacked: %s became %s", r.SourceDigest, r.Digest)
		}
		if r.Release != "" {
			note += ", from the release " + r.Release
		}
		fmt.Fprintf(bw, "#   %s -> oci://%s (%s)\n", r.Name(), r.Target, note)
	}
	if failed := s.Failed(); len(failed) > 0 {
		fmt.Fprintf(bw, "# Not mirrored (failed):\n")
		for _, r := range failed {
			fmt.Fprintf(bw, "#   %s\n", r.Name())
		}
	}
	fmt.Fprintf(bw, "# Give this file to the Capwright controller as --registry-mirror-file: the\n")
	fmt.Fprintf(bw, "# longest matching FROM rewrites artifact URLs and container images to TO; a\n")
	fmt.Fprintf(bw, "# FROM of TYPE/NAME sends that provider, without spec.source, to TO:spec.version.\n")
	for _, rule := range s.Rules() {
		fmt.Fprintf(bw, "%s=%s\n", rule.From, rule.To)
	}
	return bw.Flush()
}
