package main

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/controller/provider"
)

// statusKind is a kind `capwright status` shows: how users may name it and
// how to list it.
type statusKind struct {
	Kind string
	// resource is the plural, lower case, as the CRD names it.
	resource   string
	group      string
	shortName  string
	namespaced bool
	newList    func() client.ObjectList
}

// statusKinds are the kinds Capwright manages, in the order the tree shows
// them: the providers (core first), Tenants, then the contract kinds.
var statusKinds = append(providerStatusKinds(),
	statusKind{Kind: tenancyv1alpha1.TenantKind, resource: "tenants", group: tenancyv1alpha1.GroupVersion.Group, shortName: "tnt",
		newList: func() client.ObjectList { return &tenancyv1alpha1.TenantList{} }},
	statusKind{Kind: clustersv1alpha1.ControlPlaneKind, resource: "capwrightcontrolplanes", group: clustersv1alpha1.GroupVersion.Group, shortName: "cwcp", namespaced: true,
		newList: func() client.ObjectList { return &clustersv1alpha1.CapwrightControlPlaneList{} }},
	statusKind{Kind: clustersv1alpha1.ClusterKind, resource: "capwrightclusters", group: clustersv1alpha1.GroupVersion.Group, shortName: "cwc", namespaced: true,
		newList: func() client.ObjectList { return &clustersv1alpha1.CapwrightClusterList{} }},
)

// providerShortNames are the short names status takes for the provider
// kinds.
var providerShortNames = map[string]string{
	"CoreProvider": "corep", "BootstrapProvider": "bootp", "ControlPlaneProvider": "cpp", "InfrastructureProvider": "infrap",
	"IPAMProvider": "ipamp", "RuntimeExtensionProvider": "rxp", "AddonProvider": "addonp",
}

// providerStatusKinds are the seven provider kinds, as the manager's
// provider controllers have them (core first).
func providerStatusKinds() []statusKind {
	var out []statusKind
	for _, k := range provider.Kinds() {
		out = append(out, providerKind(k.Name, providerShortNames[k.Name], func() client.ObjectList { return k.NewList() }))
	}
	return out
}

func providerKind(kind, short string, newList func() client.ObjectList) statusKind {
	return statusKind{Kind: kind, resource: strings.ToLower(kind) + "s", group: v1alpha1.GroupVersion.Group, shortName: short, namespaced: true, newList: newList}
}

// crd is the name of the kind's CustomResourceDefinition.
func (k statusKind) crd() string { return k.resource + "." + k.group }

// lookupStatusKind finds a kind by its name, plural or short name, in any
// case, as kubectl does.
func lookupStatusKind(name string) (statusKind, bool) {
	name = strings.ToLower(name)
	for _, k := range statusKinds {
		if name == strings.ToLower(k.Kind) || name == k.resource || name == k.shortName || name == k.crd() {
			return k, true
		}
	}
	return statusKind{}, false
}

// statusKindNames are the kinds as the argument takes them, lower case.
func statusKindNames() []string {
	out := make([]string, len(statusKinds))
	for i, k := range statusKinds {
		out[i] = strings.ToLower(k.Kind)
	}
	return out
}

// parseStatusArg reads KIND/NAME.
func parseStatusArg(arg string) (statusKind, string, error) {
	kindName, name, ok := strings.Cut(arg, "/")
	if !ok || kindName == "" || name == "" || strings.Contains(name, "/") {
		return statusKind{}, "", usageErrorf("%q: give KIND/NAME, e.g. coreprovider/cluster-api or tenant/team-a (the namespace goes in -n)", arg)
	}
	k, found := lookupStatusKind(kindName)
	if !found {
		return statusKind{}, "", usageErrorf("%q: unknown kind %q; the kinds are %s (or their short names: %s)", arg, kindName,
			strings.Join(statusKindNames(), ", "), strings.Join(shortNames(), ", "))
	}
	return k, name, nil
}

func shortNames() []string {
	out := make([]string, 0, len(statusKinds))
	for _, k := range statusKinds {
		out = append(out, k.shortName)
	}
	slices.Sort(out)
	return out
}

// notFoundInClusterError is a KIND/NAME the cluster does not have.
type notFoundInClusterError struct {
	kind, namespace, name string
}

func (e *notFoundInClusterError) Error() string {
	if e.namespace != "" {
		return fmt.Sprintf("%s %s/%s not found (kubectl get %s -A lists them)", e.kind, e.namespace, e.name, strings.ToLower(e.kind))
	}
	return fmt.Sprintf("%s %s not found in any namespace (kubectl get %s -A lists them)", e.kind, e.name, strings.ToLower(e.kind))
}

// notInstalledError is a cluster that does not serve Capwright's kinds.
type notInstalledError struct {
	context string
	missing []string
}

func (e *notInstalledError) Error() string {
	missing := strings.Join(e.missing, ", ")
	if len(e.missing) > 2 {
		missing = fmt.Sprintf("%s and %d other Capwright kinds", e.missing[0], len(e.missing)-1)
	}
	return fmt.Sprintf("context %q: the cluster does not serve %s: Capwright is not installed there (its CRDs are missing); install it as docs/install.md says (Flux applies Capwright's release), or pick the management cluster with --context or --kubeconfig",
		e.context, missing)
}

// notReadyObjects names what is not Ready; wrapped in a notReadyError,
// it is exit code 8.
type notReadyObjects struct{ objects []*statusNode }

func (e *notReadyObjects) Error() string {
	const most = 5
	names := make([]string, 0, most)
	for i, n := range e.objects {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(e.objects)-most))
			break
		}
		what := n.ref() + " is " + readyWord(n)
		if n.Reason != "" {
			what += " (" + n.Reason
			if n.Message != "" {
				what += ": " + oneLine(n.Message)
			}
			what += ")"
		}
		names = append(names, what)
	}
	return fmt.Sprintf("%d of the objects shown are not Ready: %s", len(e.objects), strings.Join(names, "; "))
}

func readyWord(n *statusNode) string {
	if n.Ready == "False" {
		return "not Ready"
	}
	return "not Ready yet"
}
