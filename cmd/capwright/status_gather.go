package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
)

// inventoryReaders bounds the objects read at once for their health.
const inventoryReaders = 8

// statusSelection is what to show: one object (kind set), or everything
// Capwright manages, in namespace when set.
type statusSelection struct {
	kind      *statusKind
	name      string
	namespace string
}

// statusGatherer reads the tree from a cluster.
type statusGatherer struct {
	c client.Client
	// context names the cluster in errors.
	context string
	// warn gets notes on what could not be shown (a kind the cluster does
	// not serve).
	warn io.Writer
}

// gather reads the selected Capwright objects, the Flux objects Capwright
// wrote for them, what Flux applied, and their health.
func (g *statusGatherer) gather(ctx context.Context, sel statusSelection) (*statusReport, error) {
	owners, err := g.owners(ctx, sel)
	if err != nil {
		return nil, err
	}
	flux, err := g.fluxObjects(ctx, sel, owners)
	if err != nil {
		return nil, err
	}
	var (
		nodes     []*statusNode
		inventory []inventoryItem
	)
	for _, o := range owners {
		n, items := g.ownerNode(o, flux)
		nodes = append(nodes, n)
		inventory = append(inventory, items...)
	}
	if err := g.readHealth(ctx, inventory); err != nil {
		return nil, err
	}
	return newStatusReport(nodes), nil
}

// owner is one Capwright object and its kind.
type owner struct {
	kind statusKind
	obj  client.Object
}

func (g *statusGatherer) owners(ctx context.Context, sel statusSelection) ([]owner, error) {
	if sel.kind != nil {
		o, err := g.one(ctx, *sel.kind, sel.name, sel.namespace)
		if err != nil {
			return nil, err
		}
		return []owner{o}, nil
	}
	var (
		out     []owner
		missing []string
	)
	for _, k := range statusKinds {
		if sel.namespace != "" && !k.namespaced {
			continue
		}
		objs, err := g.list(ctx, k, sel.namespace)
		if notInstalled(err) {
			missing = append(missing, k.crd())
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			out = append(out, owner{kind: k, obj: obj})
		}
	}
	if len(missing) > 0 && len(out) == 0 && slices.Contains(missing, statusKinds[0].crd()) {
		return nil, &notInstalledError{context: g.context, missing: missing}
	}
	if len(missing) > 0 {
		fmt.Fprintf(g.warn, "Note: the cluster does not serve %s (CRDs missing: an older Capwright?); not shown\n", strings.Join(missing, ", "))
	}
	return out, nil
}

// one finds KIND/NAME: in namespace, or in the one namespace that has it.
func (g *statusGatherer) one(ctx context.Context, k statusKind, name, namespace string) (owner, error) {
	objs, err := g.list(ctx, k, namespace)
	if notInstalled(err) {
		return owner{}, &notInstalledError{context: g.context, missing: []string{k.crd()}}
	}
	if err != nil {
		return owner{}, err
	}
	var found []client.Object
	for _, o := range objs {
		if o.GetName() == name {
			found = append(found, o)
		}
	}
	switch len(found) {
	case 0:
		return owner{}, &notFoundInClusterError{kind: k.Kind, namespace: namespace, name: name}
	case 1:
		return owner{kind: k, obj: found[0]}, nil
	}
	namespaces := make([]string, len(found))
	for i, o := range found {
		namespaces[i] = o.GetNamespace()
	}
	return owner{}, usageErrorf("%s %s exists in namespaces %s: pick one with -n, e.g. -n %s", k.Kind, name, strings.Join(namespaces, ", "), namespaces[0])
}

// list lists a kind, sorted by namespace and name.
func (g *statusGatherer) list(ctx context.Context, k statusKind, namespace string) ([]client.Object, error) {
	list := k.newList()
	var opts []client.ListOption
	if k.namespaced && namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := g.c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %s: %w", k.crd(), err)
	}
	out, err := listItems(list)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b client.Object) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// fluxKind is a Flux kind Capwright writes.
type fluxKind struct {
	kind    string
	newList func() client.ObjectList
}

// fluxKinds are the Flux kinds Capwright writes, in the order the tree
// shows them: sources, then appliers.
var fluxKinds = []fluxKind{
	{sourcev1.OCIRepositoryKind, func() client.ObjectList { return &sourcev1.OCIRepositoryList{} }},
	{sourcev1.ExternalArtifactKind, func() client.ObjectList { return &sourcev1.ExternalArtifactList{} }},
	{kustomizev1.KustomizationKind, func() client.ObjectList { return &kustomizev1.KustomizationList{} }},
	{helmv2.HelmReleaseKind, func() client.ObjectList { return &helmv2.HelmReleaseList{} }},
}

func fluxKindOrder(o client.Object) int {
	kind := fluxKindOf(o)
	return slices.IndexFunc(fluxKinds, func(k fluxKind) bool { return k.kind == kind })
}

func fluxKindOf(o client.Object) string {
	switch o.(type) {
	case *sourcev1.OCIRepository:
		return sourcev1.OCIRepositoryKind
	case *sourcev1.ExternalArtifact:
		return sourcev1.ExternalArtifactKind
	case *kustomizev1.Kustomization:
		return kustomizev1.KustomizationKind
	case *helmv2.HelmRelease:
		return helmv2.HelmReleaseKind
	}
	return ""
}

// fluxObjects lists the Flux objects the owners may have: for one owner,
// those labelled as its own; for everything, all of them (four lists,
// rather than four per owner).
func (g *statusGatherer) fluxObjects(ctx context.Context, sel statusSelection, owners []owner) ([]client.Object, error) {
	if len(owners) == 0 {
		return nil, nil
	}
	var opts []client.ListOption
	if sel.kind != nil {
		labels, namespace := ownerLabels(owners[0])
		opts = append(opts, client.MatchingLabels(labels))
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
	} else if sel.namespace != "" {
		opts = append(opts, client.InNamespace(sel.namespace))
	}
	var out []client.Object
	for _, k := range fluxKinds {
		list := k.newList()
		err := g.c.List(ctx, list, opts...)
		if notInstalled(err) {
			fmt.Fprintf(g.warn, "Note: the cluster does not serve Flux's %s kind (is Flux installed?); none shown\n", k.kind)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", k.kind, err)
		}
		items, err := listItems(list)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	slices.SortStableFunc(out, func(a, b client.Object) int {
		return cmp.Or(cmp.Compare(fluxKindOrder(a), fluxKindOrder(b)),
			cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// ownerLabels are the labels Capwright puts on the owner's Flux objects
// (internal/render), and the namespace they are in ("" for a Tenant's,
// which are in its clusters' namespaces).
func ownerLabels(o owner) (map[string]string, string) {
	switch obj := o.obj.(type) {
	case v1alpha1.Provider:
		return map[string]string{v1alpha1.ProviderKindLabel: o.kind.Kind, v1alpha1.ProviderNameLabel: obj.GetName()}, obj.GetNamespace()
	case *tenancyv1alpha1.Tenant:
		return map[string]string{tenancyv1alpha1.TenantLabel: obj.Name}, ""
	}
	return map[string]string{clustersv1alpha1.BackendLabel: render.OwnerLabelValue(o.kind.Kind, o.obj.GetName())}, o.obj.GetNamespace()
}

// ownedBy tells whether a Flux object carries the owner's labels.
func ownedBy(f client.Object, o owner) bool {
	labels, namespace := ownerLabels(o)
	if namespace != "" && f.GetNamespace() != namespace {
		return false
	}
	for k, v := range labels {
		if f.GetLabels()[k] != v {
			return false
		}
	}
	return true
}

// ownerNode is the owner's subtree, and the applied objects whose health
// is still to be read.
func (g *statusGatherer) ownerNode(o owner, flux []client.Object) (*statusNode, []inventoryItem) {
	n := &statusNode{Kind: o.kind.Kind, Namespace: o.obj.GetNamespace(), Name: o.obj.GetName()}
	var conditions []metav1.Condition
	var observed int64
	switch obj := o.obj.(type) {
	case v1alpha1.Provider:
		st := obj.GetStatus()
		conditions, observed = st.Conditions, st.ObservedGeneration
		n.Version, n.InstalledVersion = obj.GetSpec().Version, st.InstalledVersion
		if st.Artifact != nil {
			n.Revision = st.Artifact.Revision
		}
	case *tenancyv1alpha1.Tenant:
		conditions, observed = obj.Status.Conditions, obj.Status.ObservedGeneration
		n.Clusters = fmt.Sprintf("%d/%d ready", obj.Status.ReadyClusters, obj.Status.TotalClusters)
		if r := obj.Status.Rollout; r != nil {
			n.Phase = "rollout " + string(r.Phase)
			if r.Target != nil {
				n.StackRevision = r.Target.ID
			}
		}
	case *clustersv1alpha1.CapwrightControlPlane:
		conditions, observed = obj.Status.Conditions, obj.Status.ObservedGeneration
		n.Version = obj.Spec.Version
	case *clustersv1alpha1.CapwrightCluster:
		conditions, observed = obj.Status.Conditions, obj.Status.ObservedGeneration
	}
	setReady(n, "Capwright", o.obj.GetGeneration(), observed, conditions)

	var mine []client.Object
	for _, f := range flux {
		if ownedBy(f, o) {
			mine = append(mine, f)
		}
	}
	if t, ok := o.obj.(*tenancyv1alpha1.Tenant); ok {
		return tenantChildren(n, t, mine)
	}
	var items []inventoryItem
	for _, f := range mine {
		child, more := fluxNode(f)
		n.Children = append(n.Children, child)
		items = append(items, more...)
	}
	return n, items
}

// tenantChildren hangs a Tenant's sources under it, then a line per
// cluster of status.clusters with that cluster's Flux objects under it.
func tenantChildren(n *statusNode, t *tenancyv1alpha1.Tenant, mine []client.Object) (*statusNode, []inventoryItem) {
	var items []inventoryItem
	byCluster := map[string][]client.Object{}
	var loose []client.Object
	for _, f := range mine {
		l := f.GetLabels()
		ns, name := l[tenancyv1alpha1.ClusterNamespaceLabel], l[tenancyv1alpha1.ClusterNameLabel]
		if ns == "" || name == "" {
			loose = append(loose, f)
			continue
		}
		byCluster[ns+"/"+name] = append(byCluster[ns+"/"+name], f)
	}
	add := func(parent *statusNode, f client.Object) {
		child, more := fluxNode(f)
		parent.Children = append(parent.Children, child)
		items = append(items, more...)
	}
	for _, f := range loose {
		add(n, f)
	}
	for _, c := range t.Status.Clusters {
		cn := &statusNode{Kind: "Cluster", Namespace: c.Namespace, Name: c.Name, Reason: c.Reason, Message: c.Message,
			Phase: string(c.Phase), Wave: c.Wave, StackRevision: c.Revision, Revision: c.AppliedRevision}
		switch c.Phase {
		case tenancyv1alpha1.ClusterPhaseReady:
			cn.Ready = metav1.ConditionTrue
		case tenancyv1alpha1.ClusterPhaseFailed:
			cn.Ready = metav1.ConditionFalse
		default:
			cn.Ready = metav1.ConditionUnknown
		}
		key := c.Namespace + "/" + c.Name
		for _, f := range byCluster[key] {
			add(cn, f)
		}
		delete(byCluster, key)
		n.Children = append(n.Children, cn)
	}
	// Flux objects of clusters the status does not list (yet, or any more).
	keys := make([]string, 0, len(byCluster))
	for k := range byCluster {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, f := range byCluster[k] {
			add(n, f)
		}
	}
	return n, items
}

// setReady sets n's readiness from its Ready condition, for its current
// generation only: a condition of an older generation says nothing of
// the spec as it is.
func setReady(n *statusNode, who string, generation, observed int64, conditions []metav1.Condition) {
	cond := apimeta.FindStatusCondition(conditions, meta.ReadyCondition)
	switch {
	case cond == nil:
		n.Ready, n.Reason, n.Message = metav1.ConditionUnknown, "NoReadyCondition", who+" has not reported on it yet"
	case observed != 0 && observed != generation, cond.ObservedGeneration != 0 && cond.ObservedGeneration != generation:
		n.Ready, n.Reason = metav1.ConditionUnknown, "Progressing"
		n.Message = fmt.Sprintf("%s has not handled generation %d yet (last: %s %s: %s)", who, generation, cond.Status, cond.Reason, cond.Message)
	default:
		n.Ready, n.Reason, n.Message = cond.Status, cond.Reason, cond.Message
	}
}

// fluxNode is a Flux object's subtree: for an applier, what it applied.
func fluxNode(f client.Object) (*statusNode, []inventoryItem) {
	n := &statusNode{Kind: fluxKindOf(f), Namespace: f.GetNamespace(), Name: f.GetName()}
	var (
		inventory []inventoryEntry
		remote    string
	)
	switch obj := f.(type) {
	case *sourcev1.OCIRepository:
		setReady(n, "Flux", obj.Generation, obj.Status.ObservedGeneration, obj.Status.Conditions)
		if a := obj.Status.Artifact; a != nil {
			n.Revision = a.Revision
		}
	case *sourcev1.ExternalArtifact:
		setReady(n, "Capwright", obj.Generation, 0, obj.Status.Conditions)
		if a := obj.Status.Artifact; a != nil {
			n.Revision = a.Revision
		}
	case *kustomizev1.Kustomization:
		setReady(n, "Flux", obj.Generation, obj.Status.ObservedGeneration, obj.Status.Conditions)
		n.Revision = obj.Status.LastAppliedRevision
		if obj.Status.Inventory != nil {
			for _, e := range obj.Status.Inventory.Entries {
				inventory = append(inventory, inventoryEntry{id: e.ID, version: e.Version})
			}
		}
		if obj.Spec.KubeConfig != nil {
			remote = obj.Spec.KubeConfig.SecretRef.Name
		}
	case *helmv2.HelmRelease:
		setReady(n, "Flux", obj.Generation, obj.Status.ObservedGeneration, obj.Status.Conditions)
		n.Revision = obj.Status.LastAttemptedRevision
		if latest := obj.Status.History.Latest(); latest != nil {
			n.Chart = latest.ChartName + "@" + latest.ChartVersion
			n.Release = fmt.Sprintf("%s/%s v%d %s", latest.Namespace, latest.Name, latest.Version, latest.Status)
		}
		// helm-controller records what the release holds in its inventory.
		if obj.Status.Inventory != nil {
			for _, e := range obj.Status.Inventory.Entries {
				inventory = append(inventory, inventoryEntry{id: e.ID, version: e.Version})
			}
		}
		if obj.Spec.KubeConfig != nil {
			remote = obj.Spec.KubeConfig.SecretRef.Name
		}
	}
	var items []inventoryItem
	for _, e := range inventory {
		child, gvk, err := e.node()
		if err != nil {
			child.Note = err.Error()
		}
		n.Children = append(n.Children, child)
		if remote != "" {
			continue
		}
		if err == nil {
			items = append(items, inventoryItem{node: child, gvk: gvk})
		}
	}
	if remote != "" && len(inventory) > 0 {
		n.Note = fmt.Sprintf("applied on the cluster of kubeconfig Secret %s/%s: health not read from there", f.GetNamespace(), remote)
	}
	return n, items
}

// inventoryEntry is one entry of a Flux inventory: <namespace>_<name>_<group>_<kind>
// and the API version.
type inventoryEntry struct{ id, version string }

func (e inventoryEntry) node() (*statusNode, schema.GroupVersionKind, error) {
	id, err := object.ParseObjMetadata(e.id)
	if err != nil {
		return &statusNode{Kind: "?", Name: e.id}, schema.GroupVersionKind{}, fmt.Errorf("inventory entry %q: %w", e.id, err)
	}
	gvk := id.GroupKind.WithVersion(e.version)
	return &statusNode{Kind: id.GroupKind.Kind, Namespace: id.Namespace, Name: id.Name}, gvk, nil
}

// inventoryItem is an applied object whose health is to be read.
type inventoryItem struct {
	node *statusNode
	gvk  schema.GroupVersionKind
}

// readHealth reads each applied object and computes its kstatus, a few at
// a time.
func (g *statusGatherer) readHealth(ctx context.Context, items []inventoryItem) error {
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(inventoryReaders)
	for _, it := range items {
		eg.Go(func() error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(it.gvk)
			err := g.c.Get(ctx, client.ObjectKey{Namespace: it.node.Namespace, Name: it.node.Name}, u)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			healthOf(it.node, u, err)
			return nil
		})
	}
	return eg.Wait()
}

// healthOf sets an applied object's readiness from kstatus, the health
// Flux's own checks use.
func healthOf(n *statusNode, u *unstructured.Unstructured, err error) {
	switch {
	case apierrors.IsNotFound(err), notInstalled(err):
		n.Ready, n.Reason, n.Message = metav1.ConditionFalse, "NotFound", "Flux applied it, but it is not there now (Flux applies it again on its next run)"
		return
	case apierrors.IsForbidden(err):
		n.Note = "health not read: reading it is forbidden to you"
		return
	case err != nil:
		n.Ready, n.Reason, n.Message = metav1.ConditionUnknown, "ReadFailed", err.Error()
		return
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		n.Ready, n.Reason, n.Message = metav1.ConditionUnknown, "StatusUnknown", err.Error()
		return
	}
	n.Reason, n.Message = string(res.Status), res.Message
	switch res.Status {
	case kstatus.CurrentStatus:
		n.Ready = metav1.ConditionTrue
	case kstatus.FailedStatus, kstatus.NotFoundStatus:
		n.Ready = metav1.ConditionFalse
	default:
		n.Ready = metav1.ConditionUnknown
	}
}
