package status

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Node is one object of the status tree: a Capwright object, a Flux
// object it wrote, an object Flux applied, or one cluster of a Tenant;
// with what it says of its health.
type Node struct {
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

	Children []*Node `json:"children,omitempty"`
}

// Report is the tree of what was selected.
type Report struct {
	// Ready is true when everything shown whose health was read is Ready.
	Ready   bool    `json:"ready"`
	Objects []*Node `json:"objects"`
	// Notes say what could not be shown (a kind the cluster does not
	// serve); they are not part of the tree.
	Notes []string `json:"-"`
}

// Ref is Kind/namespace/name, or Kind/name for a cluster-scoped object,
// as `flux tree` names objects.
func (n *Node) Ref() string {
	if n.Namespace == "" {
		return n.Kind + "/" + n.Name
	}
	return n.Kind + "/" + n.Namespace + "/" + n.Name
}

// NotReady lists the objects under (and including) n whose health was
// read and is not Ready, depth first.
func (n *Node) NotReady() []*Node {
	var out []*Node
	if n.Ready != "" && n.Ready != metav1.ConditionTrue {
		out = append(out, n)
	}
	for _, c := range n.Children {
		out = append(out, c.NotReady()...)
	}
	return out
}

func newReport(objects []*Node, notes []string) *Report {
	r := &Report{Ready: true, Objects: objects, Notes: notes}
	if r.Objects == nil {
		r.Objects = []*Node{}
	}
	for _, o := range objects {
		if len(o.NotReady()) > 0 {
			r.Ready = false
		}
	}
	return r
}

// NotReady lists everything shown that is not Ready.
func (r *Report) NotReady() []*Node {
	var out []*Node
	for _, o := range r.Objects {
		out = append(out, o.NotReady()...)
	}
	return out
}
