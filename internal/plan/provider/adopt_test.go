package provider

import (
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
	"github.com/capwright/capwright/internal/plan"
)

// existing is a live object of the core components (its Deployment
// unless kind says otherwise) with the given metadata.
func existing(kind, namespace, name string, mutate func(*ExistingObject)) ExistingObject {
	o := ExistingObject{PartialObjectMetadata: metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: "live-uid"}}}
	if mutate != nil {
		mutate(&o)
	}
	return o
}

const clusterctlRecord = "clusterctl's inventory Provider capi-system/cluster-api"

// TestAdoptionRefusals: what a first install over an existing
// installation refuses, with the exact message, and that a refused plan
// writes nothing.
func TestAdoptionRefusals(t *testing.T) {
	for _, tt := range []struct {
		name    string
		facts   func(t testing.TB) Facts
		reason  string
		status  metav1.ConditionStatus
		stalls  bool
		retry   time.Duration
		message string
	}{
		{name: "installed elsewhere by clusterctl", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Installations = []Installation{{Namespace: "capi-old", Version: "v1.14.2", By: ByClusterctl, Record: "clusterctl's inventory Provider capi-old/cluster-api"}}
			return f
		}, reason: v1alpha1.InstalledElsewhereReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: `the core provider "cluster-api" is installed in namespace capi-old already (v1.14.2, installed by clusterctl: clusterctl's inventory Provider capi-old/cluster-api); a cluster runs each provider once, and installing it into namespace capi-system too would run two controllers over the same CRDs and webhooks. To adopt that installation, create CoreProvider cluster-api in namespace capi-old instead of capi-system (and delete this one); see docs/migrate.md. Nothing was changed`},
		{name: "installed elsewhere by cluster-api-operator", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.Installations = []Installation{{Namespace: "operator-bootstrap", Version: "v1.14.2", By: ByOperator,
				Record: "its BootstrapProvider operator-bootstrap/kubeadm, operator.cluster.x-k8s.io/v1alpha2"}}
			return f
		}, reason: v1alpha1.InstalledElsewhereReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: `the bootstrap provider "kubeadm" is installed in namespace operator-bootstrap already (v1.14.2, installed by cluster-api-operator: its BootstrapProvider operator-bootstrap/kubeadm, operator.cluster.x-k8s.io/v1alpha2); a cluster runs each provider once, and installing it into namespace capi-kubeadm-bootstrap-system too would run two controllers over the same CRDs and webhooks. To adopt that installation, create BootstrapProvider kubeadm in namespace operator-bootstrap instead of capi-kubeadm-bootstrap-system (and delete this one); see docs/migrate.md. Nothing was changed`},
		{name: "downgrade of what cluster-api-operator installed here", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Installations = []Installation{{Namespace: "capi-system", Version: "v1.15.0", By: ByOperator, Record: "its CoreProvider capi-system/cluster-api, operator.cluster.x-k8s.io/v1alpha2"}}
			return f
		}, reason: v1alpha1.DowngradeReason, status: metav1.ConditionFalse, stalls: true, retry: 10 * time.Minute,
			message: "(v1.15.0 is what its CoreProvider capi-system/cluster-api, operator.cluster.x-k8s.io/v1alpha2 records as installed; status.installedVersion is empty)"},
		{name: "owned by cluster-api-operator", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Existing = []ExistingObject{
				existing("Deployment", "capi-system", "capi-controller-manager", func(o *ExistingObject) {
					o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "operator.cluster.x-k8s.io/v1alpha2", Kind: "CoreProvider", Name: "cluster-api", UID: "op"}}
				}),
				existing("Service", "capi-system", "capi-webhook-service", func(o *ExistingObject) {
					o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "operator.cluster.x-k8s.io/v1alpha2", Kind: "CoreProvider", Name: "cluster-api", UID: "op"}}
				}),
			}
			return f
		}, reason: v1alpha1.OwnedByAnotherToolReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "cluster-api v1.14.2 would take over objects another tool manages: Deployment capi-system/capi-controller-manager is owned by cluster-api-operator's CoreProvider capi-system/cluster-api (an owner reference); stop cluster-api-operator and remove its owner references and finalizers from the provider's objects first, as docs/migrate.md#taking-over-from-cluster-api-operator says: while the reference is there, deleting that CoreProvider makes Kubernetes' garbage collector delete the object (and 1 more of its objects are another tool's). Nothing was applied"},
		{name: "controlled by something", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Existing = []ExistingObject{existing("Deployment", "capi-system", "capi-controller-manager", func(o *ExistingObject) {
				o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Bundle", Name: "capi", UID: "b", Controller: new(true)}}
			})}
			return f
		}, reason: v1alpha1.OwnedByAnotherToolReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "cluster-api v1.14.2 would take over objects another tool manages: Deployment capi-system/capi-controller-manager is controlled by Bundle capi (example.com/v1, a controller owner reference); take it out of what controls it, or remove the owner reference if nothing should control it. Nothing was applied"},
		{name: "applied by another Kustomization", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Existing = []ExistingObject{existing("CustomResourceDefinition", "", "clusters.cluster.x-k8s.io", func(o *ExistingObject) {
				o.Labels = map[string]string{KustomizationNameLabel: "capi", KustomizationNamespaceLabel: "flux-system"}
				o.InKustomization = true
			})}
			return f
		}, reason: v1alpha1.OwnedByAnotherToolReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "cluster-api v1.14.2 would take over objects another tool manages: CustomResourceDefinition clusters.cluster.x-k8s.io is applied by Flux Kustomization flux-system/capi; annotate it kustomize.toolkit.fluxcd.io/prune=disabled and remove it from that Kustomization's source, so that Flux leaves it in place for this provider. Nothing was applied"},
		{name: "in a Helm release", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Existing = []ExistingObject{existing("Deployment", "capi-system", "capi-controller-manager", func(o *ExistingObject) {
				o.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.toolkit.fluxcd.io/name": "capi", "helm.toolkit.fluxcd.io/namespace": "flux-system"}
				o.Annotations = map[string]string{HelmReleaseNameAnnotation: "capi", HelmReleaseNamespaceAnnotation: "capi-system"}
				o.InHelmRelease = true
			})}
			return f
		}, reason: v1alpha1.OwnedByAnotherToolReason, status: metav1.ConditionFalse, stalls: true, retry: time.Minute,
			message: "cluster-api v1.14.2 would take over objects another tool manages: Deployment capi-system/capi-controller-manager belongs to Helm release capi-system/capi (Flux HelmRelease flux-system/capi); take it out of that release without deleting it (annotate it helm.sh/resource-policy=keep, then uninstall the release, or remove it from the chart and its meta.helm.sh/release-name annotation). Nothing was applied"},
		{name: "objects unreadable", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.ExistingError = "reading Deployment capi-system/capi-controller-manager: the server is currently unable to handle the request"
			return f
		}, reason: v1alpha1.ReconcilingReason, status: metav1.ConditionUnknown, retry: 30 * time.Second,
			message: "cannot read the objects cluster-api v1.14.2 would apply, to check that no other tool manages them: reading Deployment capi-system/capi-controller-manager: the server is currently unable to handle the request"},
		{name: "core installed by clusterctl, no CoreProvider", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.Core = Core{Installed: &Installation{Namespace: "capi-system", Version: "v1.14.2", By: ByClusterctl, Record: clusterctlRecord}}
			return f
		}, reason: v1alpha1.WaitingForCoreReason, status: metav1.ConditionUnknown, retry: 10 * time.Minute,
			message: "waiting for the core provider: cluster-api v1.14.2 is installed in namespace capi-system by clusterctl (clusterctl's inventory Provider capi-system/cluster-api), and no CoreProvider manages it, so its contract is unknown here: create CoreProvider cluster-api in namespace capi-system with spec.version v1.14.2 to adopt it (docs/migrate.md)"},
		{name: "core refused", facts: func(t testing.TB) Facts {
			f := factsOf(t, bootstrap())
			f.Core.Known, f.Core.Refused = false, "OwnedByAnotherTool: cluster-api v1.14.2 would take over objects another tool manages"
			return f
		}, reason: v1alpha1.WaitingForCoreReason, status: metav1.ConditionUnknown, retry: 10 * time.Minute,
			message: "waiting for CoreProvider capi-system/cluster-api to pass its preflight, which reads its contract; it refuses v1.14.2 now: OwnedByAnotherTool: cluster-api v1.14.2 would take over objects another tool manages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Plan(tt.facts(t))
			r, ok := plan.AsRefusal(err)
			if !ok {
				t.Fatalf("Plan = %v, want a refusal", err)
			}
			t.Logf("%s: %s", r.Reason, r.Message)
			if r.Condition != v1alpha1.CompatibleCondition || r.Reason != tt.reason || r.Status != tt.status || r.Stalls != tt.stalls || r.RetryAfter != tt.retry {
				t.Errorf("refusal = %s %s %s stalls=%v retry=%s, want Compatible %s %s stalls=%v retry=%s",
					r.Condition, r.Status, r.Reason, r.Stalls, r.RetryAfter, tt.status, tt.reason, tt.stalls, tt.retry)
			}
			if !strings.Contains(r.Message, tt.message) {
				t.Errorf("message\n%s\ndoes not say\n%s", r.Message, tt.message)
			}
			if len(d.Sync.Writes) > 0 || d.Passed {
				t.Errorf("a refused plan writes %d objects (passed %v)", len(d.Sync.Writes), d.Passed)
			}
		})
	}
}

// TestAdoptionProceeds: an installation in the provider's own namespace
// is adopted (the Compatible message says so, and the Kustomization is
// written); markers of a tool that no longer holds an object, this
// provider's own Kustomization and plain clusterctl labels refuse
// nothing; a Capwright record where another provider of the same kind
// lives is left to the duplicate check.
func TestAdoptionProceeds(t *testing.T) {
	for _, tt := range []struct {
		name     string
		facts    func(t testing.TB) Facts
		adopting string
	}{
		{name: "clusterctl in the same namespace", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Installations = []Installation{{Namespace: "capi-system", Version: "v1.14.2", By: ByClusterctl, Record: clusterctlRecord}}
			f.Existing = []ExistingObject{existing("Deployment", "capi-system", "capi-controller-manager", func(o *ExistingObject) {
				o.Labels = map[string]string{"cluster.x-k8s.io/provider": "cluster-api", "clusterctl.cluster.x-k8s.io": ""}
			})}
			return f
		}, adopting: "cluster-api v1.14.2 (contract v1beta2) can be installed; adopting v1.14.2 installed by clusterctl (clusterctl's inventory Provider capi-system/cluster-api): Flux takes its objects over in place"},
		{name: "cluster-api-operator in the same namespace, owner references removed", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Installations = []Installation{{Namespace: "capi-system", Version: "v1.14.2", By: ByOperator, Record: "its CoreProvider capi-system/cluster-api, operator.cluster.x-k8s.io/v1alpha2"}}
			f.Existing = []ExistingObject{existing("Deployment", "capi-system", "capi-controller-manager", nil)}
			return f
		}, adopting: "adopting v1.14.2 installed by cluster-api-operator (its CoreProvider capi-system/cluster-api, operator.cluster.x-k8s.io/v1alpha2)"},
		{name: "an older version here, upgraded on adoption", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Installations = []Installation{{Namespace: "capi-system", Version: "v1.14.0", By: ByClusterctl, Record: clusterctlRecord}}
			return f
		}, adopting: "adopting v1.14.0 installed by clusterctl"},
		{name: "stale markers and its own Kustomization", facts: func(t testing.TB) Facts {
			f := factsOf(t, core())
			f.Existing = []ExistingObject{
				existing("CustomResourceDefinition", "", "clusters.cluster.x-k8s.io", func(o *ExistingObject) {
					o.Labels = map[string]string{KustomizationNameLabel: "capi", KustomizationNamespaceLabel: "flux-system"} // no longer in its inventory
				}),
				existing("Deployment", "capi-system", "capi-controller-manager", func(o *ExistingObject) {
					o.Labels = map[string]string{KustomizationNameLabel: "core-cluster-api", KustomizationNamespaceLabel: "capi-system"}
					o.InKustomization = true
				}),
				existing("Service", "capi-system", "capi-webhook-service", func(o *ExistingObject) {
					o.Annotations = map[string]string{HelmReleaseNameAnnotation: "capi", HelmReleaseNamespaceAnnotation: "capi-system"} // uninstalled
					o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "not-a-controller", UID: "c"}}
				}),
			}
			return f
		}},
		{name: "a Capwright record where the duplicate check decides", facts: func(t testing.TB) Facts {
			f := factsOf(t, core(func(p *v1alpha1.CoreProvider) { p.CreationTimestamp = metav1.NewTime(time.Unix(100, 0)) }))
			f.Others = []v1alpha1.Provider{core(func(p *v1alpha1.CoreProvider) {
				p.Namespace, p.UID, p.CreationTimestamp = "newer", "newer-uid", metav1.NewTime(time.Unix(200, 0))
			})}
			f.Installations = []Installation{{Namespace: "newer", Version: "v1.14.2", By: ByCapwright, Record: "clusterctl's inventory Provider newer/cluster-api"}}
			return f
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Plan(tt.facts(t))
			if err != nil {
				t.Fatalf("Plan = %v, want the install to proceed", err)
			}
			if !d.Passed || !writesKustomization(d) {
				t.Errorf("passed %v, Kustomization written %v", d.Passed, writesKustomization(d))
			}
			msg := d.Status.Compatible.Message
			t.Logf("Compatible: %s", msg)
			if tt.adopting == "" && strings.Contains(msg, "adopting") || !strings.Contains(msg, tt.adopting) {
				t.Errorf("Compatible message %q, want it to say %q", msg, tt.adopting)
			}
		})
	}
}

func writesKustomization(d Desired) bool {
	for _, w := range d.Sync.Writes {
		if _, ok := w.Object.(*kustomizev1.Kustomization); ok {
			return true
		}
	}
	return false
}

// TestComponentObjectsOfARealRelease: the objects whose owners are
// checked are the real core components' objects but the Namespace, each
// named as the file names it.
func TestComponentObjectsOfARealRelease(t *testing.T) {
	f := factsOf(t, core())
	refs := ComponentObjects(f)
	all, err := f.Artifact.Checked.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != len(all)-1 || len(refs) < 20 {
		t.Fatalf("%d objects checked of %d in %s, want all but the Namespace", len(refs), len(all), clusterctltest.Current)
	}
	kinds := map[string]int{}
	for _, r := range refs {
		if r.Kind == "Namespace" || r.Name == "" {
			t.Errorf("checked %+v", r)
		}
		kinds[r.Kind]++
	}
	for _, k := range []string{"CustomResourceDefinition", "Deployment", "Service", "ServiceAccount", "ClusterRole", "ValidatingWebhookConfiguration", "Certificate", "Issuer"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the objects checked: %v", k, kinds)
		}
	}
	chartFacts := Facts{Provider: chart(), Kind: "CoreProvider"}
	if refs := ComponentObjects(chartFacts); refs != nil {
		t.Errorf("a chart's objects are Helm's to know: %v", refs)
	}
}
