package dryrun

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A new CRD is not sent to the API server for a dry run: that is most of
// a dry run's cost on the API server (parsing a large apply patch as
// YAML, merging it field by field, validating it, and the admission chain
// converting it, for every CRD of a provider), while Flux's own apply
// dry-runs every CRD of the new version again, all of them before it
// applies any (its first stage), so that a CRD refused there changes
// nothing either. The manager runs the part of the API server that
// refuses CRDs itself: its validation of a CRD write
// (k8s.io/apiextensions-apiserver, the version the manager is built
// with): schemas, CEL rules and their cost, names, conversion, versions
// served and stored. What that refuses is then asked of the API server
// after all, whose answer is the one reported, so a difference between
// the manager's version and the cluster's never refuses an upgrade the
// API server would take. What only the cluster knows (an admission
// webhook or policy on CRDs) is left to Flux's first stage.

// validateCRD is the API server's validation of writing body, a built
// CRD in JSON, over live, the installed one (nil when the CRD is new): ""
// when it would pass, else its errors.
func validateCRD(ctx context.Context, body []byte, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
	var next apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(body, &next); err != nil {
		return "", err
	}
	// As the API server decodes it.
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&next)
	in, err := internalCRD(&next)
	if err != nil {
		return "", err
	}
	var errs field.ErrorList
	if live == nil {
		// The registry's PrepareForCreate.
		in.Status = apiextensions.CustomResourceDefinitionStatus{}
		in.Generation = 1
		if v, err := apiextensions.GetCRDStorageVersion(in); err == nil {
			in.Status.StoredVersions = []string{v}
		}
		errs = validation.ValidateCustomResourceDefinition(ctx, in)
	} else {
		old, err := internalCRD(live.DeepCopy())
		if err != nil {
			return "", err
		}
		// The object an apply makes of it: the installed metadata (the
		// name and UID the update validation compares) and status, and
		// the registry's PrepareForUpdate.
		in.ObjectMeta = *old.ObjectMeta.DeepCopy()
		in.Status = *old.Status.DeepCopy()
		if !apiequality.Semantic.DeepEqual(old.Spec, in.Spec) {
			in.Generation = old.Generation + 1
		}
		if v, err := apiextensions.GetCRDStorageVersion(in); err == nil && !apiextensions.IsStoredVersion(in, v) {
			in.Status.StoredVersions = append(in.Status.StoredVersions, v)
		}
		errs = validation.ValidateCustomResourceDefinitionUpdate(ctx, in, old)
	}
	if len(errs) == 0 {
		return "", nil
	}
	return errs.ToAggregate().Error(), nil
}

func internalCRD(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	var out apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &out, nil); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
	}
	return &out, nil
}
