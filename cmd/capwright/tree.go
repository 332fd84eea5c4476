package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/internal/status"
)

// printStatusTree writes the report as a tree with READY, REASON and
// DETAILS columns, as `clusterctl describe cluster` does.
func printStatusTree(w io.Writer, r *status.Report) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREADY\tREASON\tDETAILS")
	for _, o := range r.Objects {
		printNode(tw, o, "", "")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// tabwriter pads the last column too.
	for line := range strings.Lines(buf.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	return nil
}

func printNode(w io.Writer, n *status.Node, prefix, childPrefix string) {
	ready := string(n.Ready)
	if ready == "" {
		ready = "-"
	}
	fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\n", prefix, n.Ref(), ready, oneLine(n.Reason), oneLine(details(n)))
	for i, c := range n.Children {
		branch, next := "├── ", "│   "
		if i == len(n.Children)-1 {
			branch, next = "└── ", "    "
		}
		printNode(w, c, childPrefix+branch, childPrefix+next)
	}
}

// details is the DETAILS column: versions and revisions, then the message
// when the object is not Ready (a Ready object's message repeats what the
// other columns say).
func details(n *status.Node) string {
	var parts []string
	add := func(format string, v string) {
		if v != "" {
			parts = append(parts, fmt.Sprintf(format, shortDigests(v)))
		}
	}
	add("version %s", n.Version)
	if n.InstalledVersion != n.Version {
		add("installed %s", n.InstalledVersion)
	}
	add("chart %s", n.Chart)
	add("release %s", n.Release)
	add("clusters %s", n.Clusters)
	add("phase %s", n.Phase)
	add("wave %s", n.Wave)
	add("stack revision %s", n.StackRevision)
	add("revision %s", n.Revision)
	out := strings.Join(parts, ", ")
	if n.Ready != metav1.ConditionTrue && n.Message != "" {
		if out != "" {
			out += ": "
		}
		out += n.Message
	}
	if n.Note != "" {
		if out != "" {
			out += "; "
		}
		out += n.Note
	}
	return out
}

var longDigest = regexp.MustCompile(`sha256:([0-9a-f]{12})[0-9a-f]{52}`)

// shortDigests cuts sha256 digests to 12 hex digits for the tree; -o
// yaml and json keep them whole.
func shortDigests(s string) string { return longDigest.ReplaceAllString(s, "sha256:$1") }

// oneLine keeps a message on its row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
