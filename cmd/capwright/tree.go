package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusNode is one object of the status tree: a Capwright object, a
// Flux object it wrote, an object Flux applied, or one cluster of a
// Tenant; with what it says of its health.
type statusNode struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Ready is True, False or Unknown; empty when the object's health was
	// not read (Flux applied it on a workload cluster).
	Ready   metav1.ConditionStatus `json:"ready,omitempty"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`

	// Version is a provider's spec.version, a control plane's Kubernetes
	// version or a Helm release's chart version; InstalledVersion a
	// provider's status.installedVersion.
	Version          string `json:"version,omitempty"`
	InstalledVersion string `json:"installedVersion,omitempty"`
	// Revision is the artifact revision (tag@sha256:digest) a source holds
	// or an applier last applied.
	Revision string `json:"revision,omitempty"`
	// Chart is a HelmRelease's chart as last released (name, and the Helm
	// release's number and status in Release).
	Chart   string `json:"chart,omitempty"`
	Release string `json:"release,omitempty"`
	// Phase, Wave and StackRevision describe a Tenant's cluster (and
	// Phase a Tenant's rollout); Clusters a Tenant's ready/total count.
	Phase         string `json:"phase,omitempty"`
	Wave          string `json:"wave,omitempty"`
	StackRevision string `json:"stackRevision,omitempty"`
	Clusters      string `json:"clusters,omitempty"`
	// Note says why something is not shown.
	Note string `json:"note,omitempty"`

	Children []*statusNode `json:"children,omitempty"`
}

// statusReport is what `capwright status` prints.
type statusReport struct {
	// Ready is true when everything shown whose health was read is Ready.
	Ready   bool          `json:"ready"`
	Objects []*statusNode `json:"objects"`
}

// ref is Kind/namespace/name, or Kind/name for a cluster-scoped object,
// as `flux tree` names objects.
func (n *statusNode) ref() string {
	if n.Namespace == "" {
		return n.Kind + "/" + n.Name
	}
	return n.Kind + "/" + n.Namespace + "/" + n.Name
}

// notReady lists the objects under (and including) n whose health was read
// and is not Ready, depth first.
func (n *statusNode) notReady() []*statusNode {
	var out []*statusNode
	if n.Ready != "" && n.Ready != metav1.ConditionTrue {
		out = append(out, n)
	}
	for _, c := range n.Children {
		out = append(out, c.notReady()...)
	}
	return out
}

func newStatusReport(objects []*statusNode) *statusReport {
	r := &statusReport{Ready: true, Objects: objects}
	if r.Objects == nil {
		r.Objects = []*statusNode{}
	}
	for _, o := range objects {
		if len(o.notReady()) > 0 {
			r.Ready = false
		}
	}
	return r
}

// notReady lists everything shown that is not Ready.
func (r *statusReport) notReady() []*statusNode {
	var out []*statusNode
	for _, o := range r.Objects {
		out = append(out, o.notReady()...)
	}
	return out
}

// printStatusTree writes the report as a tree with READY, REASON and
// DETAILS columns, as `clusterctl describe cluster` does.
func printStatusTree(w io.Writer, r *statusReport) error {
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

func printNode(w io.Writer, n *statusNode, prefix, childPrefix string) {
	ready := string(n.Ready)
	if ready == "" {
		ready = "-"
	}
	fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\n", prefix, n.ref(), ready, oneLine(n.Reason), oneLine(n.details()))
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
func (n *statusNode) details() string {
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
