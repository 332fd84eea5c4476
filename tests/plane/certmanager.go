package plane

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// certManagerCRDs is where `make tools` puts cert-manager's CRDs, which
// the plane installs at start for certsim.
const certManagerCRDs = "assets/crds/cert-manager"

// RemoveCertManagerCRDs deletes cert-manager's CRDs and waits until they
// are gone, so that the plane is a cluster where cert-manager was never
// installed (certsim idles without them); their objects go with them.
// InstallCertManagerCRDs installs them again.
func (p *Plane) RemoveCertManagerCRDs(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(p.opts.BinDir, certManagerCRDs, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no cert-manager CRDs in %s (run `make tools`): %v", certManagerCRDs, err)
	}
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		return err
	}
	crds := dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var names []string
	for _, crd := range list.Items {
		if group, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); group == "cert-manager.io" || group == "acme.cert-manager.io" {
			names = append(names, crd.GetName())
		}
	}
	for _, name := range names {
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, err := crds.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}

// InstallCertManagerCRDs installs cert-manager's CRDs (again) and waits
// until they are established.
func (p *Plane) InstallCertManagerCRDs(ctx context.Context) error {
	applier, err := NewApplier(p.Config)
	if err != nil {
		return err
	}
	objs, err := applier.ApplyFiles(ctx, filepath.Join(p.opts.BinDir, certManagerCRDs))
	if err != nil {
		return fmt.Errorf("installing cert-manager's CRDs: %w", err)
	}
	return waitCRDsEstablished(ctx, p.Config, objs)
}
