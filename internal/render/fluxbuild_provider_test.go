package render

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// These tests run what render produces through Flux's own source filter,
// kustomize generator, build and substitution over the real Cluster API
// components, and look at what Flux would apply.

func TestFluxAppliesOnlyTheComponentsFile(t *testing.T) {
	out, err := Provider(inputFor(t, coreProvider()))
	if err != nil {
		t.Fatal(err)
	}
	files := artifactFiles(t, "core-components.yaml")
	files["cluster-template.yaml"] = []byte("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: ${CLUSTER_NAME}\n")
	if got := storedFiles(t, out, files); !reflect.DeepEqual(got, []string{"core-components.yaml"}) {
		t.Errorf("source-controller would store %v, want only core-components.yaml", got)
	}

	// Why the ignore rule exists: without it the generated kustomization
	// takes metadata.yaml, which has no name, and Flux cannot build.
	out.OCIRepository.Spec.Ignore = nil
	if _, err := tryFluxBuild(t, out, artifactFiles(t, "core-components.yaml")); err == nil {
		t.Errorf("without the ignore rule Flux built the artifact including metadata.yaml; the rule may be unnecessary")
	}
}

func TestFluxBuildOfTheCoreProvider(t *testing.T) {
	out, err := Provider(inputFor(t, coreProvider()))
	if err != nil {
		t.Fatal(err)
	}
	components := fixture(t, "core-components.yaml")
	objects := fluxBuild(t, out, artifactFiles(t, "core-components.yaml"))

	crds := 0
	for _, o := range objects {
		if o.GetLabels()["cluster.x-k8s.io/provider"] != "cluster-api" || o.GetLabels()["clusterctl.cluster.x-k8s.io"] != "" {
			t.Errorf("%s %s lacks clusterctl's labels: %v", o.GetKind(), o.GetName(), o.GetLabels())
		}
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crds++
		if o.GetAnnotations()[pruneAnnotation] != "disabled" {
			t.Errorf("CRD %s would be pruned with the provider", o.GetName())
		}
		if len(o.GetAnnotations()) < 2 {
			t.Errorf("CRD %s lost its own annotations (cert-manager CA injection): %v", o.GetName(), o.GetAnnotations())
		}
	}
	if want := bytes.Count(components, []byte("\nkind: CustomResourceDefinition\n")); crds != want || crds == 0 {
		t.Errorf("%d CRDs built, the components have %d", crds, want)
	}
	if ns := find(t, objects, "Namespace", "capi-system"); ns.GetAnnotations()[pruneAnnotation] != "disabled" {
		t.Errorf("the Namespace, which holds the provider CR, would be pruned")
	}

	manager := managerContainerOf(t, find(t, objects, "Deployment", "capi-controller-manager"))
	wantArgs := []string{
		"--leader-elect",
		"--diagnostics-address=:8443",
		"--insecure-diagnostics=false",
		"--feature-gates=MachinePool=true,ClusterTopology=false,RuntimeSDK=false,MachineSetPreflightChecks=true,MachineWaitForVolumeDetachConsiderVolumeAttachments=true,PriorityQueue=true,ReconcilerRateLimiting=true,InPlaceUpdates=false,MachineTaintPropagation=false",
	}
	if !reflect.DeepEqual(manager.Args, wantArgs) {
		t.Errorf("manager args = %q, want clusterctl's defaults substituted: %q", manager.Args, wantArgs)
	}
	if d := find(t, objects, "Deployment", "capi-controller-manager"); d.GetNamespace() != "capi-system" {
		t.Errorf("Deployment namespace = %s", d.GetNamespace())
	}
}

func TestFluxBuildOfTheBootstrapProviderSettings(t *testing.T) {
	out, err := Provider(bootstrapInput(t))
	if err != nil {
		t.Fatal(err)
	}
	vars := secret("kubeadm-bootstrap", "kubeadm-vars", map[string]string{
		"CAPI_DIAGNOSTICS_ADDRESS":    ":9443",
		"KUBEADM_BOOTSTRAP_TOKEN_TTL": "1h", // spec.variables win
	})
	objects := fluxBuild(t, out, artifactFiles(t, "bootstrap-components.yaml"), vars)

	deploy := find(t, objects, "Deployment", "capi-kubeadm-bootstrap-controller-manager")
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deploy.Object, &dep); err != nil {
		t.Fatal(err)
	}
	manager := managerContainerOf(t, deploy)
	wantArgs := []string{
		"--leader-elect=false",
		"--diagnostics-address=:9443",
		"--insecure-diagnostics=false",
		"--feature-gates=MachinePool=false,KubeadmBootstrapFormatIgnition=true,PriorityQueue=true,ReconcilerRateLimiting=true,NewGate=true",
		"--bootstrap-token-ttl=30m",
		"--kubeadmconfig-concurrency=20",
		"--sync-period=5m0s",
		"--v=4",
	}
	if !reflect.DeepEqual(manager.Args, wantArgs) {
		t.Errorf("manager args =\n%s\nwant\n%s", strings.Join(manager.Args, "\n"), strings.Join(wantArgs, "\n"))
	}
	if *dep.Spec.Replicas != 2 {
		t.Errorf("replicas = %d", *dep.Spec.Replicas)
	}
	if manager.Image != "mirror.example.com/kubeadm-bootstrap-controller:v1.14.2" {
		t.Errorf("image = %s, want spec.deployment's", manager.Image)
	}
	if got := manager.Resources.Limits.Memory().String(); got != "512Mi" {
		t.Errorf("memory limit = %s", got)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range manager.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAMESPACE"]; e.Value != "pinned" || e.ValueFrom != nil {
		t.Errorf("POD_NAMESPACE = %+v, want the spec's value replacing the components' valueFrom", e)
	}
	if from := env["POD_UID"].ValueFrom; from == nil || from.FieldRef != nil || from.SecretKeyRef == nil || from.SecretKeyRef.Name != "uid" {
		t.Errorf("POD_UID = %+v, want the spec's secretKeyRef replacing the components' fieldRef", env["POD_UID"])
	}
	if env["POD_NAME"].ValueFrom == nil || env["HTTPS_PROXY"].Value != "http://proxy:3128" {
		t.Errorf("env = %+v, want the components' variables kept and the new one added", manager.Env)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "infra" {
		t.Errorf("tolerations = %+v, want the spec's list replacing the components'", pod.Tolerations)
	}
	if _, ok := pod.NodeSelector["node-role.kubernetes.io/infra"]; !ok {
		t.Errorf("nodeSelector = %v", pod.NodeSelector)
	}
	if manager.LivenessProbe == nil || len(manager.Ports) != 3 || len(manager.VolumeMounts) != 1 || !slices.Equal(manager.Command, []string{"/manager"}) {
		t.Errorf("the patch dropped fields of the manager it does not set: %+v", manager)
	}

	crb := find(t, objects, "ClusterRoleBinding", "capi-kubeadm-bootstrap-manager-rolebinding")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if ns := subjects[0].(map[string]any)["namespace"]; ns != "kubeadm-bootstrap" {
		t.Errorf("ClusterRoleBinding subject namespace = %v; the namespace patch did not apply", ns)
	}
	for _, o := range objects {
		if o.GetKind() == "Service" && o.GetAnnotations()["example.com/team"] != "platform" {
			t.Errorf("spec.patches did not reach Service %s", o.GetName())
		}
		if o.GetKind() == "CustomResourceDefinition" && o.GetAnnotations()[pruneAnnotation] != "disabled" {
			t.Errorf("CRD %s would be pruned", o.GetName())
		}
	}
}

func TestFluxBuildPatchesTheManagerDeploymentFoundByLabel(t *testing.T) {
	p := coreProvider()
	verbosity := int32(6)
	p.Spec.Manager = &v1alpha1.ManagerSpec{Verbosity: &verbosity}
	in := inputFor(t, p)
	in.ManagerDeployment = "" // the label selector must find it too
	out, err := Provider(in)
	if err != nil {
		t.Fatal(err)
	}
	manager := managerContainerOf(t, find(t, fluxBuild(t, out, artifactFiles(t, "core-components.yaml")), "Deployment", "capi-controller-manager"))
	if !slices.Contains(manager.Args, "--v=6") || !slices.Contains(manager.Args, "--leader-elect") {
		t.Errorf("manager args = %q", manager.Args)
	}
}

// managerContainerOf decodes the manager container of a built Deployment.
func managerContainerOf(t *testing.T, deploy *unstructured.Unstructured) corev1.Container {
	t.Helper()
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deploy.Object, &dep); err != nil {
		t.Fatal(err)
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == managerContainer {
			return c
		}
	}
	t.Fatalf("Deployment %s has no manager container", deploy.GetName())
	return corev1.Container{}
}

// TestSkippingCRDSubstitutionChangesNothingElse builds each real provider
// as Flux would, with and without its CRDs annotated out of substitution:
// every other object comes out the same, and a CRD differs only by the
// annotation and by keeping the release's "$$" (substitution turns the
// escape into "$", which in Cluster API's CRDs only garbles copies of
// Kubernetes' EnvVar description).
func TestSkippingCRDSubstitutionChangesNothingElse(t *testing.T) {
	controlPlane := &v1alpha1.ControlPlaneProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"},
		Spec:       v1alpha1.ProviderSpec{Version: capiVersion},
	}
	bootstrap := bootstrapInput(t)
	vars := secret("kubeadm-bootstrap", "kubeadm-vars", map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})
	for _, tt := range []struct {
		in      Input
		secrets []*corev1.Secret
	}{
		{inputFor(t, coreProvider()), nil},
		{bootstrap, []*corev1.Secret{vars}},
		{inputFor(t, controlPlane), nil},
	} {
		t.Run(tt.in.Provider.ProviderType(), func(t *testing.T) {
			if !tt.in.SkipCRDSubstitution {
				t.Fatal("the real components' CRDs hold no variable, yet SkipCRDSubstitution is off")
			}
			files := artifactFiles(t, componentsFile(tt.in.Provider))
			skipping, err := Provider(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			tt.in.SkipCRDSubstitution = false
			substituting, err := Provider(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := fluxBuild(t, skipping, files, tt.secrets...)
			want := fluxBuild(t, substituting, files, tt.secrets...)
			if len(got) != len(want) {
				t.Fatalf("%d objects built, %d with substitution", len(got), len(want))
			}
			crds, doubled := 0, 0
			for i, o := range got {
				w := want[i]
				if o.GetKind() != "CustomResourceDefinition" {
					if !reflect.DeepEqual(o.Object, w.Object) {
						t.Errorf("%s %s differs when the CRDs skip substitution", o.GetKind(), o.GetName())
					}
					continue
				}
				crds++
				annotations := o.GetAnnotations()
				if annotations[substituteAnnotation] != "disabled" || annotations[pruneAnnotation] != "disabled" {
					t.Errorf("CRD %s annotations = %v, want substitution and pruning disabled", o.GetName(), annotations)
				}
				delete(annotations, substituteAnnotation)
				o.SetAnnotations(annotations)
				data, err := o.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				wantData, err := w.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(data, []byte("$$")) {
					doubled++
				}
				if !bytes.Equal(bytes.ReplaceAll(data, []byte("$$"), []byte("$")), wantData) {
					t.Errorf("CRD %s differs by more than the annotation and \"$$\" when it skips substitution", o.GetName())
				}
			}
			if crds == 0 {
				t.Error("no CRD built")
			}
			if tt.in.Provider.ProviderType() != v1alpha1.CoreProviderType && doubled == 0 {
				t.Error("no CRD kept the release's \"$$\"; the kubeadm CRDs have them in their EnvVar descriptions")
			}
		})
	}
}
