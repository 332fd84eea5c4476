package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/capwright/capwright/internal/artifact"
)

// printInspectTable writes the report for humans: a header, then one
// aligned table per section.
func printInspectTable(out io.Writer, r *artifact.ArtifactReport) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p := r.Provider
	fmt.Fprintf(w, "Artifact:\t%s\n", r.Artifact)
	fmt.Fprintf(w, "Digest:\t%s\n", r.Digest)
	fmt.Fprintf(w, "Provider:\t%s\n", strings.Join(nonEmpty(p.Type, p.Name, p.Version), " "))
	if r.Contract != "" {
		fmt.Fprintf(w, "Contract:\t%s\n", r.Contract)
	}
	if p.Source != "" {
		fmt.Fprintf(w, "Source:\t%s\n", p.Source)
	}

	section(w, fmt.Sprintf("Annotations: %d", len(r.Annotations)), len(r.Annotations), "KEY\tVALUE")
	for _, key := range slices.Sorted(maps.Keys(r.Annotations)) {
		fmt.Fprintf(w, "  %s\t%s\n", key, r.Annotations[key])
	}

	section(w, fmt.Sprintf("Files: %d", len(r.Files)), len(r.Files), "NAME\tSIZE")
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %s\t%s\n", f.Name, humanSize(f.Size))
	}

	section(w, fmt.Sprintf("Release series: %d", len(r.ReleaseSeries)), len(r.ReleaseSeries), "SERIES\tCONTRACT\t")
	for _, s := range r.ReleaseSeries {
		mark := ""
		if s.Current {
			mark = "<- " + p.Version
		}
		fmt.Fprintf(w, "  v%d.%d\t%s\t%s\n", s.Major, s.Minor, s.Contract, mark)
	}

	required := 0
	for _, v := range r.Variables {
		if v.Required {
			required++
		}
	}
	section(w, fmt.Sprintf("Variables: %d (%d required)", len(r.Variables), required), len(r.Variables), "NAME\tREQUIRED\tDEFAULT")
	for _, v := range r.Variables {
		if v.Required {
			fmt.Fprintf(w, "  %s\tyes\t\n", v.Name)
		} else {
			fmt.Fprintf(w, "  %s\tno\t%s\n", v.Name, shortDefault(v.Default))
		}
	}

	section(w, fmt.Sprintf("Images: %d", len(r.Images)), len(r.Images), "")
	for _, image := range r.Images {
		fmt.Fprintf(w, "  %s\n", image)
	}

	section(w, fmt.Sprintf("CRDs: %d", len(r.CRDs)), len(r.CRDs), "NAME\tKIND\tVERSIONS\tCONTRACTS")
	for _, crd := range r.CRDs {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", crd.Name, crd.Kind, strings.Join(crd.Versions, ","), crdContracts(crd))
	}
	return w.Flush()
}

// section starts a section with its heading, and the column names when
// there is something to list.
func section(w io.Writer, heading string, count int, columns string) {
	fmt.Fprintf(w, "\n%s\n", heading)
	if count > 0 && columns != "" {
		fmt.Fprintf(w, "  %s\n", columns)
	}
}

// crdContracts is e.g. "v1beta1 (v1beta1), v1beta2 (v1beta2)": each
// contract with the API versions implementing it, or "-" for none.
func crdContracts(crd artifact.ReportCRD) string {
	if len(crd.Contracts) == 0 {
		return "-"
	}
	var parts []string
	for _, contract := range slices.Sorted(maps.Keys(crd.Contracts)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", contract, strings.Join(crd.Contracts[contract], ",")))
	}
	return strings.Join(parts, ", ")
}

// shortDefault shows a default on one line: quoted when empty or holding
// blanks, cut when long.
func shortDefault(s string) string {
	const limit = 60
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return strconv.Quote(s)
	}
	return s
}

func nonEmpty(values ...string) []string {
	return slices.DeleteFunc(values, func(s string) bool { return s == "" })
}

// humanSize is a byte count in B, KiB, MiB or GiB.
func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
