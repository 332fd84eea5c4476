package main

import (
	"fmt"
	"strings"

	"github.com/capwright/capwright/internal/status"
)

// parseStatusArg reads KIND/NAME.
func parseStatusArg(arg string) (status.Kind, string, error) {
	kindName, name, ok := strings.Cut(arg, "/")
	if !ok || kindName == "" || name == "" || strings.Contains(name, "/") {
		return status.Kind{}, "", usageErrorf("%q: give KIND/NAME, e.g. coreprovider/cluster-api or tenant/team-a (the namespace goes in -n)", arg)
	}
	k, found := status.Lookup(kindName)
	if !found {
		return status.Kind{}, "", usageErrorf("%q: unknown kind %q; the kinds are %s (or their short names: %s)", arg, kindName,
			strings.Join(status.KindNames(), ", "), strings.Join(status.ShortNames(), ", "))
	}
	return k, name, nil
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
type notReadyObjects struct{ objects []*status.Node }

func (e *notReadyObjects) Error() string {
	const most = 5
	names := make([]string, 0, most)
	for i, n := range e.objects {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(e.objects)-most))
			break
		}
		what := n.Ref() + " is " + readyWord(n)
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

func readyWord(n *status.Node) string {
	if n.Ready == "False" {
		return "not Ready"
	}
	return "not Ready yet"
}
