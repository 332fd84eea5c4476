package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/object"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusNode is one object of `capwright status -o json` (cmd/capwright
// tree.go), as a script reads it.
type StatusNode struct {
	Kind             string        `json:"kind"`
	Namespace        string        `json:"namespace"`
	Name             string        `json:"name"`
	Ready            string        `json:"ready"`
	Reason           string        `json:"reason"`
	Message          string        `json:"message"`
	Version          string        `json:"version"`
	InstalledVersion string        `json:"installedVersion"`
	Revision         string        `json:"revision"`
	Phase            string        `json:"phase"`
	Wave             string        `json:"wave"`
	StackRevision    string        `json:"stackRevision"`
	Note             string        `json:"note"`
	Children         []*StatusNode `json:"children"`
}

// StatusReport is `capwright status -o json`.
type StatusReport struct {
	Ready   bool          `json:"ready"`
	Objects []*StatusNode `json:"objects"`
}

// Ref is Kind/namespace/name (Kind/name when cluster-scoped).
func (n *StatusNode) Ref() string {
	if n.Namespace == "" {
		return n.Kind + "/" + n.Name
	}
	return n.Kind + "/" + n.Namespace + "/" + n.Name
}

// Child finds the child of kind and name.
func (n *StatusNode) Child(kind, name string) *StatusNode {
	for _, c := range n.Children {
		if c.Kind == kind && c.Name == name {
			return c
		}
	}
	return nil
}

// RunCLI runs the CLI binary and returns stdout, stderr and the exit code.
func RunCLI(ctx context.Context, bin string, args ...string) (string, string, int, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), stderr.String(), exit.ExitCode(), nil
	}
	if err != nil {
		return "", "", -1, fmt.Errorf("running %s %s: %w", bin, strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), 0, nil
}

// CheckFluxNode compares a Flux object of the tree with the object the API
// server has: its readiness and revision, and, for a Kustomization or
// HelmRelease, its children against status.inventory, entry by entry.
// It returns the differences; none means the tree says what the API says.
func CheckFluxNode(ctx context.Context, c client.Client, n *StatusNode) []string {
	key := client.ObjectKey{Namespace: n.Namespace, Name: n.Name}
	var (
		obj        client.Object
		conditions func() []metav1.Condition
		revision   func() string
		inventory  func() []string
	)
	switch n.Kind {
	case sourcev1.OCIRepositoryKind:
		o := &sourcev1.OCIRepository{}
		obj, conditions = o, func() []metav1.Condition { return o.Status.Conditions }
		revision = func() string { return artifactRevision(o.Status.Artifact) }
	case sourcev1.ExternalArtifactKind:
		o := &sourcev1.ExternalArtifact{}
		obj, conditions = o, func() []metav1.Condition { return o.Status.Conditions }
		revision = func() string { return artifactRevision(o.Status.Artifact) }
	case kustomizev1.KustomizationKind:
		o := &kustomizev1.Kustomization{}
		obj, conditions = o, func() []metav1.Condition { return o.Status.Conditions }
		revision = func() string { return o.Status.LastAppliedRevision }
		inventory = func() []string {
			var ids []string
			if o.Status.Inventory != nil {
				for _, e := range o.Status.Inventory.Entries {
					ids = append(ids, e.ID)
				}
			}
			return ids
		}
	case helmv2.HelmReleaseKind:
		o := &helmv2.HelmRelease{}
		obj, conditions = o, func() []metav1.Condition { return o.Status.Conditions }
		revision = func() string { return o.Status.LastAttemptedRevision }
		inventory = func() []string {
			var ids []string
			if o.Status.Inventory != nil {
				for _, e := range o.Status.Inventory.Entries {
					ids = append(ids, e.ID)
				}
			}
			return ids
		}
	default:
		return []string{fmt.Sprintf("%s is not a Flux kind Capwright writes", n.Ref())}
	}
	if err := c.Get(ctx, key, obj); err != nil {
		return []string{fmt.Sprintf("%s: %v", n.Ref(), err)}
	}
	var diffs []string
	if cond := apimeta.FindStatusCondition(conditions(), meta.ReadyCondition); cond == nil || string(cond.Status) != n.Ready || cond.Reason != n.Reason {
		diffs = append(diffs, fmt.Sprintf("%s: the tree says %s %s, the API %+v", n.Ref(), n.Ready, n.Reason, cond))
	}
	if r := revision(); r != n.Revision {
		diffs = append(diffs, fmt.Sprintf("%s: the tree says revision %q, the API %q", n.Ref(), n.Revision, r))
	}
	if inventory == nil {
		return diffs
	}
	var want, got []string
	for _, id := range inventory() {
		m, err := object.ParseObjMetadata(id)
		if err != nil {
			return append(diffs, err.Error())
		}
		ref := m.GroupKind.Kind + "/" + m.Name
		if m.Namespace != "" {
			ref = m.GroupKind.Kind + "/" + m.Namespace + "/" + m.Name
		}
		want = append(want, ref)
	}
	for _, child := range n.Children {
		got = append(got, child.Ref())
	}
	if !slices.Equal(want, got) {
		diffs = append(diffs, fmt.Sprintf("%s: the tree lists what Flux applied as %v, its inventory is %v", n.Ref(), got, want))
	}
	return diffs
}

// ParseStatus reads `capwright status -o json`.
func ParseStatus(stdout string) (*StatusReport, error) {
	var r StatusReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		return nil, fmt.Errorf("capwright status -o json printed no JSON tree (%w):\n%s", err, stdout)
	}
	return &r, nil
}

// artifactRevision is the revision of a source's artifact, "" for none.
func artifactRevision(a *meta.Artifact) string {
	if a == nil {
		return ""
	}
	return a.Revision
}
