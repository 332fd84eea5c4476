package apply

import "testing"

func TestSubset(t *testing.T) {
	have := map[string]any{
		"spec": map[string]any{
			"interval": "10m0s", "prune": true, "provider": "generic", // provider: a server default
			"patches": []any{map[string]any{"patch": "a"}, map[string]any{"patch": "b"}},
		},
		"status": map[string]any{"observedGeneration": int64(3)},
	}
	tests := []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"fields the server defaulted are ignored", map[string]any{"spec": map[string]any{"interval": "10m0s", "prune": true}}, true},
		{"a changed field is seen", map[string]any{"spec": map[string]any{"interval": "5m0s"}}, false},
		{"a missing field is seen", map[string]any{"spec": map[string]any{"suspend": true}}, false},
		{"lists compare whole", map[string]any{"spec": map[string]any{"patches": []any{map[string]any{"patch": "a"}}}}, false},
		{"equal lists", map[string]any{"spec": map[string]any{"patches": []any{map[string]any{"patch": "a"}, map[string]any{"patch": "b"}}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Subset(tt.want, have); got != tt.ok {
				t.Fatalf("Subset = %v, want %v", got, tt.ok)
			}
		})
	}
}
