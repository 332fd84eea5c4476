package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/tests/benchstat"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

const (
	fromVersion = "v1.13.6"
	toVersion   = plane.CAPIVersion
	// receiverToken is the Receiver's token, as the Git host's webhook is
	// configured with it.
	receiverToken = "a-token-the-git-host-is-given"
	// settle is how long the plane is left alone between the three
	// providers Ready and the upgrade's push: Kustomizations finishing
	// their health checks, the periodic work of a fresh install.
	settle = 10 * time.Second
	// pollEvery is how often the end of the upgrade is looked for.
	pollEvery = 150 * time.Millisecond
	// providersFile is the example's providers.
	providersFile = "infrastructure/providers/cluster-api.yaml"
)

// controlPlaneDeployment is the kubeadm control plane provider's manager.
var controlPlaneDeployment = client.ObjectKey{Namespace: "capi-kubeadm-control-plane-system", Name: "capi-kubeadm-control-plane-controller-manager"}

// env is one run's plane and repository.
type env struct {
	ctx      context.Context
	r        reporter
	p        *plane.Plane
	c        client.Client
	w        *framework.WorkingCopy
	releases *plane.ReleaseServer
	examples map[string][]byte
	// sha and pushed are the upgrade commit's.
	sha    string
	pushed time.Time
}

// system is one way of running the providers from Git.
type system interface {
	Name() string
	// Prepare runs before flux bootstrap.
	Prepare(e *env)
	// Install pushes the first commit, announces it, and returns once the
	// three providers are Ready.
	Install(e *env)
	// Upgrade commits the upgrade; the caller pushes it.
	Upgrade(e *env)
	// Upgraded tells whether the upgraded provider is Ready.
	Upgraded(e *env) (bool, string)
	// Steps reads where the upgrade's time went from the logs, up to end.
	Steps(e *env, end time.Time) []step
}

// reporter is framework.Reporter for a command: Fatalf ends the run (a
// panic runOnce recovers), Logf prints with -v.
type reporter struct{}

type fatal struct{ err error }

func (reporter) Helper() {}
func (reporter) Fatalf(format string, args ...any) {
	panic(fatal{fmt.Errorf(format, args...)})
}
func (reporter) Logf(format string, args ...any) {
	if verbose {
		fmt.Fprintf(os.Stderr, "    "+format+"\n", args...)
	}
}

// runOnce runs one system on a fresh plane.
func runOnce(ctx context.Context, s system) (res result, err error) {
	r := reporter{}
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(fatal)
			if !ok {
				panic(v)
			}
			err = f.err
		}
	}()
	bin, err := plane.DefaultBinDir()
	if err != nil {
		return res, err
	}
	p, err := plane.Start(ctx, plane.Options{RunDeployments: true})
	if err != nil {
		return res, err
	}
	ok := false
	defer func() {
		_ = p.Stop()
		if ok && !keepRuns {
			_ = os.RemoveAll(p.RunDir)
		} else {
			fmt.Fprintf(os.Stderr, "  the plane's logs are in %s\n", p.RunDir)
		}
	}()
	releases, err := plane.StartFixtureReleases(bin)
	if err != nil {
		return res, err
	}
	defer func() { _ = releases.Close() }()
	if err := p.TrustCA(releases.CACertPEM); err != nil {
		return res, err
	}
	c, err := client.New(p.Config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return res, err
	}
	// The platform team's webhook, which the example's Alerts post to.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer hook.Close()
	dir, err := os.MkdirTemp("", "gitops-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)

	e := &env{ctx: ctx, r: r, p: p, c: c, releases: releases, examples: framework.ExampleRepository(r, p.RepoRoot())}
	s.Prepare(e)
	e.w = framework.CloneFleet(r, ctx, p.Git, dir)
	framework.CustomiseFluxSystem(r, ctx, p, e.w, map[string]map[string]string{
		"receiver-token":   {"token": receiverToken},
		"platform-webhook": {"address": hook.URL + "/gitops"},
	})
	r.Logf("flux bootstrap git:\n%s", framework.Bootstrap(r, ctx, p, framework.FluxCLI(r, bin), dir, framework.ManagementPath))
	e.w.Pull(ctx)

	start := time.Now()
	s.Install(e)
	res.Install = time.Since(start)
	time.Sleep(settle)

	pids := append(p.PIDs(), os.Getpid())
	cpu0 := benchstat.ProcessCPU(pids)
	s.Upgrade(e)
	e.sha, e.pushed = e.w.CommitAndPush(ctx, "Upgrade the kubeadm control plane provider to "+toVersion)
	framework.NotifyPush(r, ctx, c, p)
	var last string
	var end time.Time
	for {
		done, state := s.Upgraded(e)
		if done {
			end = time.Now()
			break
		}
		last = state
		if time.Since(e.pushed) > 5*time.Minute {
			return res, fmt.Errorf("the upgrade not done 5m after the push: %s", last)
		}
		time.Sleep(pollEvery)
	}
	res.Upgrade = end.Sub(e.pushed)
	res.CPU = benchstat.ProcessCPU(pids)
	for n, v := range cpu0 {
		res.CPU[n] -= v
	}
	res.Steps = s.Steps(e, end)
	sortSteps(res.Steps)
	// Sanity: the provider runs v1.14.2 whichever way it got there.
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, controlPlaneDeployment, d); err != nil {
		return res, err
	}
	if image := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(image, ":"+toVersion) {
		return res, fmt.Errorf("the control plane provider runs %s after the upgrade", image)
	}
	ok = true
	return res, nil
}

// waitFor polls check every half second until it reports done.
func waitFor(e *env, timeout time.Duration, what string, check func() (bool, string)) {
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var done bool
		done, last = check()
		return done, nil
	})
	if err != nil {
		e.r.Fatalf("%s: not after %s (%s)", what, timeout, last)
	}
}

// gitRevision is how Flux names commit sha on main.
func gitRevision(sha string) string { return "main@sha1:" + sha }

// appliedAt tells whether Kustomization flux-system/name is Ready for its
// generation with commit sha applied.
func appliedAt(e *env, name, sha string) (bool, string) {
	ks := &kustomizev1.Kustomization{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, ks); err != nil {
		return false, err.Error()
	}
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ready == nil {
		return false, "Kustomization " + name + ": no Ready condition yet"
	}
	return ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == ks.Generation && ks.Status.LastAppliedRevision == gitRevision(sha),
		fmt.Sprintf("Kustomization %s: Ready=%s %s: %s (applied %s)", name, ready.Status, ready.Reason, ready.Message, ks.Status.LastAppliedRevision)
}

func waitApplied(e *env, sha string, timeout time.Duration, names ...string) {
	waitFor(e, timeout, "Kustomizations "+strings.Join(names, ", ")+" applied at "+sha[:12], func() (bool, string) {
		for _, name := range names {
			if ok, state := appliedAt(e, name, sha); !ok {
				return false, state
			}
		}
		return true, ""
	})
}

// capwright is the example repository: Capwright from its release, the
// providers as Capwright's CRs.
type capwright struct{}

func (capwright) Name() string { return "capwright" }

// Prepare releases Capwright v0.1.0 to the plane's registry, as the
// example's OCIRepository names it (through the site overlay).
func (capwright) Prepare(e *env) {
	framework.ReleaseCapwright(e.r, e.ctx, e.p, framework.ExampleCapwrightVersion, func(line string) { e.r.Logf("%s", line) })
}

// Install pushes the example as the gitops suite's first push does, the
// ControlPlaneProvider at v1.13.6, without team A's Tenant and its
// Alerts (the Kustomizations tenants and tenant-alerts then have no
// folder and stay not Ready, after the providers).
func (capwright) Install(e *env) {
	for path, data := range e.examples {
		if strings.HasPrefix(path, framework.ManagementPath+"/flux-system/") ||
			strings.HasPrefix(path, "infrastructure/tenants/") || strings.HasPrefix(path, "infrastructure/tenant-alerts/") {
			continue
		}
		e.w.Write(path, data)
	}
	for path, data := range framework.SiteOverlay(e.r, e.p, e.releases) {
		e.w.Write(path, data)
	}
	e.w.Edit(providersFile, func(s string) string { return framework.SetControlPlaneVersion(e.r, s, fromVersion) })
	sha, _ := e.w.CommitAndPush(e.ctx, "Install Capwright, cert-manager and the Cluster API providers")
	framework.NotifyPush(e.r, e.ctx, e.c, e.p)
	for _, p := range framework.ExampleProviders() {
		waitFor(e, 8*time.Minute, fmt.Sprintf("%T %s/%s Ready", p, p.GetNamespace(), p.GetName()), func() (bool, string) {
			return providerReady(e, p, "")
		})
	}
	waitApplied(e, sha, 3*time.Minute, "flux-system", "cert-manager", "providers")
}

// Upgrade brings the providers file to the example as written.
func (capwright) Upgrade(e *env) {
	e.w.Write(providersFile, e.examples[providersFile])
}

func (capwright) Upgraded(e *env) (bool, string) {
	return providerReady(e, framework.ExampleProviders()[2], toVersion)
}

func (capwright) Steps(e *env, end time.Time) []step {
	steps := []step{fetched(e, end)}
	steps = append(steps, kustomizationSteps(e, end, "cert-manager", "providers")...)
	cp := framework.ExampleProviders()[2]
	if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(cp), cp); err == nil {
		steps = append(steps, capwrightTimeline(e, "ControlPlaneProvider", cp.GetGeneration())...)
	}
	steps = append(steps, providerKustomization(e, end))
	return steps
}

// providerReady tells whether p is Ready for its generation with its
// spec.version installed (and that version is version, unless empty).
func providerReady(e *env, p v1alpha1.Provider, version string) (bool, string) {
	if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(p), p); err != nil {
		return false, err.Error()
	}
	ready := apimeta.FindStatusCondition(p.GetConditions(), v1alpha1.ReadyCondition)
	spec, installed := p.GetSpec().Version, p.GetStatus().InstalledVersion
	return (version == "" || spec == version) && installed == spec && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == p.GetGeneration(),
		fmt.Sprintf("%s/%s version %s installed %s Ready %v", p.GetNamespace(), p.GetName(), spec, installed, ready)
}

// bareFlux is the same repository written with Flux alone: a Kustomization
// per provider applying the release's components file committed to Git.
type bareFlux struct{}

func (bareFlux) Name() string   { return "flux" }
func (bareFlux) Prepare(e *env) {}

// Where the hand-written repository keeps each provider's components.
var fluxProviders = []struct{ kustomization, file string }{
	{"core", "core-components.yaml"},
	{"bootstrap", "bootstrap-components.yaml"},
	{"control-plane", "control-plane-components.yaml"},
}

func componentsPath(kustomization, file string) string {
	return "infrastructure/cluster-api/" + kustomization + "/" + file
}

// fluxKustomizations is clusters/management/cluster-api.yaml of the
// hand-written repository: what a platform team writes to install the
// providers with Flux alone.
const fluxKustomizations = `# cert-manager, which every Cluster API provider needs. On the plane it is
# its stand-in, certsim, which runs with the plane: the Kustomization
# applies the namespace only.
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cert-manager
  namespace: flux-system
spec:
  interval: 1h
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./plane/cert-manager
  prune: true
  wait: true
  timeout: 10m
---
# Cluster API's core provider: its release's core-components.yaml,
# committed as it is released. clusterctl's variables all have defaults
# (${VAR:=default}); Flux substitutes them only when told to, since no
# variable is given.
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: core
  namespace: flux-system
spec:
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./infrastructure/cluster-api/core
  prune: true
  wait: true
  timeout: 5m
  dependsOn:
  - name: cert-manager
  postBuild:
    substituteStrategy: Always
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: bootstrap
  namespace: flux-system
spec:
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./infrastructure/cluster-api/bootstrap
  prune: true
  wait: true
  timeout: 5m
  dependsOn:
  - name: core
  postBuild:
    substituteStrategy: Always
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: control-plane
  namespace: flux-system
spec:
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./infrastructure/cluster-api/control-plane
  prune: true
  wait: true
  timeout: 5m
  dependsOn:
  - name: core
  postBuild:
    substituteStrategy: Always
`

func (bareFlux) Install(e *env) {
	e.w.Write(framework.ManagementPath+"/cluster-api.yaml", []byte(fluxKustomizations))
	e.w.Write("plane/cert-manager/namespace.yaml", []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n"))
	for _, fp := range fluxProviders {
		version := toVersion
		if fp.kustomization == "control-plane" {
			version = fromVersion
		}
		e.w.Write(componentsPath(fp.kustomization, fp.file), readComponents(e, version, fp.file))
	}
	sha, _ := e.w.CommitAndPush(e.ctx, "Install cert-manager and the Cluster API providers")
	framework.NotifyPush(e.r, e.ctx, e.c, e.p)
	waitApplied(e, sha, 8*time.Minute, "flux-system", "cert-manager", "core", "bootstrap", "control-plane")
}

func readComponents(e *env, version, file string) []byte {
	data, err := os.ReadFile(e.p.CAPIComponentsPath(version, file))
	if err != nil {
		e.r.Fatalf("%v", err)
	}
	return data
}

// Upgrade replaces the control plane provider's components file with
// v1.14.2's.
func (bareFlux) Upgrade(e *env) {
	e.w.Write(componentsPath("control-plane", "control-plane-components.yaml"), readComponents(e, toVersion, "control-plane-components.yaml"))
}

func (bareFlux) Upgraded(e *env) (bool, string) {
	if ok, state := appliedAt(e, "control-plane", e.sha); !ok {
		return false, state
	}
	d := &appsv1.Deployment{}
	if err := e.c.Get(e.ctx, controlPlaneDeployment, d); err != nil {
		return false, err.Error()
	}
	image := d.Spec.Template.Spec.Containers[0].Image
	return strings.HasSuffix(image, ":"+toVersion), "the control plane provider runs " + image
}

func (bareFlux) Steps(e *env, end time.Time) []step {
	steps := []step{fetched(e, end)}
	steps = append(steps, kustomizationSteps(e, end, "cert-manager", "core", "bootstrap", "control-plane")...)
	steps[len(steps)-1].Health = healthCheck(e, "flux-system", "control-plane")
	return steps
}

// sortSteps orders steps by time, those not found last.
func sortSteps(steps []step) {
	key := func(s step) float64 {
		if s.At < 0 {
			return math.MaxFloat64
		}
		return s.At
	}
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(key(a), key(b)) })
}
