package hcpsim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// spec is the part of a SimulatedControlPlane's spec the operator reads.
type spec struct {
	Version              string   `json:"version"`
	KubeconfigSecretName string   `json:"kubeconfigSecretName"`
	Failure              *failure `json:"failure,omitempty"`
	UpgradeDelay         string   `json:"upgradeDelay,omitempty"`
}

type failure struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// status is the normalized status the operator writes, every field always
// present.
type status struct {
	Ready              bool   `json:"ready"`
	Endpoint           string `json:"endpoint"`
	Version            string `json:"version"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
	ObservedGeneration int64  `json:"observedGeneration"`
}

// reconcile brings one object's control plane where its spec says and
// reports it in status; a positive duration asks to be called again then
// (an upgrade under way).
func (o *Operator) reconcile(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	obj, ok, err := o.get(key)
	if err != nil {
		return 0, err
	}
	if !ok {
		// Gone without passing through finalize (deleted before the
		// finalizer was added): nothing may keep running for it.
		o.stop(key, "object gone")
		o.forget(key)
		return 0, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return 0, o.finalize(ctx, key, obj)
	}
	if !slices.Contains(obj.GetFinalizers(), Finalizer) {
		obj.SetFinalizers(append(obj.GetFinalizers(), Finalizer))
		obj, err = o.dynamic.Resource(GVR).Namespace(key.Namespace).Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		if err != nil {
			return 0, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	requeueAfter, err := o.reconcileControlPlane(ctx, key, obj)
	if err == nil {
		o.resolved(key)
	}
	return requeueAfter, err
}

// reconcileControlPlane reads top to bottom as the control plane's life:
// a simulated failure, starting, the kubeconfig Secret, upgrading, ready.
func (o *Operator) reconcileControlPlane(ctx context.Context, key types.NamespacedName, obj *unstructured.Unstructured) (time.Duration, error) {
	var sp spec
	if err := fromMap(obj, "spec", &sp); err != nil {
		return 0, o.writeStatus(ctx, obj, o.notReady(key, ReasonInvalidSpec, fmt.Sprintf("cannot read spec: %v", err)))
	}
	if sp.UpgradeDelay == "" {
		sp.UpgradeDelay = DefaultUpgradeDelay
	}
	upgradeDelay, err := time.ParseDuration(sp.UpgradeDelay)
	if err != nil {
		return 0, o.writeStatus(ctx, obj, o.notReady(key, ReasonInvalidSpec, fmt.Sprintf("spec.upgradeDelay %q is not a duration: %v", sp.UpgradeDelay, err)))
	}

	inst := o.instance(key)
	if inst != nil && inst.uid != obj.GetUID() {
		// A new object under the name of one whose deletion was missed.
		o.stop(key, "object replaced")
		inst = nil
	}

	if sp.Failure != nil {
		// The backend "fails": report it, start nothing, and leave a
		// control plane that already runs alone, as a real backend whose
		// reconciliation fails does not tear down what it runs.
		if inst != nil {
			inst.upgrade = nil
		}
		reason, message := sp.Failure.Reason, sp.Failure.Message
		if reason == "" {
			reason = FailureReason
		}
		if message == "" {
			message = "the simulated backend reports a failure (spec.failure is set)"
		}
		return 0, o.writeStatus(ctx, obj, o.notReady(key, reason, message))
	}

	if inst == nil {
		if inst, err = o.start(ctx, key, obj, sp); err != nil {
			return 0, err
		}
	}
	if err := o.writeKubeconfigSecret(ctx, obj, inst, sp.KubeconfigSecretName); err != nil {
		return 0, err
	}
	if wait := o.upgrade(key, inst, sp.Version, upgradeDelay); wait > 0 {
		st := o.notReady(key, ReasonUpgrading, fmt.Sprintf(
			"upgrading from %s to %s (simulated: takes %s, the API server keeps serving)", inst.version, sp.Version, upgradeDelay))
		return wait, o.writeStatus(ctx, obj, st)
	}
	return 0, o.writeStatus(ctx, obj, status{
		Ready:    true,
		Endpoint: inst.cp.Endpoint(),
		Version:  inst.version,
		Reason:   ReasonReady,
		Message: fmt.Sprintf("kube-apiserver serves at %s; simulated by hcpsim, so %s is only a label: the binary is the plane's own",
			inst.cp.Endpoint(), inst.version),
	})
}

// start starts the object's control plane, reporting Provisioning while it
// comes up and ProvisioningFailed if it does not.
func (o *Operator) start(ctx context.Context, key types.NamespacedName, obj *unstructured.Unstructured, sp spec) (*instance, error) {
	name := InstanceName(key.Namespace, key.Name, obj.GetUID())
	if err := o.writeStatus(ctx, obj, o.notReady(key, ReasonProvisioning, "starting etcd and kube-apiserver "+name)); err != nil {
		return nil, err
	}
	started := time.Now()
	cp, err := o.backend.Start(ctx, name)
	if err != nil {
		if ctx.Err() == nil {
			_ = o.writeStatus(ctx, obj, o.notReady(key, ReasonProvisioningFailed, fmt.Sprintf("starting control plane %s: %v", name, err)))
		}
		return nil, fmt.Errorf("starting control plane %s: %w", name, err)
	}
	inst := &instance{uid: obj.GetUID(), name: name, cp: cp, version: sp.Version}
	o.setInstance(key, inst)
	o.logf("%s: control plane %s %s up at %s in %s", key, name, sp.Version, cp.Endpoint(), time.Since(started).Round(time.Millisecond))
	return inst, nil
}

// upgrade moves inst towards version: it returns how long the simulated
// upgrade still takes, or 0 once inst runs version.
func (o *Operator) upgrade(key types.NamespacedName, inst *instance, version string, delay time.Duration) time.Duration {
	if inst.version == version {
		inst.upgrade = nil
		return 0
	}
	if inst.upgrade == nil || inst.upgrade.to != version {
		inst.upgrade = &upgrade{to: version, since: time.Now()}
		o.logf("%s: upgrading %s from %s to %s", key, inst.name, inst.version, version)
	}
	if left := delay - time.Since(inst.upgrade.since); left > 0 {
		return left
	}
	o.logf("%s: upgraded %s from %s to %s", key, inst.name, inst.version, version)
	inst.version, inst.upgrade = version, nil
	return 0
}

// notReady is a not-ready status that still names what runs, if anything.
func (o *Operator) notReady(key types.NamespacedName, reason, message string) status {
	st := status{Reason: reason, Message: message}
	if inst := o.instance(key); inst != nil {
		st.Endpoint, st.Version = inst.cp.Endpoint(), inst.version
	}
	return st
}

// writeStatus patches status when it differs from what obj carries.
func (o *Operator) writeStatus(ctx context.Context, obj *unstructured.Unstructured, st status) error {
	st.ObservedGeneration = obj.GetGeneration()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	var current status
	if err := fromMap(obj, "status", &current); err == nil && current == st || o.alreadyWritten(key, obj.GetUID(), st) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = o.dynamic.Resource(GVR).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager}, "status")
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	o.setWritten(key, obj.GetUID(), st)
	if st.Reason != ReasonProvisioning {
		o.logf("%s/%s: ready=%t reason=%s version=%s", obj.GetNamespace(), obj.GetName(), st.Ready, st.Reason, st.Version)
	}
	return nil
}

// writeKubeconfigSecret writes the admin kubeconfig into Secret name,
// owned by obj so that the garbage collector removes it with obj, and
// deletes the Secret written before under another name.
func (o *Operator) writeKubeconfigSecret(ctx context.Context, obj *unstructured.Unstructured, inst *instance, name string) error {
	secrets := o.kube.CoreV1().Secrets(obj.GetNamespace())
	if inst.secret != "" && inst.secret != name {
		err := secrets.Delete(ctx, inst.secret, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the former kubeconfig Secret %s: %w", inst.secret, err)
		}
		inst.secret = ""
	}
	kubeconfig := inst.cp.Kubeconfig()
	current, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading kubeconfig Secret %s: %w", name, err)
	case bytes.Equal(current.Data[KubeconfigSecretKey], kubeconfig) && ownedBy(current.OwnerReferences, obj.GetUID()):
		inst.secret = name
		return nil
	}
	secret := corev1ac.Secret(name, obj.GetNamespace()).
		WithLabels(map[string]string{ControlPlaneLabel: obj.GetName()}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(APIVersion).
			WithKind(Kind).
			WithName(obj.GetName()).
			WithUID(obj.GetUID()).
			WithController(true)).
		WithData(map[string][]byte{KubeconfigSecretKey: kubeconfig})
	if _, err := secrets.Apply(ctx, secret, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing kubeconfig Secret %s: %w", name, err)
	}
	inst.secret = name
	o.logf("%s/%s: wrote kubeconfig Secret %s (key %s)", obj.GetNamespace(), obj.GetName(), name, KubeconfigSecretKey)
	return nil
}

// finalize stops the object's control plane and deletes its kubeconfig
// Secret, then lets the object go. The Secret's owner reference would have
// the garbage collector delete it too, but only once the collector has
// discovered the kind, which takes it up to half a minute after the CRD is
// installed.
func (o *Operator) finalize(ctx context.Context, key types.NamespacedName, obj *unstructured.Unstructured) error {
	o.stop(key, "object deleted")
	if !slices.Contains(obj.GetFinalizers(), Finalizer) {
		return nil
	}
	if err := o.deleteKubeconfigSecret(ctx, obj); err != nil {
		return err
	}
	obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == Finalizer }))
	_, err := o.dynamic.Resource(GVR).Namespace(key.Namespace).Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	o.forget(key)
	return nil
}

// deleteKubeconfigSecret deletes the kubeconfig Secret the spec names if
// obj owns it.
func (o *Operator) deleteKubeconfigSecret(ctx context.Context, obj *unstructured.Unstructured) error {
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "kubeconfigSecretName")
	if name == "" {
		return nil
	}
	secrets := o.kube.CoreV1().Secrets(obj.GetNamespace())
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading kubeconfig Secret %s: %w", name, err)
	}
	if !ownedBy(secret.OwnerReferences, obj.GetUID()) {
		return nil
	}
	uid := secret.UID
	err = secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting kubeconfig Secret %s: %w", name, err)
	}
	return nil
}

// stop stops the object's control plane, if one runs, and forgets it.
func (o *Operator) stop(key types.NamespacedName, why string) {
	inst := o.instance(key)
	if inst == nil {
		return
	}
	inst.cp.Stop()
	o.setInstance(key, nil)
	o.logf("%s: stopped control plane %s (%s)", key, inst.name, why)
}

// InstanceName is the name of the control plane the operator starts for
// object namespace/name with uid: a DNS label starting hcp-<namespace>-<name>
// (cut to fit) and ending in a hash, so that a recreated object gets new
// processes and directories.
func InstanceName(namespace, name string, uid types.UID) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name + "/" + string(uid)))
	suffix := hex.EncodeToString(sum[:])[:8]
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower("hcp-"+namespace+"-"+name))
	if limit := 63 - 1 - len(suffix); len(base) > limit {
		base = base[:limit]
	}
	return strings.TrimRight(base, "-") + "-" + suffix
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// fromMap decodes obj's top-level field into out.
func fromMap(obj *unstructured.Unstructured, field string, out any) error {
	m, ok := obj.Object[field]
	if !ok {
		return nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
