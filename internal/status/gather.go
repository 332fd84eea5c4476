// Package status reads what `capwright status` shows from a cluster: the
// Capwright objects selected, the Flux objects Capwright wrote for them,
// what Flux applied (their inventories) and the health of each, as a tree
// of values. Printing it, and the exit codes, are the CLI's.
package status

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/fluxobjects"
	"github.com/capwright/capwright/internal/render"
)

// Selection is what to show: one object (Kind set), or everything
// Capwright manages, in Namespace when set.
type Selection struct {
	Kind      *Kind
	Name      string
	Namespace string
}

// Gatherer reads the tree from a cluster.
type Gatherer struct {
	Client client.Client
}

// NotFoundError is a KIND/NAME the cluster does not have.
type NotFoundError struct {
	Kind, Namespace, Name string
}

func (e *NotFoundError) Error() string {
	if e.Namespace != "" {
		return fmt.Sprintf("%s %s/%s not found (kubectl get %s -A lists them)", e.Kind, e.Namespace, e.Name, strings.ToLower(e.Kind))
	}
	return fmt.Sprintf("%s %s not found in any namespace (kubectl get %s -A lists them)", e.Kind, e.Name, strings.ToLower(e.Kind))
}

// NotInstalledError is a cluster that does not serve Capwright's kinds:
// Missing are their CRDs.
type NotInstalledError struct {
	Missing []string
}

func (e *NotInstalledError) Error() string {
	return "the cluster does not serve " + strings.Join(e.Missing, ", ")
}

// AmbiguousError is a KIND/NAME found in several namespaces, selected
// without one.
type AmbiguousError struct {
	Kind, Name string
	Namespaces []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s %s exists in namespaces %s", e.Kind, e.Name, strings.Join(e.Namespaces, ", "))
}

// gathering is one read of the tree, with the notes it takes.
type gathering struct {
	*Gatherer
	notes []string
}

// Gather reads the selected Capwright objects, the Flux objects Capwright
// wrote for them, what Flux applied, and their health.
func (g *Gatherer) Gather(ctx context.Context, sel Selection) (*Report, error) {
	r := &gathering{Gatherer: g}
	owners, err := r.owners(ctx, sel)
	if err != nil {
		return nil, err
	}
	flux, err := r.fluxObjects(ctx, sel, owners)
	if err != nil {
		return nil, err
	}
	var (
		nodes     []*Node
		inventory []inventoryItem
	)
	for _, o := range owners {
		n, items := ownerNode(o, flux)
		nodes = append(nodes, n)
		inventory = append(inventory, items...)
	}
	if err := readHealth(ctx, g.Client, inventory); err != nil {
		return nil, err
	}
	return newReport(nodes, r.notes), nil
}

// List lists a kind, in namespace when set, sorted by namespace and name.
func (g *Gatherer) List(ctx context.Context, k Kind, namespace string) ([]client.Object, error) {
	list := k.NewList()
	var opts []client.ListOption
	if k.Namespaced && namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := g.Client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %s: %w", k.CRD(), err)
	}
	out, err := fluxobjects.Items(list)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b client.Object) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// owner is one Capwright object and its kind.
type owner struct {
	kind Kind
	obj  client.Object
}

func (r *gathering) owners(ctx context.Context, sel Selection) ([]owner, error) {
	if sel.Kind != nil {
		o, err := r.one(ctx, *sel.Kind, sel.Name, sel.Namespace)
		if err != nil {
			return nil, err
		}
		return []owner{o}, nil
	}
	var (
		out     []owner
		missing []string
	)
	kinds := Kinds()
	for _, k := range kinds {
		if sel.Namespace != "" && !k.Namespaced {
			continue
		}
		objs, err := r.List(ctx, k, sel.Namespace)
		if fluxobjects.NotServed(err) {
			missing = append(missing, k.CRD())
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			out = append(out, owner{kind: k, obj: obj})
		}
	}
	if len(missing) > 0 && len(out) == 0 && slices.Contains(missing, kinds[0].CRD()) {
		return nil, &NotInstalledError{Missing: missing}
	}
	if len(missing) > 0 {
		r.notes = append(r.notes, fmt.Sprintf("the cluster does not serve %s (CRDs missing: an older Capwright?); not shown", strings.Join(missing, ", ")))
	}
	return out, nil
}

// one finds KIND/NAME: in namespace, or in the one namespace that has it.
func (r *gathering) one(ctx context.Context, k Kind, name, namespace string) (owner, error) {
	objs, err := r.List(ctx, k, namespace)
	if fluxobjects.NotServed(err) {
		return owner{}, &NotInstalledError{Missing: []string{k.CRD()}}
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
		return owner{}, &NotFoundError{Kind: k.Kind, Namespace: namespace, Name: name}
	case 1:
		return owner{kind: k, obj: found[0]}, nil
	}
	namespaces := make([]string, len(found))
	for i, o := range found {
		namespaces[i] = o.GetNamespace()
	}
	return owner{}, &AmbiguousError{Kind: k.Kind, Name: name, Namespaces: namespaces}
}

// fluxObjects lists the Flux objects the owners may have: for one owner,
// those labelled as its own; for everything, all of them (four lists,
// rather than four per owner).
func (r *gathering) fluxObjects(ctx context.Context, sel Selection, owners []owner) ([]client.Object, error) {
	if len(owners) == 0 {
		return nil, nil
	}
	var opts []client.ListOption
	if sel.Kind != nil {
		labels, namespace := ownerLabels(owners[0])
		opts = append(opts, client.MatchingLabels(labels))
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
	} else if sel.Namespace != "" {
		opts = append(opts, client.InNamespace(sel.Namespace))
	}
	var out []client.Object
	for _, k := range fluxobjects.Kinds() {
		list := k.NewList()
		err := r.Client.List(ctx, list, opts...)
		if fluxobjects.NotServed(err) {
			r.notes = append(r.notes, fmt.Sprintf("the cluster does not serve Flux's %s kind (is Flux installed?); none shown", k.Kind))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", k.Kind, err)
		}
		items, err := fluxobjects.Items(list)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	slices.SortStableFunc(out, func(a, b client.Object) int {
		return cmp.Or(cmp.Compare(fluxobjects.KindOrder(a), fluxobjects.KindOrder(b)),
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
func ownerNode(o owner, flux []client.Object) (*Node, []inventoryItem) {
	n := &Node{Kind: o.kind.Kind, Namespace: o.obj.GetNamespace(), Name: o.obj.GetName()}
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
func tenantChildren(n *Node, t *tenancyv1alpha1.Tenant, mine []client.Object) (*Node, []inventoryItem) {
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
	add := func(parent *Node, f client.Object) {
		child, more := fluxNode(f)
		parent.Children = append(parent.Children, child)
		items = append(items, more...)
	}
	for _, f := range loose {
		add(n, f)
	}
	for _, c := range t.Status.Clusters {
		cn := &Node{Kind: "Cluster", Namespace: c.Namespace, Name: c.Name, Reason: c.Reason, Message: c.Message,
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

// fluxNode is a Flux object's subtree: for an applier, what it applied.
func fluxNode(f client.Object) (*Node, []inventoryItem) {
	n := &Node{Kind: fluxobjects.KindOf(f), Namespace: f.GetNamespace(), Name: f.GetName()}
	var remote string
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
		if obj.Spec.KubeConfig != nil {
			remote = obj.Spec.KubeConfig.SecretRef.Name
		}
	}
	inventory := fluxobjects.Inventory(f)
	var items []inventoryItem
	for _, e := range inventory {
		child, applied, err := entryNode(e)
		if err != nil {
			child.Note = err.Error()
		}
		n.Children = append(n.Children, child)
		if remote != "" {
			continue
		}
		if err == nil {
			items = append(items, inventoryItem{node: child, applied: applied})
		}
	}
	if remote != "" && len(inventory) > 0 {
		n.Note = fmt.Sprintf("applied on the cluster of kubeconfig Secret %s/%s: health not read from there", f.GetNamespace(), remote)
	}
	return n, items
}

// entryNode is the node of an inventory entry, and the object it names.
func entryNode(e fluxobjects.Entry) (*Node, fluxobjects.Applied, error) {
	a, err := e.Object()
	if err != nil {
		return &Node{Kind: "?", Name: e.ID}, a, err
	}
	return &Node{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name}, a, nil
}
