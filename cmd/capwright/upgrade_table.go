package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printUpgradePlan writes the plan as tables: one line per provider with
// its newest installable version, then every newer release series with
// what blocks it, then the providers not checked.
func printUpgradePlan(w io.Writer, r upgradePlanReport) error {
	ew := &errWriter{w: w}
	if r.Core != "" {
		ew.printf("Core provider: %s (contract %s)\n\n", r.Core, r.CoreContract)
	}
	if len(r.Providers) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tVERSION\tCONTRACT\tNEXT")
		for _, p := range r.Providers {
			next := p.Next
			switch {
			case p.Error != "":
				next = "(not checked: see below)"
			case next == "" && len(p.Candidates) > 0:
				next = "(blocked: see below)"
			case next == "":
				next = "(up to date)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Kind, p.Namespace, p.Name, p.Version, dash(p.Contract), next)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var rows int
	for _, p := range r.Providers {
		rows += len(p.Candidates)
	}
	if rows > 0 {
		ew.printf("\nNewer versions: %d\n", rows)
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PROVIDER\tVERSION\tSERIES\tCONTRACT\tSTATUS")
		for _, p := range r.Providers {
			for _, c := range p.Candidates {
				status := "available"
				if !c.Usable() {
					status = "blocked: " + c.Blocked
				}
				fmt.Fprintf(tw, "  %s %s/%s\t%s\t%s\t%s\t%s\n", p.Kind, p.Namespace, p.Name, c.Version, c.Series, dash(c.Contract), status)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		first := true
		for _, p := range r.Providers {
			for _, c := range p.Candidates {
				if c.Usable() {
					continue
				}
				if first {
					ew.printf("\nBlocked:\n")
					first = false
				}
				ew.printf("  %s %s/%s %s: %s: %s\n", p.Kind, p.Namespace, p.Name, c.Version, c.Blocked, c.Message)
			}
		}
	}
	first := true
	for _, p := range r.Providers {
		if !p.LatestOnly || p.Error != "" {
			continue
		}
		if first {
			ew.printf("\nFrom a release URL, only the latest release is known:\n")
			first = false
		}
		ew.printf("  %s %s/%s: %s\n", p.Kind, p.Namespace, p.Name, p.Source)
	}
	first = true
	for _, p := range r.Providers {
		if p.Error == "" {
			continue
		}
		if first {
			ew.printf("\nNot checked:\n")
			first = false
		}
		ew.printf("  %s %s/%s: %s\n", p.Kind, p.Namespace, p.Name, p.Error)
	}
	for i, s := range r.Skipped {
		if i == 0 {
			ew.printf("\nSkipped: %d\n", len(r.Skipped))
		}
		ew.printf("  %s %s/%s: %s\n", s.Kind, s.Namespace, s.Name, s.Reason)
	}
	if len(r.Providers) == 0 && len(r.Skipped) == 0 {
		ew.printf("No provider is installed in this cluster.\n")
	}
	return ew.err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
