package clusterctl

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/upgrades"
)

// clusterctlUpToDate is what `clusterctl upgrade plan` prints as the next
// version of a provider that has none.
const clusterctlUpToDate = "Already up to date"

// clusterctlPlanRow is one provider's row of `clusterctl upgrade plan`:
// NAME NAMESPACE TYPE CURRENT VERSION NEXT VERSION.
var clusterctlPlanRow = regexp.MustCompile(`(?m)^(\S+)\s+(\S+)\s+(\S+)\s+(v\S+)\s+(.+?)\s*$`)

// plansAgree checks that `capwright upgrade plan`, reading the providers
// Capwright manages, offers for each adopted provider what
// `clusterctl upgrade plan` (its output plan), reading the inventory
// Capwright keeps, offers: the same namespace, installed version and next
// version.
func plansAgree(t *testing.T, ctx context.Context, plan string) {
	t.Helper()
	rows := map[string][]string{}
	for _, m := range clusterctlPlanRow.FindAllStringSubmatch(plan, -1) {
		rows[m[1]] = m[2:]
	}
	args := []string{"upgrade", "plan", "--kubeconfig", env.Kubeconfig, "-o", "json",
		"--release-mirror", "github.com=https://" + releases.Host, "--release-ca-file", releaseCA, "--release-redirect-host", releases.DownloadHost}
	out, err := exec.CommandContext(ctx, cli, args...).Output()
	if err != nil {
		t.Fatalf("capwright %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var ours upgrades.Plan
	if err := json.Unmarshal(out, &ours); err != nil {
		t.Fatalf("capwright upgrade plan -o json: %v\n%s", err, out)
	}
	for _, a := range adopted {
		row, ok := rows[a.inventoryName]
		if !ok {
			t.Errorf("clusterctl upgrade plan has no row for %s:\n%s", a.inventoryName, plan)
			continue
		}
		namespace, current, next := row[0], row[2], row[3]
		if next == clusterctlUpToDate {
			next = ""
		}
		var r *upgrades.Result
		for i := range ours.Providers {
			if p := &ours.Providers[i]; p.Kind == a.kind && p.Name == a.name {
				r = p
			}
		}
		if r == nil {
			t.Errorf("capwright upgrade plan has no %s %s: %s", a.kind, a.name, out)
			continue
		}
		if r.Namespace != namespace || r.Version != current || r.Next != next {
			t.Errorf("%s %s: capwright upgrade plan says %s at %s, next %q; clusterctl upgrade plan says %s at %s, next %q",
				a.kind, a.name, r.Namespace, r.Version, r.Next, namespace, current, next)
		}
	}
}
