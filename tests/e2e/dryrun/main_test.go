// Package dryrun is the end-to-end suite of the dry run the manager makes
// before it upgrades a provider (internal/dryrun): against the plane's
// real API server, with Cluster API's real core components installed and
// its manager serving their webhooks, and the dry-run user's RBAC and
// admission policy as manifests/rbac holds them.
package dryrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/dryrun"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

var env *plane.Plane

func TestMain(m *testing.M) {
	os.Exit(framework.RunSuite(m, plane.Options{}, func(ctx context.Context, p *plane.Plane) error {
		if _, err := p.StartCAPIManager(ctx, plane.CAPIManagerOptions{Install: true}); err != nil {
			return err
		}
		return installDryRunRBAC(ctx, p)
	}, func(p *plane.Plane) { env = p }))
}

// installDryRunRBAC applies the installer role with the dry-run user's
// binding, and the admission policies, from manifests/rbac, and waits
// until both hold: the aggregated role has its rules, and the policy
// refuses the user a write.
func installDryRunRBAC(ctx context.Context, p *plane.Plane) error {
	applier, err := plane.NewApplier(p.Config)
	if err != nil {
		return err
	}
	for _, file := range []string{"provider_installer.yaml", "manager_admission.yaml"} {
		f, err := os.Open(filepath.Join(p.RepoRoot(), "manifests", "rbac", file))
		if err != nil {
			return err
		}
		objs, err := plane.DecodeYAML(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := applier.Apply(ctx, objs...); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	admin, err := framework.NewClient(p.Config)
	if err != nil {
		return err
	}
	as, err := framework.NewClient(dryRunUserConfig(p.Config))
	if err != nil {
		return err
	}
	probe := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dry-run-policy-probe"}}
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var role rbacv1.ClusterRole
		if err := admin.Get(ctx, client.ObjectKey{Name: "capwright-provider-installer"}, &role); err != nil || len(role.Rules) == 0 {
			last = fmt.Errorf("ClusterRole capwright-provider-installer has no rules yet (%v)", err)
			return false, nil
		}
		last = as.Create(ctx, probe())
		switch {
		case last == nil:
			// The policy is not loaded yet: undo the write it will refuse.
			last = errors.New("the dry-run user wrote a ConfigMap")
			return false, client.IgnoreNotFound(admin.Delete(ctx, probe()))
		case apierrors.IsForbidden(last) && strings.Contains(last.Error(), policyRefusal):
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the dry-run user's role and admission policy: %w (last: %v)", err, last)
	}
	return nil
}

// policyRefusal is how the admission policy capwright-provider-dry-run
// starts its message.
const policyRefusal = "capwright:provider-dry-run may only dry-run (ValidatingAdmissionPolicy capwright-provider-dry-run"

// dryRunUserConfig is cfg impersonating the dry-run user, as the manager
// does.
func dryRunUserConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: dryrun.DryRunUser}
	return cfg
}
