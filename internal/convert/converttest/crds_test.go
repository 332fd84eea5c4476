package converttest

import (
	"strings"
	"testing"
)

// TestValidateRefusesWhatTheAPIServerRefuses: the checker is only worth
// something if it fails; each case breaks one kind of rule.
func TestValidateRefusesWhatTheAPIServerRefuses(t *testing.T) {
	crds, err := LoadCRDs("../../../manifests/crd/bases/providers.capwright.io_*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const head = "apiVersion: providers.capwright.io/v1alpha1\nkind: InfrastructureProvider\nmetadata:\n  name: aws\n  namespace: capa-system\n"
	valid := head + "spec:\n  version: v2.10.0\n  source:\n    release:\n      url: https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml\n"
	if errs := crds.Validate([]byte(valid)); len(errs) > 0 {
		t.Fatalf("a valid provider is refused: %v", errs)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"schema pattern (CEL)", head + "spec:\n  version: 2.10.0\n", "semantic version"},
		{"required field", head + "spec:\n  source:\n    release:\n      url: https://example.com/x\n", "version"},
		{"unknown field", head + "spec:\n  version: v2.10.0\n  fetchConfig:\n    url: https://example.com\n", "spec.fetchConfig: unknown field"},
		{"type", head + "spec:\n  version: v2.10.0\n  deployment:\n    replicas: two\n", "replicas"},
		{"CEL on a parent", head + "spec:\n  version: v2.10.0\n  source:\n    oci:\n      url: oci://example.com/x\n    release:\n      url: https://example.com/x\n", "exactly one of oci, chart or release"},
		{"CEL on the root", strings.Replace(strings.Replace(head, "InfrastructureProvider", "CoreProvider", 1), "name: aws", "name: capi", 1) + "spec:\n  version: v1.14.2\n", "must be named cluster-api"},
		{"CEL on a map", head + "spec:\n  version: v2.10.0\n  variables:\n    1BAD: x\n", "clusterctl variable names"},
		{"enum", head + "spec:\n  version: v2.10.0\n  dependsOn:\n  - kind: Deployment\n    name: x\n", "dependsOn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := crds.Validate([]byte(tc.doc))
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tc.want) {
				t.Errorf("want an error mentioning %q, got %v", tc.want, msgs)
			}
		})
	}
}
