package plane

import (
	"slices"
	"testing"
)

func TestPodArgumentsMapToTheProcess(t *testing.T) {
	for _, tc := range []struct{ image, repo, tag string }{
		{"ghcr.io/fluxcd/kustomize-controller:v1.9.5", "ghcr.io/fluxcd/kustomize-controller", "v1.9.5"},
		{"127.0.0.1:5000/capwright/capwright-manager@sha256:abc", "127.0.0.1:5000/capwright/capwright-manager", "sha256:abc"},
		{"127.0.0.1:5000/capwright/capwright-manager", "127.0.0.1:5000/capwright/capwright-manager", "latest"},
	} {
		if repo, tag := splitImage(tc.image); repo != tc.repo || tag != tc.tag {
			t.Errorf("splitImage(%q) = %q, %q; want %q, %q", tc.image, repo, tag, tc.repo, tc.tag)
		}
	}

	vars := map[string]string{"RUNTIME_NAMESPACE": "flux-system"}
	if got := expandVars("--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local.", vars); got != "--storage-adv-addr=source-controller.flux-system.svc.cluster.local." {
		t.Errorf("expandVars: %q", got)
	}
	if got := expandVars("$(UNKNOWN)", vars); got != "$(UNKNOWN)" {
		t.Errorf("an unknown variable is kept as the kubelet keeps it: %q", got)
	}

	mounts := mountMap{"/data": "/run/pods/data", "/tmp/k8s-webhook-server/serving-certs": "/run/pods/cert"}
	for in, want := range map[string]string{
		"--artifact-storage-path=/data":         "--artifact-storage-path=/run/pods/data",
		"/data/x":                               "/run/pods/data/x",
		"--other=/database":                     "--other=/database",
		"/tmp/k8s-webhook-server/serving-certs": "/run/pods/cert",
	} {
		if got := mounts.rewrite(in); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}

	args := setFlags([]string{"--watch-all-namespaces=true", "--enable-leader-election", "--events-addr=http://x/"},
		"--enable-leader-election=false", "--health-addr=127.0.0.1:1")
	want := []string{"--watch-all-namespaces=true", "--events-addr=http://x/", "--enable-leader-election=false", "--health-addr=127.0.0.1:1"}
	if !slices.Equal(args, want) {
		t.Errorf("setFlags = %q, want %q", args, want)
	}
	if !hasFlag(args, "--events-addr") || hasFlag(args, "--events") {
		t.Errorf("hasFlag matches whole flag names only")
	}
}
