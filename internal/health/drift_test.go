package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

func TestDriftCorrection(t *testing.T) {
	const installed = "sha256:1111"
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 27, 12, 0, s, 0, time.UTC)) }
	changeSet := "ClusterRole/capi-kubeadm-bootstrap-manager-role created\nDeployment/kubeadm-bootstrap/capi-kubeadm-bootstrap-controller-manager configured"
	previous := &v1alpha1.DriftCorrection{Time: at(20), Revision: installed, Objects: []string{"Service/a/b configured"}}
	for _, tc := range []struct {
		name     string
		previous *v1alpha1.DriftCorrection
		changes  []FluxChange
		want     *v1alpha1.DriftCorrection
	}{
		{name: "nothing reported", want: nil},
		{name: "the install's own change set, before Installed turned True",
			changes: []FluxChange{{Time: at(5), Revision: installed, Message: changeSet}, {Time: at(10), Revision: installed, Message: changeSet}}},
		{name: "another revision (an upgrade under way)",
			changes: []FluxChange{{Time: at(30), Revision: "sha256:2222", Message: changeSet}}},
		{name: "a health check, no object changed",
			changes: []FluxChange{{Time: at(30), Revision: installed, Message: "Health check passed in 5s"}}},
		{name: "the installed revision applied again, changing objects",
			changes: []FluxChange{{Time: at(30), Revision: "v1.14.2@" + installed, Message: changeSet}},
			want:    &v1alpha1.DriftCorrection{Time: at(30), Revision: "v1.14.2@" + installed, Objects: strings.Split(changeSet, "\n")}},
		{name: "the newest of two", previous: previous,
			changes: []FluxChange{{Time: at(40), Revision: installed, Message: changeSet}, {Time: at(30), Revision: installed, Message: "Secret/a/b created"}},
			want:    &v1alpha1.DriftCorrection{Time: at(40), Revision: installed, Objects: strings.Split(changeSet, "\n")}},
		{name: "nothing newer than the last one recorded", previous: previous,
			changes: []FluxChange{{Time: at(20), Revision: installed, Message: changeSet}},
			want:    previous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DriftCorrection(tc.previous, tc.changes, installed, at(10))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDriftCorrectionListsAtMost20Objects(t *testing.T) {
	var lines []string
	for i := range 25 {
		lines = append(lines, fmt.Sprintf("ConfigMap/ns/c%d configured", i))
	}
	got := DriftCorrection(nil, []FluxChange{{Time: metav1.Now(), Revision: "sha256:1", Message: strings.Join(lines, "\n")}}, "sha256:1", metav1.NewTime(time.Now().Add(-time.Hour)))
	if len(got.Objects) != 21 || got.Objects[20] != "and 5 more" {
		t.Errorf("objects %q", got.Objects)
	}
}
