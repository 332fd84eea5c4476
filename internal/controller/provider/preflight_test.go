package provider

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact/registrytest"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
	"github.com/capwright/capwright/internal/render"
)

// secretMarker is the value of a variable in a config Secret: it must
// never appear in a condition, an event or a Flux object.
const secretMarker = "s3cr3t-marker-4711"

// TestPreflightRefusals drives the reconciler, through the shell, against a
// fake API server and an in-process registry, one case per preflight
// check. Each refusal sets its condition with the reason and a message
// naming what is wrong and the fix, stalls the provider only when it cannot
// lift itself (a wait or an unreachable registry is progress), looks again
// when it says, and writes no Flux object.
func TestPreflightRefusals(t *testing.T) {
	tests := []struct {
		name string
		// setup publishes what the case needs and returns the provider to
		// reconcile and the other objects in the cluster.
		setup func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object)

		condition string
		status    metav1.ConditionStatus
		reason    string
		// message holds these, in this order.
		message []string
		// stalls: the shell marks the provider Stalled (else Reconciling).
		stalls  bool
		requeue time.Duration
		// fetchesAhead: the refusal comes after the artifact was resolved
		// and its contract read, so the provider, which has nothing
		// applied yet, has its OCIRepository written (fetchAhead); no
		// other Flux object.
		fetchesAhead bool
	}{
		{
			name: "artifact not found",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushCore(t, reg, "v1.14.1", "v1beta2")
				return coreProvider(p.URL, "v1.14.2"), nil
			},
			condition: v1alpha1.ArtifactResolvedCondition, status: metav1.ConditionFalse, reason: v1alpha1.ResolveFailedReason,
			message: []string{"capwright/manifests/core-cluster-api:v1.14.2 not found in the registry", "check the repository URL and that the version is published"},
			stalls:  false, requeue: time.Minute,
		},
		{
			name: "registry unreachable",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushCore(t, reg, "v1.14.2", "v1beta2")
				reg.Close()
				return coreProvider(p.URL, "v1.14.2"), nil
			},
			condition: v1alpha1.ArtifactResolvedCondition, status: metav1.ConditionFalse, reason: v1alpha1.ResolveFailedReason,
			message: []string{"capwright/manifests/core-cluster-api:v1.14.2", "connection refused"},
			stalls:  false, requeue: time.Minute,
		},
		{
			name: "artifact of another provider",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushRelease(t, reg, v1alpha1.InfrastructureProviderType, "docker", "aws", "v1.14.2", clusterctltest.Metadata("v1.14.2", "v1beta2"), clusterctltest.DockerComponents)
				return dockerProvider(p.URL, "v1.14.2"), []ctrl.Object{installedCore("v1beta2")}
			},
			condition: v1alpha1.ArtifactResolvedCondition, status: metav1.ConditionFalse, reason: v1alpha1.ArtifactInvalidReason,
			message: []string{"is not a Cluster API provider artifact", `provider-name is "aws", expected "docker"`, "check that the URL points to the infrastructure provider docker"},
			stalls:  true, requeue: time.Minute,
		},
		{
			name: "tag moved since it was checked",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushCore(t, reg, "v1.14.2", "v1beta2")
				core := coreProvider(p.URL, "v1.14.2")
				old := "sha256:" + strings.Repeat("a", 64)
				core.Status.Artifact = &v1alpha1.ResolvedArtifact{URL: p.URL, Revision: "v1.14.2@" + old, Digest: old}
				return core, nil
			},
			condition: v1alpha1.ArtifactResolvedCondition, status: metav1.ConditionFalse, reason: v1alpha1.TagMovedReason,
			message: []string{"tag v1.14.2 of", "now points to", "it stays installed", "pin it with spec.source.oci.digest"},
			stalls:  true, requeue: time.Minute,
		},
		{
			name: "no release series for the version",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushRelease(t, reg, v1alpha1.CoreProviderType, "cluster-api", "cluster-api", "v1.14.2", clusterctltest.Metadata("v1.13.0", "v1beta2"), clusterctltest.CoreComponents)
				return coreProvider(p.URL, "v1.14.2"), nil
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.ContractUnknownReason,
			message: []string{"metadata.yaml of v1.14.2@sha256:", "no release series for version v1.14.2", "it lists v1.13 (v1beta2)"},
			stalls:  true, requeue: time.Minute,
		},
		{
			name: "incompatible contract against the core provider",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				return dockerProvider(p.URL, "v1.14.2"), []ctrl.Object{installedCore("v1beta1")}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.IncompatibleContractReason,
			message: []string{"docker v1.14.2 has contract v1beta2", "CoreProvider capi-system/cluster-api v1.14.2 has v1beta1",
				"choose a provider version whose metadata.yaml maps it to v1beta1"},
			stalls: true, requeue: 10 * time.Minute, fetchesAhead: true,
		},
		{
			name: "downgrade across minors",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushCore(t, reg, "v1.13.6", "v1beta2")
				core := coreProvider(p.URL, "v1.13.6")
				core.Status.InstalledVersion = "v1.14.2"
				return core, nil
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.DowngradeReason,
			message: []string{"downgrading from v1.14.2 to v1.13.6 crosses minor versions", "set the version back to v1.14.x or later"},
			stalls:  true, requeue: 10 * time.Minute,
		},
		{
			name: "downgrade across minors with the status lost: clusterctl's inventory remembers",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushCore(t, reg, "v1.13.6", "v1beta2")
				return coreProvider(p.URL, "v1.13.6"), []ctrl.Object{inventoryObject("capi-system", "cluster-api", "v1.14.2")}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.DowngradeReason,
			message: []string{"downgrading from v1.14.2 to v1.13.6 crosses minor versions",
				"v1.14.2 is what clusterctl's inventory Provider capi-system/cluster-api records as installed; status.installedVersion is empty"},
			stalls: true, requeue: 10 * time.Minute,
		},
		{
			name: "duplicate provider of the same type and name",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				older := dockerProvider(p.URL, "v1.14.2")
				older.Namespace, older.UID, older.CreationTimestamp = "capd-old", "uid-docker-old", created
				return dockerProvider(p.URL, "v1.14.2"), []ctrl.Object{older, installedCore("v1beta2")}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.DuplicateProviderReason,
			message: []string{"InfrastructureProvider capd-old/docker already manages the infrastructure provider \"docker\"", "delete this one or that one"},
			stalls:  true, requeue: time.Minute,
		},
		{
			name: "variables without a value",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				docker := dockerProvider(p.URL, "v1.14.2")
				docker.Spec.ConfigSecret = &v1alpha1.SecretReference{Name: "docker-vars"}
				secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "capd-system", Name: "docker-vars"},
					Data: map[string][]byte{"DOCKER_REGION": []byte(secretMarker)}}
				return docker, []ctrl.Object{secret, installedCore("v1beta2")}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.MissingVariablesReason,
			message: []string{"infrastructure-components.yaml of docker v1.14.2 uses variables with no value and no default: DOCKER_TOKEN;",
				"set them in spec.variables or in the spec.configSecret Secret"},
			stalls: true, requeue: 30 * time.Second, fetchesAhead: true,
		},
		{
			name: "config Secret missing",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				docker := dockerProvider(p.URL, "v1.14.2")
				docker.Spec.ConfigSecret = &v1alpha1.SecretReference{Name: "docker-vars"}
				return docker, []ctrl.Object{installedCore("v1beta2")}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.ConfigSecretMissingReason,
			message: []string{"spec.configSecret: Secret capd-system/docker-vars does not exist", "create it", "or drop spec.configSecret"},
			stalls:  true, requeue: 30 * time.Second, fetchesAhead: true,
		},
		{
			name: "config Secret in another namespace",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				docker := dockerProvider(p.URL, "v1.14.2")
				docker.Spec.ConfigSecret = &v1alpha1.SecretReference{Namespace: "kube-system", Name: "cloud-creds"}
				secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cloud-creds"},
					Data: map[string][]byte{secretMarker: []byte(secretMarker)}}
				return docker, []ctrl.Object{secret, installedCore("v1beta2")}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionFalse, reason: v1alpha1.ConfigSecretNotAllowedReason,
			message: []string{"spec.configSecret: Secret kube-system/cloud-creds is outside the provider's namespace capd-system",
				"copy the Secret into capd-system and drop spec.configSecret.namespace"},
			stalls: true, requeue: time.Minute, fetchesAhead: true,
		},
		{
			name: "waiting for the core provider",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				return dockerProvider(p.URL, "v1.14.2"), nil
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionUnknown, reason: v1alpha1.WaitingForCoreReason,
			message: []string{"waiting for the core provider", "create a CoreProvider named cluster-api"},
			stalls:  false, requeue: 10 * time.Minute, fetchesAhead: true,
		},
		{
			name: "waiting for the core provider's contract",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				core := installedCore("v1beta2")
				core.Status = v1alpha1.ProviderStatus{} // its preflight has not passed yet
				return dockerProvider(p.URL, "v1.14.2"), []ctrl.Object{core}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionUnknown, reason: v1alpha1.WaitingForCoreReason,
			message: []string{"waiting for CoreProvider capi-system/cluster-api to pass its preflight"},
			stalls:  false, requeue: 10 * time.Minute, fetchesAhead: true,
		},
		{
			name: "waiting for spec.dependsOn",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta2")
				docker := dockerProvider(p.URL, "v1.14.2")
				docker.Spec.Variables = map[string]string{"DOCKER_TOKEN": "t", "DOCKER_REGION": "r"}
				docker.Spec.DependsOn = []v1alpha1.DependencyReference{{Kind: helmv2.HelmReleaseKind, Name: "cert-manager", Namespace: "cert-manager"}}
				certManager := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "cert-manager", Name: "cert-manager", Generation: 1},
					Status: helmv2.HelmReleaseStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown,
						Reason: meta.ProgressingReason, Message: "Running 'install' action", ObservedGeneration: 1, LastTransitionTime: created}}}}
				return docker, []ctrl.Object{certManager, installedCore("v1beta2")}
			},
			condition: v1alpha1.CompatibleCondition, status: metav1.ConditionUnknown, reason: v1alpha1.WaitingForDependencyReason,
			message: []string{"waiting for HelmRelease cert-manager/cert-manager (spec.dependsOn): Running 'install' action"},
			stalls:  false, requeue: 10 * time.Minute, fetchesAhead: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registrytest.New(t, registrytest.Options{})
			p, objs := tt.setup(t, reg)
			env := newFakeEnv(t, kindFor(p), append(objs, p.(ctrl.Object))...)
			existing := env.fluxObjects()

			res, err := env.reconcile(p)
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			got := env.get(p)

			c := condition(got, tt.condition)
			if c == nil || c.Status != tt.status || c.Reason != tt.reason {
				t.Fatalf("%s = %+v, want %s %s", tt.condition, c, tt.status, tt.reason)
			}
			rest := c.Message
			for _, want := range tt.message {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("%s message %q does not say %q (in order)", tt.condition, c.Message, want)
				}
				rest = rest[i+len(want):]
			}
			if c.ObservedGeneration != got.GetGeneration() {
				t.Errorf("%s describes generation %d, not %d", tt.condition, c.ObservedGeneration, got.GetGeneration())
			}
			if tt.condition == v1alpha1.ArtifactResolvedCondition {
				if cc := condition(got, v1alpha1.CompatibleCondition); cc == nil || cc.Status != metav1.ConditionUnknown {
					t.Errorf("Compatible = %+v, want Unknown while the artifact is not resolved", cc)
				}
			} else if ar := condition(got, v1alpha1.ArtifactResolvedCondition); ar == nil || ar.Status != metav1.ConditionTrue {
				t.Errorf("ArtifactResolved = %+v, want True before the %s check", ar, tt.reason)
			}

			ready := condition(got, v1alpha1.ReadyCondition)
			if ready == nil || ready.Status == metav1.ConditionTrue || ready.Reason != tt.reason {
				t.Errorf("Ready = %+v, want not True with reason %s", ready, tt.reason)
			}
			if s, r := stalled(got), reconciling(got); tt.stalls {
				if s == nil || s.Status != metav1.ConditionTrue || s.Reason != tt.reason || s.Message != c.Message {
					t.Errorf("Stalled = %+v, want True with the refusal's reason and message", s)
				}
				if r != nil {
					t.Errorf("a stalled provider is Reconciling too: %+v", r)
				}
			} else {
				if s != nil {
					t.Errorf("Stalled = %+v, want none: the refusal lifts itself", s)
				}
				if r == nil || r.Status != metav1.ConditionTrue || r.Reason != tt.reason {
					t.Errorf("Reconciling = %+v, want True with reason %s", r, tt.reason)
				}
			}
			if res.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tt.requeue)
			}

			var ahead []string
			wantObjects := existing
			if tt.fetchesAhead {
				source := "OCIRepository " + p.GetNamespace() + "/" + objectName(p)
				ahead = []string{"apply " + source}
				wantObjects = append(slices.Clone(existing), source)
				slices.Sort(wantObjects)
				var repo sourcev1.OCIRepository
				if err := env.client.Get(context.Background(), ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: objectName(p)}, &repo); err != nil {
					t.Fatal(err)
				}
				if d := repo.Spec.Reference; d == nil || d.Digest == "" || !strings.HasSuffix(got.GetStatus().LastAttemptedRevision, "@"+d.Digest) {
					t.Errorf("the OCIRepository fetched ahead is at %+v, want pinned to the digest resolved (%s)", d, got.GetStatus().LastAttemptedRevision)
				}
			}
			var wrote []string
			for _, w := range env.fluxWrites() {
				wrote = append(wrote, w.String())
			}
			if !slices.Equal(wrote, ahead) {
				t.Errorf("preflight refused, yet the reconciler wrote %v; want %v", wrote, ahead)
			}
			if objs := env.fluxObjects(); !slices.Equal(objs, wantObjects) {
				t.Errorf("preflight refused, yet the Flux objects are %v, not %v", objs, wantObjects)
			}
			if a, b := got.GetStatus().Artifact, p.GetStatus().Artifact; !equality.Semantic.DeepEqual(a, b) {
				t.Errorf("status.artifact = %+v, want it unchanged by a refusal (%+v)", a, b)
			}

			events := env.recordedEvents()
			warned := false
			for _, e := range events {
				warned = warned || strings.HasPrefix(e, corev1.EventTypeWarning+" "+tt.reason+" ")
			}
			if wait := tt.status == metav1.ConditionUnknown; wait == warned {
				t.Errorf("events %q: a Warning %s is wanted for a refusal and never for a wait", events, tt.reason)
			}
			for _, e := range events {
				if strings.Contains(e, secretMarker) {
					t.Errorf("an event carries the config Secret's value: %q", e)
				}
			}
			for _, c := range got.GetConditions() {
				if strings.Contains(c.Message, secretMarker) {
					t.Errorf("condition %s carries the config Secret's value: %q", c.Type, c.Message)
				}
			}
		})
	}
}

// TestCrossNamespaceConfigSecretIsNeverRead: the manager may read Secrets
// in every namespace, so a provider naming a Secret outside its own
// namespace is refused before anything reads it — not after, when its key
// names could already have reached a MissingVariables message.
func TestCrossNamespaceConfigSecretIsNeverRead(t *testing.T) {
	reg := registrytest.New(t, registrytest.Options{})
	p := pushDocker(t, reg, "v1.14.2", "v1beta2")
	docker := dockerProvider(p.URL, "v1.14.2")
	docker.Spec.ConfigSecret = &v1alpha1.SecretReference{Namespace: "flux-system", Name: "flux-system"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system"},
		Data: map[string][]byte{"identity": []byte(secretMarker)}}
	env := newFakeEnv(t, kindFor(docker), docker, secret, installedCore("v1beta2"))
	if _, err := env.reconcile(docker); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if c := condition(env.get(docker), v1alpha1.CompatibleCondition); c == nil || c.Reason != v1alpha1.ConfigSecretNotAllowedReason {
		t.Errorf("Compatible = %+v, want reason %s", c, v1alpha1.ConfigSecretNotAllowedReason)
	}
	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.secretReads) > 0 {
		t.Errorf("the reconciler read Secrets %v for a provider whose configSecret is in another namespace; want none", env.secretReads)
	}
}

// TestPreflightPassesAndPinsTheCheckedDigest: a provider that passes every
// check gets its OCIRepository pinned to the digest preflight checked and
// its Kustomization, owned by it; the status records what was checked; a
// second reconcile with nothing changed writes nothing. The values of a
// config Secret reach Flux by reference only.
func TestPreflightPassesAndPinsTheCheckedDigest(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, pushed, []ctrl.Object)
		// contract is what status.contract records.
		contract string
	}{
		{
			name: "core provider",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, pushed, []ctrl.Object) {
				p := pushCore(t, reg, "v1.14.2", "v1beta2")
				return coreProvider(p.URL, "v1.14.2"), p, nil
			},
			contract: "v1beta2",
		},
		{
			name: "infrastructure provider with its variables in a Secret",
			setup: func(t *testing.T, reg *registrytest.Registry) (v1alpha1.Provider, pushed, []ctrl.Object) {
				p := pushDocker(t, reg, "v1.14.2", "v1beta1")
				docker := dockerProvider(p.URL, "v1.14.2")
				docker.Spec.ConfigSecret = &v1alpha1.SecretReference{Name: "docker-vars"}
				docker.Spec.Variables = map[string]string{"DOCKER_REGION": "eu"}
				docker.Spec.DependsOn = []v1alpha1.DependencyReference{{Name: "cert-manager", Namespace: "flux-system"}}
				secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "capd-system", Name: "docker-vars"},
					Data: map[string][]byte{"DOCKER_TOKEN": []byte(secretMarker)}}
				certManager := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "cert-manager", Generation: 2},
					Status: kustomizev1.KustomizationStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
						Reason: meta.ReconciliationSucceededReason, ObservedGeneration: 2, LastTransitionTime: created}}}}
				// A v1beta1 provider runs with a v1beta2 core.
				return docker, p, []ctrl.Object{secret, certManager, installedCore("v1beta2")}
			},
			contract: "v1beta1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			reg := registrytest.New(t, registrytest.Options{})
			p, art, objs := tt.setup(t, reg)
			env := newFakeEnv(t, kindFor(p), append(objs, p.(ctrl.Object))...)

			res, err := env.reconcile(p)
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			got := env.get(p)
			for _, typ := range []string{v1alpha1.ArtifactResolvedCondition, v1alpha1.CompatibleCondition} {
				if c := condition(got, typ); c == nil || c.Status != metav1.ConditionTrue {
					t.Errorf("%s = %+v, want True", typ, c)
				}
			}
			if s := stalled(got); s != nil {
				t.Errorf("Stalled = %+v", s)
			}
			if res.RequeueAfter != 10*time.Minute {
				t.Errorf("requeue after %v, want the resync interval", res.RequeueAfter)
			}
			st := got.GetStatus()
			if st.Contract != tt.contract || st.Artifact == nil || st.Artifact.Digest != art.Digest ||
				st.Artifact.URL != art.URL || st.Artifact.Revision != "v1.14.2@"+art.Digest {
				t.Errorf("status: contract %q, artifact %+v; want %s and %s@%s", st.Contract, st.Artifact, tt.contract, art.URL, art.Digest)
			}

			name := objectName(p)
			var repo sourcev1.OCIRepository
			if err := env.client.Get(ctx, ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: name}, &repo); err != nil {
				t.Fatalf("the OCIRepository: %v", err)
			}
			if repo.Spec.Reference == nil || repo.Spec.Reference.Digest != art.Digest || repo.Spec.URL != art.URL {
				t.Errorf("OCIRepository %s at %+v, want pinned to %s", repo.Spec.URL, repo.Spec.Reference, art.Digest)
			}
			var ks kustomizev1.Kustomization
			if err := env.client.Get(ctx, ctrl.ObjectKey{Namespace: p.GetNamespace(), Name: name}, &ks); err != nil {
				t.Fatalf("the Kustomization: %v", err)
			}
			for _, o := range []ctrl.Object{&repo, &ks} {
				if !render.ControlledBy(o, p.GetUID()) {
					t.Errorf("%s %s has no controller reference to the provider: %+v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), o.GetOwnerReferences())
				}
			}
			if ks.Spec.PostBuild == nil || (p.GetSpec().ConfigSecret != nil && len(ks.Spec.PostBuild.SubstituteFrom) != 1) {
				t.Errorf("Kustomization postBuild = %+v, want the config Secret by reference", ks.Spec.PostBuild)
			}
			for _, o := range []any{repo, ks} {
				if strings.Contains(toJSON(t, o), secretMarker) {
					t.Errorf("a Flux object carries the config Secret's value: %s", toJSON(t, o))
				}
			}
			for _, e := range env.recordedEvents() {
				if strings.HasPrefix(e, corev1.EventTypeWarning) || strings.Contains(e, secretMarker) {
					t.Errorf("event %q", e)
				}
			}

			before := len(env.fluxWrites())
			if _, err := env.reconcile(got); err != nil {
				t.Fatal(err)
			}
			if after := env.fluxWrites(); len(after) != before {
				t.Errorf("a second reconcile with nothing changed wrote %v", after[before:])
			}
		})
	}
}

// inventoryObject is clusterctl's inventory Provider recording version.
func inventoryObject(namespace, name, version string) *unstructured.Unstructured {
	inv := &unstructured.Unstructured{Object: map[string]any{"providerName": name, "type": "CoreProvider", "version": version}}
	inv.SetGroupVersionKind(providerplan.InventoryGVK)
	inv.SetNamespace(namespace)
	inv.SetName(name)
	return inv
}

// TestFetchAhead: a provider nothing has been applied from yet has its
// OCIRepository written as soon as its artifact is resolved and its
// contract read, so Flux fetches while preflight waits (here for the core
// provider's contract); the write after the checks finds it as it is. An
// installed provider's source moves only once the new version passed
// every check: its Kustomization would apply whatever the source holds.
func TestFetchAhead(t *testing.T) {
	ctx := context.Background()
	key := ctrl.ObjectKey{Namespace: "capd-system", Name: "infrastructure-docker"}
	source := func(env *fakeEnv) *sourcev1.OCIRepository {
		t.Helper()
		var repo sourcev1.OCIRepository
		if err := env.client.Get(ctx, key, &repo); err != nil {
			t.Fatalf("the OCIRepository: %v", err)
		}
		return &repo
	}
	writes := func(env *fakeEnv, from int) []string {
		var out []string
		for _, w := range env.fluxWrites()[from:] {
			out = append(out, w.String())
		}
		return out
	}

	t.Run("first install", func(t *testing.T) {
		reg := registrytest.New(t, registrytest.Options{})
		art := pushDocker(t, reg, "v1.14.2", "v1beta2")
		core := installedCore("v1beta2")
		core.Status = v1alpha1.ProviderStatus{} // its preflight has not passed yet
		docker := dockerProvider(art.URL, "v1.14.2")
		docker.Spec.Variables = map[string]string{"DOCKER_TOKEN": "t", "DOCKER_REGION": "r"}
		env := newFakeEnv(t, kindFor(docker), core, docker)

		if _, err := env.reconcile(docker); err != nil {
			t.Fatal(err)
		}
		if c := condition(env.get(docker), v1alpha1.CompatibleCondition); c == nil || c.Reason != v1alpha1.WaitingForCoreReason {
			t.Fatalf("Compatible = %+v, want waiting for the core", c)
		}
		if got, want := writes(env, 0), []string{"apply OCIRepository " + key.String()}; !slices.Equal(got, want) {
			t.Fatalf("while waiting for the core the reconciler wrote %v, want %v", got, want)
		}
		if d := source(env).Spec.Reference; d == nil || d.Digest != art.Digest {
			t.Errorf("the OCIRepository is at %+v, want pinned to %s", d, art.Digest)
		}

		// The core's preflight passes: the provider's checks pass too, and
		// the source written ahead is the one the Flux objects need.
		if err := env.client.Get(ctx, ctrl.ObjectKeyFromObject(core), core); err != nil {
			t.Fatal(err)
		}
		core.Status = installedCore("v1beta2").Status
		if err := env.client.Status().Update(ctx, core); err != nil {
			t.Fatal(err)
		}
		before := len(env.fluxWrites())
		if _, err := env.reconcile(env.get(docker)); err != nil {
			t.Fatal(err)
		}
		if c := condition(env.get(docker), v1alpha1.CompatibleCondition); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("Compatible = %+v, want True", c)
		}
		after := writes(env, before)
		if !slices.Contains(after, "apply Kustomization "+key.String()) || slices.Contains(after, "apply OCIRepository "+key.String()) {
			t.Errorf("once the checks passed the reconciler wrote %v: want the Kustomization, and the OCIRepository left as it was written ahead", after)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		reg := registrytest.New(t, registrytest.Options{})
		installed := pushDocker(t, reg, "v1.14.2", "v1beta2")
		docker := dockerProvider(installed.URL, "v1.14.2")
		docker.Spec.Variables = map[string]string{"DOCKER_TOKEN": "t", "DOCKER_REGION": "r"}
		env := newFakeEnv(t, kindFor(docker), installedCore("v1beta2"), docker)
		if _, err := env.reconcile(docker); err != nil {
			t.Fatal(err)
		}
		if d := source(env).Spec.Reference; d == nil || d.Digest != installed.Digest {
			t.Fatalf("installed: the OCIRepository is at %+v, want %s", d, installed.Digest)
		}

		// v1.15.0 resolves and has a contract, the core's does not match.
		pushDocker(t, reg, "v1.15.0", "v1beta3")
		upgrade := env.get(docker)
		upgrade.GetSpec().Version = "v1.15.0"
		upgrade.SetGeneration(upgrade.GetGeneration() + 1)
		if err := env.client.Update(ctx, upgrade.(ctrl.Object)); err != nil {
			t.Fatal(err)
		}
		before := len(env.fluxWrites())
		if _, err := env.reconcile(env.get(docker)); err != nil {
			t.Fatal(err)
		}
		if c := condition(env.get(docker), v1alpha1.CompatibleCondition); c == nil || c.Reason != v1alpha1.IncompatibleContractReason {
			t.Fatalf("Compatible = %+v, want the incompatible contract refused", c)
		}
		if got := writes(env, before); len(got) > 0 {
			t.Errorf("a refused upgrade wrote %v", got)
		}
		if d := source(env).Spec.Reference; d == nil || d.Digest != installed.Digest {
			t.Errorf("a refused upgrade moved the OCIRepository to %+v; want it at the installed %s", d, installed.Digest)
		}
	})
}
