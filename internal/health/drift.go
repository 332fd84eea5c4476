package health

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// FluxChange is what kustomize-controller reports after an apply that
// changed objects: an event on the Kustomization listing each object it
// created or configured ("Deployment/ns/name configured"), with the
// revision it applied. It says so on every run that changes something,
// also when the revision is the one it applied before: then it put back
// what someone had changed or deleted.
type FluxChange struct {
	Time     metav1.Time
	Revision string
	Message  string
}

// maxDriftObjects bounds the objects a DriftCorrection lists.
const maxDriftObjects = 20

// DriftCorrection is the provider's status.lastDriftCorrection: the newest
// change Flux reported for revision, the installed one, after installedAt
// (when Installed last turned True: changes reported before that are the
// install or upgrade itself), else previous.
func DriftCorrection(previous *v1alpha1.DriftCorrection, changes []FluxChange, revision string, installedAt metav1.Time) *v1alpha1.DriftCorrection {
	latest := previous
	for _, c := range changes {
		if !sameRevision(c.Revision, revision) || !c.Time.After(installedAt.Time) || (latest != nil && !c.Time.After(latest.Time.Time)) {
			continue
		}
		objects := changedObjects(c.Message)
		if len(objects) == 0 {
			continue
		}
		latest = &v1alpha1.DriftCorrection{Time: c.Time, Revision: c.Revision, Objects: objects}
	}
	return latest
}

// changedObjects are the lines of a Flux change set naming an object it
// created or configured; other messages (a health check passed) name
// none.
func changedObjects(message string) []string {
	var out []string
	for _, line := range strings.Split(message, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, " created") || strings.HasSuffix(line, " configured") {
			out = append(out, line)
		}
	}
	if len(out) > maxDriftObjects {
		out = append(out[:maxDriftObjects], fmt.Sprintf("and %d more", len(out)-maxDriftObjects))
	}
	return out
}
