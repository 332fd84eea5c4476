package clusterctl_test

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl"
)

func TestCheckUpgrade(t *testing.T) {
	tests := []struct {
		installed, desired string
		wantErr            string // "" means allowed
	}{
		{"", "v1.14.2", ""},
		{"v1.13.6", "v1.14.2", ""},
		{"v1.14.2", "v1.14.2", ""},
		{"v1.14.0", "v1.14.2", ""},
		{"v1.14.2", "v1.14.0", ""}, // patch downgrade within a minor
		{"v1.14.2", "v2.0.0", ""},
		{"v1.14.2", "v1.13.6", "set the version back to v1.14.x or later"},
		{"v2.0.0", "v1.14.2", "crosses minor versions (v2.0 → v1.14)"},
		{"v1.14.2", "latest", `"latest" is not a semantic version`},
		{"", "v1.14", `"v1.14" is not a semantic version`},
		{"garbage", "v1.14.2", "installed version"},
	}
	for _, tt := range tests {
		t.Run(tt.installed+"->"+tt.desired, func(t *testing.T) {
			err := clusterctl.CheckUpgrade(tt.installed, tt.desired)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("CheckUpgrade(%q, %q) = %v, want allowed", tt.installed, tt.desired, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("CheckUpgrade(%q, %q) = %v, want an error containing %q", tt.installed, tt.desired, err, tt.wantErr)
			}
		})
	}
}
