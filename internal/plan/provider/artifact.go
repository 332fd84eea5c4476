package provider

import (
	"sync"

	"github.com/fluxcd/pkg/apis/kustomize"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
)

// CheckedArtifact is a provider artifact that passed the layout checks,
// with what the checks and render read from its components file. The file
// is decoded once, on first use, and the answers are kept with the
// artifact (not the decoded objects, which take many times the file's
// size): a provider reconciles on every status change of its Flux objects,
// and decoding a core components file — over a megabyte of YAML — takes
// tens of milliseconds each time. Reading it does no I/O: a CLI that
// fetched the artifact itself plans with it as the manager does.
type CheckedArtifact struct {
	*artifact.ProviderArtifact
	// Release is set for an artifact packed from release files: the
	// files as fetched and the packed artifact Flux applies.
	Release *Release
	// Contract is the Cluster API contract metadata.yaml maps the
	// artifact's version to; ContractError says why it names none (the
	// file does not parse, or lists no release series for the version).
	Contract      string
	ContractError error
	// home is the namespace of the provider that fetched the artifact.
	home string

	mu         sync.Mutex
	analysed   bool
	decodeErr  error
	variables  []clusterctl.Variable
	varsErr    error
	images     []string
	imagesErr  error
	coreObjs   []string
	needs      []schema.GroupVersionKind
	objects    []clusterctl.ObjectRef
	crdsFree   bool
	deployment string
	args       []string
	patches    map[string]namespacePatches
}

// NewCheckedArtifact is pa, checked, as fetched for version of a
// provider in namespace home (whose namespace patches it computes first),
// with the contract its metadata.yaml maps the version to.
func NewCheckedArtifact(pa *artifact.ProviderArtifact, home, version string) *CheckedArtifact {
	a := &CheckedArtifact{ProviderArtifact: pa, home: home}
	md, err := clusterctl.ParseMetadata(pa.Metadata)
	if err == nil {
		a.Contract, err = md.ContractFor(version)
	}
	a.ContractError = err
	return a
}

type namespacePatches struct {
	patches []kustomize.Patch
	err     error
}

// coreGroups are the API groups of the core provider's CRDs.
var coreGroups = map[string]bool{
	"cluster.x-k8s.io": true, "addons.cluster.x-k8s.io": true, "ipam.cluster.x-k8s.io": true, "runtime.cluster.x-k8s.io": true,
}

// Analyse decodes the components and answers every question now (the
// manager does it while a reconcile goes on with the cheap checks).
func (a *CheckedArtifact) Analyse() { _ = a.analyse("") }

// analyse decodes the components once and answers every question, and
// the namespace patches for namespace ("": home, the namespace of the
// provider that fetched the artifact); another namespace decodes again.
func (a *CheckedArtifact) analyse(namespace string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if namespace == "" {
		namespace = a.home
	}
	if a.analysed {
		if _, ok := a.patches[namespace]; ok || a.decodeErr != nil {
			return a.decodeErr
		}
	}
	c, err := clusterctl.Decode(a.Components)
	if a.patches == nil {
		a.patches = map[string]namespacePatches{}
	}
	if !a.analysed {
		a.analysed, a.decodeErr = true, err
		if err == nil {
			a.variables, a.varsErr = c.Variables()
			a.images, a.imagesErr = c.ResolvedImages(nil)
			a.coreObjs = c.ObjectsInGroups(coreGroups)
			a.needs = c.ForeignKinds(coreGroups)
			a.objects = c.Objects()
			a.crdsFree = c.CRDsSubstitutionFree()
			a.deployment, a.args = c.ManagerDeployment()
		}
	}
	if err == nil {
		patches, perr := c.NamespacePatches(namespace)
		a.patches[namespace] = namespacePatches{patches, perr}
	}
	return a.decodeErr
}

// Variables are the clusterctl variables of the components.
func (a *CheckedArtifact) Variables() ([]clusterctl.Variable, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.variables, a.varsErr
}

// Images are the container images the components run.
func (a *CheckedArtifact) Images() ([]string, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.images, a.imagesErr
}

// CoreObjects names the components' objects of the core provider's kinds.
func (a *CheckedArtifact) CoreObjects() ([]string, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.coreObjs, nil
}

// NeededKinds are the kinds the components apply that they do not
// define, which the cluster must serve before they can be applied
// (clusterctl.Components.ForeignKinds): the core provider's kinds are
// left out, as a provider holding some depends on the core's
// Kustomization instead (checkCore).
func (a *CheckedArtifact) NeededKinds() ([]schema.GroupVersionKind, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.needs, nil
}

// Objects names every object of the components, as the file holds it.
func (a *CheckedArtifact) Objects() ([]clusterctl.ObjectRef, error) {
	if err := a.analyse(""); err != nil {
		return nil, err
	}
	return a.objects, nil
}

// CRDsSubstitutionFree tells whether no CRD of the components holds a
// variable (clusterctl.Components.CRDsSubstitutionFree); false when the
// components cannot be decoded.
func (a *CheckedArtifact) CRDsSubstitutionFree() bool {
	return a.analyse("") == nil && a.crdsFree
}

// ManagerDeployment is the components' controller Deployment and its
// manager container's args (clusterctl.Components.ManagerDeployment).
func (a *CheckedArtifact) ManagerDeployment() (string, []string) {
	if a.analyse("") != nil {
		return "", nil
	}
	return a.deployment, a.args
}

// NamespacePatches are clusterctl's patches that move the components into
// namespace.
func (a *CheckedArtifact) NamespacePatches(namespace string) ([]kustomize.Patch, error) {
	if err := a.analyse(namespace); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.patches[namespace]
	return p.patches, p.err
}

// Size is the bytes of the artifact's files (the components, metadata and
// templates share them).
func (a *CheckedArtifact) Size() int64 {
	var n int64
	if a.Fetched != nil {
		for _, f := range a.Fetched.Files {
			n += int64(len(f))
		}
		return n
	}
	n = int64(len(a.Components) + len(a.Metadata))
	for _, t := range a.Templates {
		n += int64(len(t))
	}
	return n
}
