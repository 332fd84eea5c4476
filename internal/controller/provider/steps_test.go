package provider

import (
	"testing"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// An event carries the revision it is about: the one preflight refused,
// not the one still installed.
func TestEventMetadataNamesTheAttemptedRevision(t *testing.T) {
	const key = "providers.capwright.io/revision"
	p := &v1alpha1.InfrastructureProvider{}
	steps := providerSteps{r: &Reconciler{}}
	if m := steps.EventMetadata(p); m != nil {
		t.Errorf("nothing resolved yet: metadata %v, want none", m)
	}
	p.Status.Artifact = &v1alpha1.ResolvedArtifact{Revision: "v1.0.0@sha256:aaa"}
	if got := steps.EventMetadata(p)[key]; got != "v1.0.0@sha256:aaa" {
		t.Errorf("installed only: revision %q, want the installed one", got)
	}
	p.Status.LastAttemptedRevision = "v2.0.0@sha256:bbb"
	if got := steps.EventMetadata(p)[key]; got != "v2.0.0@sha256:bbb" {
		t.Errorf("v2.0.0 refused: revision %q, want the refused one", got)
	}
}
