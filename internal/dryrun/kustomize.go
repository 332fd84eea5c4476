package dryrun

import (
	"fmt"
	"path"
	"sync"
	"sync/atomic"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// builds serializes the process's kustomize builds, as Flux's do (one
// lock: kustomize's global OpenAPI schema is not safe for concurrent
// use), and counts the builds waiting or running.
var builds struct {
	sync.Mutex
	pending atomic.Int32
}

// kustomizeBuild is Flux's SecureBuild of dirPath under root (no remote
// bases, nothing outside root, built-in plugins only), for a source whose
// only kustomization file is the one Flux's generator wrote (files has
// none). Flux's build parses kustomize's built-in Kubernetes schema again
// for every build, and drops it after, so that a kustomization's openapi
// field cannot reach the next one; the generator writes none, so builds
// that queue behind one another here share one parse, dropped when the
// last is done. That parse is half of a provider's build, and the builds
// of providers upgraded at once queue on the lock. A source with a
// kustomization file of its own is built by SecureBuild itself.
func kustomizeBuild(root, dirPath string, files map[string][]byte) (res resmap.ResMap, err error) {
	builds.pending.Add(1)
	builds.Lock()
	defer func() {
		if builds.pending.Add(-1) == 0 {
			openapi.ResetOpenAPI()
		}
		builds.Unlock()
	}()
	if hasKustomization(files) {
		return fluxkustomize.SecureBuild(root, dirPath, false)
	}
	fs, err := securefs.MakeFsOnDiskSecure(root)
	if err != nil {
		return nil, err
	}
	// Flux's build recovers from a kustomize panic on bad input.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered from kustomize build panic: %v", r)
		}
	}()
	return krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	}).Run(fs, dirPath)
}

// hasKustomization tells whether any of files is a kustomization file.
func hasKustomization(files map[string][]byte) bool {
	for name := range files {
		for _, k := range konfig.RecognizedKustomizationFileNames() {
			if path.Base(name) == k {
				return true
			}
		}
	}
	return false
}
