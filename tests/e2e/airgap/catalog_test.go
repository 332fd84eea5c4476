package airgap

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/mirror/mirrortest"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// catalogProvider is one provider mirrored by catalog name.
type catalogProvider struct {
	obj v1alpha1.Provider
	// release is the fixture release that publishes it, version its tag.
	release plane.FixtureRelease
	version string
	// repository is where its artifact lands under the mirror's target.
	repository string
}

// TestMirrorProvidersByCatalogName mirrors the Cluster API core, kubeadm
// bootstrap and control plane providers and Cluster API Provider AWS with
// one `capwright mirror --provider TYPE/NAME:VERSION ...` from the
// plane's stand-in for github.com (the real releases, as clusterctl's
// list names them) into the plane's registry, stops the release server and
// the image registry, and installs all four with the manager given only
// the rules file the CLI wrote, with only spec.version: from OCI, their
// controllers running the mirrored images. A provider packaged as a Helm
// chart, in the image registry, is mirrored by reference in the same
// command and installs from the mirror too.
func TestMirrorProvidersByCatalogName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// Registry A holds the images the releases run. The real release files
	// name them at registry.k8s.io, which the plane cannot reach: the
	// releases published here name them at A instead, as the OCI air-gap
	// test moves them.
	images, err := plane.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = images.Close() }()
	plainHTTP := artifact.Access{PlainHTTP: true, UserAgent: "capwright-e2e"}
	releases, err := plane.StartReleaseServer(plane.ReleaseServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = releases.Close() }()
	fixtures := filepath.Join(env.RepoRoot(), "bin", "fixtures")
	capi, capa := plane.FixtureReleases[0], plane.FixtureReleases[1]
	pushedImages := map[string]bool{}
	for _, fr := range []struct {
		release plane.FixtureRelease
		version string
	}{{capi, version}, {capa, plane.CAPAVersion}} {
		files := map[string][]byte{}
		for _, name := range fr.release.Files {
			data, err := os.ReadFile(filepath.Join(fixtures, fr.release.Dir, fr.version, name))
			if err != nil {
				t.Fatalf("%v (run `make fixtures`)", err)
			}
			files[name] = mirrortest.MoveImages(data, mirrortest.UpstreamImageHost, images.Host)
			if name == artifact.MetadataFile {
				continue
			}
			written, err := clusterctl.Images(files[name])
			if err != nil {
				t.Fatal(err)
			}
			for _, image := range written {
				mirrortest.PushImage(t, plainHTTP, mirrortest.ImageReference(t, image), mirrortest.SmallImage(mirrortest.ImageSeed(image)))
				pushedImages[image] = true
			}
		}
		releases.Publish(fr.release.Owner, fr.release.Repo, fr.version, files)
	}
	// A provider packaged as a Helm chart, in registry A too: mirrored by
	// reference with the others, and installed from the mirror with the
	// same rules.
	chartURL, err := framework.PushChart(ctx, images.Host, "charts/addon-airgap", "addon-airgap", "v0.1.0", map[string][]byte{
		"templates/deployment.yaml": []byte(framework.ProviderChartDeployment),
		"values.yaml":               []byte("replicas: 1\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	chart := &v1alpha1.AddonProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "airgap-addon", Name: "airgap"},
		Spec: v1alpha1.ProviderSpec{Version: "v0.1.0", Source: &v1alpha1.ProviderSource{Chart: &v1alpha1.ChartSource{
			OCIRegistryAccess: v1alpha1.OCIRegistryAccess{URL: chartURL}}}}}
	caFile, err := releases.WriteCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	aws := &v1alpha1.InfrastructureProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capa-system", Name: "aws"},
		Spec: v1alpha1.ProviderSpec{Version: plane.CAPAVersion,
			// As in TestProvidersFromReleases: any credentials pass on the
			// plane; Capwright needs a value for the optional IAM role.
			Variables: map[string]string{"AWS_B64ENCODED_CREDENTIALS": "Cg==", "AWS_CONTROLLER_IAM_ROLE": ""}}}
	providers := []catalogProvider{
		{&v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"}, Spec: v1alpha1.ProviderSpec{Version: version}},
			capi, version, "cluster-api/manifests/core-cluster-api"},
		{&v1alpha1.BootstrapProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-bootstrap-system", Name: "kubeadm"}, Spec: v1alpha1.ProviderSpec{Version: version}},
			capi, version, "cluster-api/manifests/bootstrap-kubeadm"},
		{&v1alpha1.ControlPlaneProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-kubeadm-control-plane-system", Name: "kubeadm"}, Spec: v1alpha1.ProviderSpec{Version: version}},
			capi, version, "cluster-api/manifests/control-plane-kubeadm"},
		{aws, capa, plane.CAPAVersion, "manifests/infrastructure-aws"},
	}

	// One command: the providers by catalog name, their releases through
	// a mirror rule for github.com to the stand-in, as a site with a
	// GitHub mirror (or this test) reaches them.
	target := env.Registry.Host + "/catalog"
	rulesFile := filepath.Join(t.TempDir(), "mirror-rules.conf")
	args := []string{"mirror", "--plain-http", "--to", target, "--rules-file", rulesFile,
		"--release-mirror", "github.com=https://" + releases.Host, "--release-redirect-host", releases.DownloadHost, "--release-ca-file", caFile}
	for _, p := range providers {
		args = append(args, "--provider", p.obj.ProviderType()+"/"+p.obj.GetName()+":"+p.version)
	}
	args = append(args, chartURL+":"+chart.Spec.Version)
	start := time.Now()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	t.Logf("capwright %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("capwright mirror: %v", err)
	}
	if reqs := releases.Requests(start); len(reqs) == 0 {
		t.Fatalf("capwright mirror asked the release server nothing")
	}
	rulesText, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:\n%s", rulesFile, rulesText)
	rules, err := catalog.ReadMirrorFile(rulesFile)
	if err != nil {
		t.Fatalf("the controller cannot read the rules file mirror wrote: %v", err)
	}
	digests := map[string]string{}
	for _, p := range providers {
		ref := artifact.Reference{Host: env.Registry.Host, Repository: "catalog/" + p.repository, Tag: p.version}
		digests[p.repository] = mirrortest.Resolve(t, plainHTTP, ref).Digest.String()
	}

	// From here on the release host and registry A are gone.
	if err := releases.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := images.Close(); err != nil {
		t.Fatal(err)
	}

	manager, err := env.StartCapwright(ctx, plane.CapwrightOptions{Args: []string{
		"--registry-mirror-file=" + rulesFile,
		"--insecure-registry=" + env.Registry.Host,
		"--resync-interval=30s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Stop()
	c := framework.NewProviderClient(t, env.Config)
	start = time.Now()
	for _, p := range providers {
		framework.EnsureNamespace(t, ctx, c, p.obj.GetNamespace())
		if err := c.Create(ctx, p.obj.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for i := len(providers) - 1; i >= 0; i-- {
			framework.DeleteProviderAndWait(t, ctx, c, providers[i].obj)
		}
	}()
	framework.EnsureNamespace(t, ctx, c, chart.Namespace)
	if err := c.Create(ctx, chart); err != nil {
		t.Fatal(err)
	}
	defer framework.DeleteProviderAndWait(t, ctx, c, chart)
	for _, p := range providers {
		framework.WaitProviderCondition(t, ctx, c, p.obj, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 6*time.Minute)
	}
	framework.WaitProviderCondition(t, ctx, c, chart, v1alpha1.ReadyCondition, metav1.ConditionTrue, "", 3*time.Minute)
	// The chart provider's source is the mirror's copy, over plain HTTP.
	wantChart, ok := rules.RewriteURL(chartURL)
	if !ok || !strings.HasPrefix(wantChart, "oci://"+target+"/") {
		t.Errorf("the rules send %s to %q, not under the mirror %s", chartURL, wantChart, target)
	}
	var chartRepos sourcev1.OCIRepositoryList
	if err := c.List(ctx, &chartRepos, client.InNamespace(chart.Namespace)); err != nil {
		t.Fatal(err)
	}
	if len(chartRepos.Items) != 1 || chartRepos.Items[0].Spec.URL != wantChart || !chartRepos.Items[0].Spec.Insecure {
		t.Errorf("AddonProvider %s/%s: OCIRepositories %+v, want one pulling %s over plain HTTP", chart.Namespace, chart.Name, chartRepos.Items, wantChart)
	}
	t.Logf("four providers Ready from the mirror %s after their CRs were applied", time.Since(start).Round(time.Millisecond))

	for _, p := range providers {
		ns, key := p.obj.GetNamespace(), p.obj.ProviderType()+"/"+p.obj.GetName()
		if got := p.obj.GetStatus().InstalledVersion; got != p.version {
			t.Errorf("%s installedVersion %q, want %s", key, got, p.version)
		}
		// Flux pulls the mirrored artifact, pinned to the digest mirror pushed.
		var repos sourcev1.OCIRepositoryList
		if err := c.List(ctx, &repos, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(repos.Items) != 1 {
			t.Fatalf("%s: %d OCIRepositories in %s, want 1", key, len(repos.Items), ns)
		}
		repo := repos.Items[0]
		if want := "oci://" + target + "/" + p.repository; repo.Spec.URL != want {
			t.Errorf("%s: OCIRepository %s pulls %s, want the mirror %s", key, repo.Name, repo.Spec.URL, want)
		}
		if repo.Spec.Reference == nil || repo.Spec.Reference.Digest != digests[p.repository] {
			t.Errorf("%s: OCIRepository %s reference %+v, want digest %s", key, repo.Name, repo.Spec.Reference, digests[p.repository])
		}

		// Every container image of its Deployments is the mirror's copy of
		// an image the release names.
		var deployments appsv1.DeploymentList
		if err := c.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(deployments.Items) == 0 {
			t.Fatalf("%s: no Deployment installed in %s", key, ns)
		}
		for _, d := range deployments.Items {
			pod := d.Spec.Template.Spec
			for _, ctr := range append(pod.InitContainers, pod.Containers...) {
				if !strings.HasPrefix(ctr.Image, target+"/") || !pushedImages[strings.Replace(ctr.Image, target, images.Host, 1)] {
					t.Errorf("Deployment %s/%s container %s runs %s, not the mirror's copy of an image of the release", ns, d.Name, ctr.Name, ctr.Image)
				}
			}
			if d.Status.AvailableReplicas < 1 {
				t.Errorf("Deployment %s/%s has no available replica", ns, d.Name)
			}
		}
	}
	if got, ok := rules.Provider(aws.ProviderType(), aws.Name); !ok || got != target+"/manifests/infrastructure-aws" {
		t.Errorf("the rules send infrastructure/aws to %q, want %s/manifests/infrastructure-aws", got, target)
	}
}
