package render

import (
	"strings"
	"testing"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// TestRefusals covers specs Flux cannot carry out and inputs preflight
// should have completed; every message names the field and what to do.
func TestRefusals(t *testing.T) {
	one := int32(1)
	chart := &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: "oci://ghcr.io/example/charts/provider"}}}
	tests := []struct {
		name   string
		change func(*v1alpha1.CoreProvider, *Input)
		want   []string // all must appear in the error
	}{
		{"config Secret in another namespace", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.ConfigSecret = &v1alpha1.SecretReference{Name: "vars", Namespace: "elsewhere"}
		}, []string{"spec.configSecret", "elsewhere/vars", "copy the Secret into capi-system"}},
		{"clusterctl variables for a chart", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Source, p.Spec.Variables = chart, map[string]string{"A": "b"}
		}, []string{"spec.variables", "spec.source.chart.values"}},
		{"manager settings for a chart", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Source, p.Spec.Manager = chart, &v1alpha1.ManagerSpec{Verbosity: &one}
		}, []string{"spec.manager", "values"}},
		{"deployment settings for a chart", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Source, p.Spec.Deployment = chart, &v1alpha1.DeploymentSpec{Replicas: &one}
		}, []string{"spec.deployment", "values"}},
		{"both oci and chart", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Source = &v1alpha1.ProviderSource{Chart: chart.Chart, OCI: &v1alpha1.OCISource{}}
		}, []string{"spec.source", "oci", "chart"}},
		{"the same flag twice", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Manager = &v1alpha1.ManagerSpec{Verbosity: &one, AdditionalArgs: map[string]string{"--v": "3"}}
		}, []string{"spec.manager.verbosity", "spec.manager.additionalArgs", "--v"}},
		{"the same flag in container args and manager", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Manager = &v1alpha1.ManagerSpec{FeatureGates: map[string]bool{"A": true}}
			p.Spec.Deployment = &v1alpha1.DeploymentSpec{Containers: []v1alpha1.ContainerSpec{{Name: "manager", Args: map[string]string{"feature-gates": "B=true"}}}}
		}, []string{"spec.deployment.containers[0].args", "spec.manager.featureGates", "--feature-gates"}},
		{"not a flag name", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Manager = &v1alpha1.ManagerSpec{AdditionalArgs: map[string]string{"v=3": ""}}
		}, []string{"spec.manager.additionalArgs", "v=3"}},
		{"args of a container render does not know", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Deployment = &v1alpha1.DeploymentSpec{Containers: []v1alpha1.ContainerSpec{{Name: "kube-rbac-proxy", Args: map[string]string{"v": "3"}}}}
		}, []string{"spec.deployment.containers[0].args", "kube-rbac-proxy", "spec.patches"}},
		{"a container listed twice", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Spec.Deployment = &v1alpha1.DeploymentSpec{Containers: []v1alpha1.ContainerSpec{{Name: "manager"}, {Name: "manager"}}}
		}, []string{"spec.deployment.containers[1]", "merge"}},
		{"name too long for a Flux label", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Name = strings.Repeat("x", 60)
		}, []string{"metadata.name", "shorter"}},
		{"name too long for a Helm release", func(p *v1alpha1.CoreProvider, _ *Input) {
			p.Name, p.Spec.Source = strings.Repeat("x", 50), chart
		}, []string{"metadata.name", "Helm", "shorter"}},
		{"no digest", func(_ *v1alpha1.CoreProvider, in *Input) { in.Digest = "" }, []string{"digest", "preflight"}},
		{"not a sha256 digest", func(_ *v1alpha1.CoreProvider, in *Input) { in.Digest = "sha256:abc" }, []string{"sha256:abc"}},
		{"another version checked", func(_ *v1alpha1.CoreProvider, in *Input) { in.Tag = "v1.13.6" }, []string{"v1.13.6", "spec.version"}},
		{"no components file", func(_ *v1alpha1.CoreProvider, in *Input) { in.ComponentsFile = "" }, []string{"components file", "preflight"}},
		{"wrong kind", func(_ *v1alpha1.CoreProvider, in *Input) { in.Kind = "BootstrapProvider" }, []string{"BootstrapProvider", "CoreProvider"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := coreProvider()
			in := inputFor(t, p)
			tt.change(p, &in)
			_, err := Provider(in)
			if err == nil {
				t.Fatalf("rendered; want an error naming %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestInputKindMayBeGivenOrLeftOut(t *testing.T) {
	for _, kind := range []string{"", "CoreProvider"} {
		in := inputFor(t, coreProvider())
		in.Kind = kind
		out, err := Provider(in)
		if err != nil {
			t.Fatalf("Kind %q: %v", kind, err)
		}
		if got := out.Kustomization.OwnerReferences[0].Kind; got != "CoreProvider" {
			t.Errorf("Kind %q: owner kind %s", kind, got)
		}
	}
	if _, err := Provider(Input{}); err == nil {
		t.Errorf("no provider rendered without an error")
	}
}
