package hcpsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Backend starts the processes of a control plane. The plane implements it
// with its workload clusters (a real etcd and kube-apiserver each).
type Backend interface {
	// Start starts a control plane named name (a DNS label, unique per
	// SimulatedControlPlane object) and returns once its API server
	// serves. On error nothing it started is left running.
	Start(ctx context.Context, name string) (ControlPlane, error)
}

// ControlPlane is a running control plane of a Backend.
type ControlPlane interface {
	// Endpoint is the API server's URL, https://127.0.0.1:<port>.
	Endpoint() string
	// Kubeconfig is an admin kubeconfig with embedded credentials.
	Kubeconfig() []byte
	// Stop ends its processes and returns once they are gone.
	Stop()
}

// Options configure the operator.
type Options struct {
	// Backend starts the control planes. Required.
	Backend Backend
	// Logf receives one line per action (started, upgraded, stopped…) and
	// per new problem; may be nil. Kubeconfigs are never logged.
	Logf func(format string, args ...any)
	// Workers is how many objects are reconciled at once (starting a
	// control plane takes seconds); default 4.
	Workers int
	// Resync lists every object again this often, which also repairs a
	// deleted or edited kubeconfig Secret; default 30s.
	Resync time.Duration
}

const (
	// fieldManager names hcpsim in managedFields and is its user agent.
	fieldManager   = "hcpsim"
	defaultWorkers = 4
	defaultResync  = 30 * time.Second
)

// Operator reconciles SimulatedControlPlanes. Create it with New and run
// it with Run.
type Operator struct {
	dynamic dynamic.Interface
	kube    kubernetes.Interface
	backend Backend
	logf    func(format string, args ...any)
	workers int
	resync  time.Duration
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// get reads an object from the informer's cache.
	get func(key types.NamespacedName) (*unstructured.Unstructured, bool, error)

	mu sync.Mutex
	// instances are the running control planes by object.
	instances map[types.NamespacedName]*instance
	// problems holds the last problem logged per object, so that a
	// lasting problem is logged once rather than on every retry.
	problems map[types.NamespacedName]string
	// written is the status last written per object: the informer's copy
	// can lag behind it, and an unchanged status is not written again.
	written map[types.NamespacedName]writtenStatus
}

type writtenStatus struct {
	uid    types.UID
	status status
}

// instance is what the operator knows of one running control plane; it
// lives in memory only (the plane does not restart the operator).
type instance struct {
	uid  types.UID
	name string
	cp   ControlPlane
	// version is the version it runs: the spec's version once an upgrade
	// to it has finished.
	version string
	// upgrade is the upgrade under way, if any.
	upgrade *upgrade
	// secret is the kubeconfig Secret last written.
	secret string
}

type upgrade struct {
	to    string
	since time.Time
}

// New returns an operator for the API server behind cfg.
func New(cfg *rest.Config, opts Options) (*Operator, error) {
	if cfg == nil {
		return nil, errors.New("hcpsim: nil rest.Config")
	}
	if opts.Backend == nil {
		return nil, errors.New("hcpsim: no Backend")
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = fieldManager
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 100
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("hcpsim: creating dynamic client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("hcpsim: creating client: %w", err)
	}
	o := &Operator{
		dynamic:   dyn,
		kube:      kube,
		backend:   opts.Backend,
		logf:      opts.Logf,
		workers:   opts.Workers,
		resync:    opts.Resync,
		instances: map[types.NamespacedName]*instance{},
		problems:  map[types.NamespacedName]string{},
		written:   map[types.NamespacedName]writtenStatus{},
	}
	if o.logf == nil {
		o.logf = func(string, ...any) {}
	}
	if o.workers <= 0 {
		o.workers = defaultWorkers
	}
	if o.resync <= 0 {
		o.resync = defaultResync
	}
	return o, nil
}

// ControlPlane returns the running control plane of the
// SimulatedControlPlane namespace/name, if the operator runs one.
func (o *Operator) ControlPlane(namespace, name string) (ControlPlane, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	inst, ok := o.instances[types.NamespacedName{Namespace: namespace, Name: name}]
	if !ok {
		return nil, false
	}
	return inst.cp, true
}

// Run watches SimulatedControlPlanes and reconciles them until ctx ends;
// then it stops every control plane it started and returns nil. The CRD
// must be installed (it is retried until it is).
func (o *Operator) Run(ctx context.Context) error {
	o.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		// Quick retries: tests wait on this operator.
		workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](100*time.Millisecond, 5*time.Second),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: fieldManager},
	)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(o.dynamic, o.resync)
	informer := factory.ForResource(GVR).Informer()
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			o.queue.Add(types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("hcpsim: %w", err)
	}
	o.get = func(key types.NamespacedName) (*unstructured.Unstructured, bool, error) {
		obj, ok, err := informer.GetIndexer().GetByKey(key.String())
		if err != nil || !ok {
			return nil, ok, err
		}
		return obj.(*unstructured.Unstructured).DeepCopy(), true, nil
	}
	factory.Start(ctx.Done())
	o.logf("watching %s", GVR.GroupResource())

	var workers sync.WaitGroup
	if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		for range o.workers {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for o.processNext(ctx) {
				}
			}()
		}
	}
	<-ctx.Done()
	o.queue.ShutDown()
	workers.Wait()
	factory.Shutdown()
	o.stopAll()
	return nil
}

// processNext reconciles one queued object; false once the queue is shut
// down.
func (o *Operator) processNext(ctx context.Context) bool {
	key, shutdown := o.queue.Get()
	if shutdown {
		return false
	}
	defer o.queue.Done(key)
	requeueAfter, err := o.reconcile(ctx, key)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			o.problem(key, "%s: %v", key, err)
		}
		o.queue.AddRateLimited(key)
	case requeueAfter > 0:
		o.queue.Forget(key)
		o.queue.AddAfter(key, requeueAfter)
	default:
		o.queue.Forget(key)
	}
	return true
}

// stopAll stops every running control plane.
func (o *Operator) stopAll() {
	o.mu.Lock()
	instances := o.instances
	o.instances = map[types.NamespacedName]*instance{}
	o.mu.Unlock()
	for key, inst := range instances {
		inst.cp.Stop()
		o.logf("%s: stopped control plane %s (operator stopping)", key, inst.name)
	}
}

func (o *Operator) problem(key types.NamespacedName, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	o.mu.Lock()
	repeated := o.problems[key] == msg
	o.problems[key] = msg
	o.mu.Unlock()
	if !repeated {
		o.logf("%s", msg)
	}
}

// alreadyWritten reports whether st is the status last written for the
// object key with uid.
func (o *Operator) alreadyWritten(key types.NamespacedName, uid types.UID, st status) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.written[key] == writtenStatus{uid: uid, status: st}
}

func (o *Operator) setWritten(key types.NamespacedName, uid types.UID, st status) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.written[key] = writtenStatus{uid: uid, status: st}
}

func (o *Operator) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.written, key)
	delete(o.problems, key)
}

func (o *Operator) resolved(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.problems, key)
}

func (o *Operator) instance(key types.NamespacedName) *instance {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.instances[key]
}

func (o *Operator) setInstance(key types.NamespacedName, inst *instance) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if inst == nil {
		delete(o.instances, key)
		return
	}
	o.instances[key] = inst
}
