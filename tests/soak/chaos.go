package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/tests/plane"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
)

// chaos breaks the step's part, holds it broken for st.Hold and brings
// it back. A manager kill during a rollout tenant's tag bump first waits
// until the rollout is under way (its first wave done, if it gets there
// within a minute and a half), so that the restart lands mid-rollout.
func (r *runner) chaos(ctx context.Context, st Step) {
	p := r.e.Plane
	var err error
	switch st.Chaos {
	case ManagerKill, StorageWipe, LeaderFailover:
		// The manager is the soak's to stop and start here, not the
		// kubelet's.
		r.managerMu.Lock()
		defer r.managerMu.Unlock()
	}
	switch st.Chaos {
	case ManagerKill:
		if st.Churn == TagBump {
			if t := r.f.tenant(st.Tenant); t != nil && t.rollout {
				r.snapshotRollout(ctx, t)
			}
		}
		leader, _ := r.e.leaseHolder(ctx)
		r.e.Manager.Kill()
		time.Sleep(st.Hold)
		if err = r.restartManager(ctx); err == nil {
			r.awaitLeader(ctx, leader, "the restarted manager")
		}
	case StorageWipe:
		// A new pod of the manager starts with an empty emptyDir.
		leader, _ := r.e.leaseHolder(ctx)
		r.e.Manager.Kill()
		err = wipe(r.e.Manager.ArtifactStorage())
		time.Sleep(st.Hold)
		if rerr := r.restartManager(ctx); err == nil {
			err = rerr
		}
		if err == nil {
			r.awaitLeader(ctx, leader, "the restarted manager")
		}
	case LeaderFailover:
		err = r.failover(ctx, st.Hold)
	case CAPIManagerKill:
		if err = p.Kill(capiManager); err == nil {
			time.Sleep(st.Hold)
			err = p.Restart(ctx, capiManager)
		}
	case FluxKill:
		if err = p.Kill(st.Component); err == nil {
			time.Sleep(st.Hold)
			err = p.Restart(ctx, st.Component)
		}
	case APIServerRestart, EtcdRestart:
		component := "kube-apiserver"
		if st.Chaos == EtcdRestart {
			component = "etcd"
		}
		if err = p.Kill(component); err == nil {
			time.Sleep(st.Hold)
			err = p.Restart(ctx, component)
		}
	case RegistryDown:
		if err = p.Registry.Stop(); err == nil {
			time.Sleep(st.Hold)
			err = p.Registry.Start()
		}
	case RegistryHang:
		p.Registry.Hang()
		time.Sleep(st.Hold)
		p.Registry.Answer()
	case ReleaseHostDown:
		if err = r.e.Releases.Stop(); err == nil {
			time.Sleep(st.Hold)
			err = r.e.Releases.Start()
		}
	case WorkloadDown:
		w := r.e.Servers[st.Server]
		if err = w.Kill("kube-apiserver"); err == nil {
			time.Sleep(st.Hold)
			err = w.Restart(ctx, "kube-apiserver")
			r.forgetServerClient(st.Server)
		}
	}
	if err != nil {
		// The harness could not break or mend the part: say so, the run
		// goes on.
		r.rec.violate(Converges, string(st.Chaos), "the soak could not play the chaos: %v", err)
	}
}

// kubeletBackOff is how long the kubelet waits before it starts a
// container that exited again (its first crash-loop back-off).
const kubeletBackOff = 10 * time.Second

// kubelet restarts the manager when it exits by itself, after the
// kubelet's first back-off, as a Deployment's pod is: a leader that
// cannot renew its lease within the renew deadline (etcd or the API
// server down longer than that) exits, as every controller-runtime
// manager does, and the kubelet starts it again. Each such exit is
// logged and counted in the report.
func (r *runner) kubelet(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !r.managerMu.TryLock() {
			continue // a chaos has the manager
		}
		if r.e.Manager.Exited() {
			r.logf("the manager exited by itself (%s); the kubelet starts it again in %s", lastLine(r.e.Manager.LogPath()), kubeletBackOff)
			r.mu.Lock()
			r.selfExits = append(r.selfExits, time.Now())
			r.mu.Unlock()
			time.Sleep(kubeletBackOff)
			if err := r.restartManager(ctx); err != nil {
				r.rec.violate(Converges, "the manager", "exited by itself and could not be started again: %v", err)
			}
		}
		r.managerMu.Unlock()
	}
}

// lastLine is the last line of a log file, at most 300 bytes of it.
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	last := lines[len(lines)-1]
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}

// capiManager is the plane's name of the Cluster API core manager's
// process.
const capiManager = "cluster-api-manager"

func (r *runner) restartManager(ctx context.Context) error {
	if err := r.e.Manager.Restart(ctx); err != nil {
		return err
	}
	now := time.Now()
	r.e.managerStarted = now
	r.mu.Lock()
	r.managerStarts = append(r.managerStarts, now)
	r.mu.Unlock()
	return nil
}

// wipe empties dir, keeping dir.
func wipe(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// rolloutSnapshot is a rollout as it was when the manager was killed.
type rolloutSnapshot struct {
	tenant    string
	target    string // revision ID
	artifact  string
	completed map[string]time.Time
	failed    map[string]bool
	taken     time.Time
}

// snapshotRollout waits until the tenant's rollout of its new tag is
// under way and records it for checkResumed.
func (r *runner) snapshotRollout(ctx context.Context, t *tenant) {
	tn := &tenancyv1alpha1.Tenant{}
	started := false
	poll(ctx, 90*time.Second, func() bool {
		if err := r.e.Client.Get(ctx, client.ObjectKey{Name: t.name}, tn); err != nil {
			return false
		}
		ro := tn.Status.Rollout
		if ro == nil || ro.Target == nil || !strings.HasPrefix(ro.Target.Artifact, t.tag+"@") || ro.Phase == tenancyv1alpha1.RolloutComplete {
			return false
		}
		started = true
		return len(ro.Waves) > 0 && ro.Waves[0].CompletedAt != nil
	})
	ro := tn.Status.Rollout
	if !started || ro == nil || ro.Target == nil {
		r.logf("the rollout of %s on Tenant %s was not under way when the manager was killed: %s", t.tag, t.name, rolloutString(ro))
		return
	}
	s := &rolloutSnapshot{tenant: t.name, target: ro.Target.ID, artifact: ro.Target.Artifact, completed: map[string]time.Time{}, failed: map[string]bool{}, taken: time.Now()}
	for _, w := range ro.Waves {
		if w.CompletedAt != nil {
			s.completed[w.Name] = w.CompletedAt.Time
		}
	}
	for _, f := range ro.Failed {
		s.failed[f.ID] = true
	}
	r.logf("manager killed mid-rollout of Tenant %s: target %s, %d of %d waves done", t.name, s.artifact, len(s.completed), len(ro.Waves))
	r.mu.Lock()
	r.resume = s
	r.mu.Unlock()
}

// checkResumed checks, once converged, that the rollout the manager was
// killed in the middle of went on where it was.
func (r *runner) checkResumed(ctx context.Context) {
	r.mu.Lock()
	s := r.resume
	r.resume = nil
	r.mu.Unlock()
	if s == nil {
		return
	}
	r.rec.check(RolloutResumes, 1)
	who := "Tenant " + s.tenant
	tn := &tenancyv1alpha1.Tenant{}
	if err := getRetrying(ctx, r.e.Client, tn, client.ObjectKey{Name: s.tenant}); err != nil {
		r.rec.violate(RolloutResumes, who, "reading it after the restart: %v", err)
		return
	}
	ro := tn.Status.Rollout
	if ro == nil || ro.Phase != tenancyv1alpha1.RolloutComplete || ro.LastGood == nil || ro.LastGood.ID != s.target {
		r.rec.violate(RolloutResumes, who, "the rollout of %s (revision %s) interrupted by the restart did not complete on that revision: %s", s.artifact, s.target, rolloutString(ro))
		return
	}
	var previous *time.Time
	for _, w := range ro.Waves {
		if w.Clusters == 0 {
			continue
		}
		if w.CompletedAt == nil || w.Updated != w.Clusters {
			r.rec.violate(RolloutResumes, who, "wave %s was skipped: %d of %d clusters updated, completed %v", w.Name, w.Updated, w.Clusters, w.CompletedAt)
			continue
		}
		if before, ok := s.completed[w.Name]; ok && !w.CompletedAt.Time.Equal(before) {
			r.rec.violate(RolloutResumes, who, "wave %s, done before the restart at %s, was done again at %s", w.Name, before.UTC().Format(time.TimeOnly), w.CompletedAt.UTC().Format(time.TimeOnly))
		}
		// Status times are whole seconds.
		if previous != nil && w.CompletedAt.Time.Before(previous.Add(rolloutBake-time.Second)) {
			r.rec.violate(RolloutResumes, who, "wave %s completed at %s, less than the bake time after the wave before it (%s)", w.Name,
				w.CompletedAt.UTC().Format(time.TimeOnly), previous.UTC().Format(time.TimeOnly))
		}
		t := w.CompletedAt.Time
		previous = &t
	}
	for _, f := range ro.Failed {
		if !s.failed[f.ID] {
			r.rec.violate(RolloutResumes, who, "revision %s (%s) failed after the restart: %s", f.ID, f.Artifact, f.Message)
		}
	}
	r.logf("the rollout of Tenant %s resumed after the restart and completed on %s", s.tenant, s.artifact)
}

// watchRollouts holds every rollout tenant to what a rollout may never
// do: move to a revision that failed before, and (for the one
// interrupted by a restart) change its target or forget a completed wave
// while it goes on.
func (r *runner) watchRollouts(tenants []tenancyv1alpha1.Tenant) {
	r.mu.Lock()
	s := r.resume
	r.mu.Unlock()
	for i := range tenants {
		tn := &tenants[i]
		ro := tn.Status.Rollout
		if ro == nil {
			continue
		}
		r.mu.Lock()
		failed := r.failedRevisions[tn.Name]
		if failed == nil {
			failed = map[string]bool{}
			r.failedRevisions[tn.Name] = failed
		}
		r.mu.Unlock()
		progressing := ro.Phase == tenancyv1alpha1.RolloutProgressing || ro.Phase == tenancyv1alpha1.RolloutBaking
		r.rec.check(RolloutResumes, 1)
		if progressing && ro.Target != nil && failed[ro.Target.ID] {
			r.rec.violate(RolloutResumes, "Tenant "+tn.Name, "the rollout is trying revision %s (%s) again, which failed before", ro.Target.ID, ro.Target.Artifact)
		}
		for _, f := range ro.Failed {
			r.mu.Lock()
			failed[f.ID] = true
			r.mu.Unlock()
		}
		if s == nil || s.tenant != tn.Name || !progressing || ro.Target == nil {
			continue
		}
		if ro.Target.ID != s.target {
			r.rec.violate(RolloutResumes, "Tenant "+tn.Name, "after the restart the rollout's target is %s (%s), not %s (%s) as before it", ro.Target.ID, ro.Target.Artifact, s.target, s.artifact)
		}
		for _, w := range ro.Waves {
			if before, ok := s.completed[w.Name]; ok && (w.CompletedAt == nil || !w.CompletedAt.Time.Equal(before)) {
				r.rec.violate(RolloutResumes, "Tenant "+tn.Name, "wave %s, completed at %s before the restart, is %s", w.Name, before.UTC().Format(time.TimeOnly), waveState(w))
			}
		}
	}
}

func waveState(w tenancyv1alpha1.WaveStatus) string {
	if w.CompletedAt == nil {
		return fmt.Sprintf("not completed (%d of %d updated)", w.Updated, w.Clusters)
	}
	return "completed at " + w.CompletedAt.UTC().Format(time.TimeOnly)
}

// The manager's leader election timings in the soak (the lease duration
// and the retry period; the renew deadline is 8s).
const (
	leaseDuration = 10 * time.Second
	leaseRetry    = 2 * time.Second
	// takeover bounds a replica's taking the lease: the lease duration,
	// two retry periods and a margin.
	takeover = leaseDuration + 2*leaseRetry + 5*time.Second
)

// failover runs a second replica of the manager beside the leader,
// SIGKILLs the leader and checks that the standby takes the lease within
// the lease duration and two retry periods. It holds, then brings the
// first replica back, which follows, and stops the standby, which hands
// the lease back: a rolling update of the chart's two replicas.
func (r *runner) failover(ctx context.Context, hold time.Duration) error {
	e := r.e
	var err error
	if e.standby == nil {
		o := e.managerOptions
		o.Name = "capwright-manager-standby"
		e.standby, err = e.Plane.StartCapwright(ctx, o)
	} else {
		err = e.standby.Restart(ctx)
	}
	if err != nil {
		return fmt.Errorf("starting the standby replica: %w", err)
	}
	e.Service.SetBackends(e.Manager.ArtifactAddr(), e.standby.ArtifactAddr())
	leader, err := e.leaseHolder(ctx)
	if err != nil {
		return err
	}
	killed := time.Now()
	e.Manager.Kill()
	standby := r.awaitLeader(ctx, leader, "the standby replica, after the leader's SIGKILL,")
	if standby != "" {
		r.logf("leader failover: the standby took the lease %s after the leader's SIGKILL", time.Since(killed).Round(100*time.Millisecond))
	}
	time.Sleep(hold)
	if err := r.restartManager(ctx); err != nil {
		return err
	}
	e.standby.Stop()
	e.Service.SetBackends(e.Manager.ArtifactAddr())
	r.awaitLeader(ctx, standby, "the first replica, after the standby's stop,")
	return nil
}

// awaitLeader waits until a replica other than was, who, holds the
// manager's lease, and returns it ("" and a violation when none does
// within takeover). A restarted manager waits out its old lease first, as
// a restarted pod does: the fault is over only once it leads.
func (r *runner) awaitLeader(ctx context.Context, was, who string) string {
	holder, err := r.e.waitLeaseHolder(ctx, was, takeover)
	if err != nil {
		r.rec.violate(Converges, "Lease "+plane.ManagerNamespace+"/"+leaseName,
			"%s did not take the lease within %s (lease duration %s): %v", who, takeover, leaseDuration, err)
	}
	return holder
}

// leaseName is the manager's leader election lease
// (cmd/manager's LeaderElectionID).
const leaseName = "capwright-leader-election"

// leaseHolder is the holder of the manager's lease.
func (e *Env) leaseHolder(ctx context.Context) (string, error) {
	var l coordinationv1.Lease
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: plane.ManagerNamespace, Name: leaseName}, &l); err != nil {
		return "", fmt.Errorf("reading the manager's lease: %w", err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// waitLeaseHolder waits until a replica other than was holds the lease,
// and returns it.
func (e *Env) waitLeaseHolder(ctx context.Context, was string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		holder, err := e.leaseHolder(ctx)
		if err == nil && holder != "" && holder != was {
			return holder, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return "", err
			}
			return "", fmt.Errorf("the lease is still held by %q", holder)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
