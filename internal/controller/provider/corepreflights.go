package provider

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/plan"
	providerplan "github.com/capwright/capwright/internal/plan/provider"
)

// CorePreflights hands what a core provider's preflight established to
// the other providers' preflight (checkCore) within the manager, the
// moment it passes: the other providers wait for the contract of the core
// that is going to run, and without this they would learn it only from
// the core's status, written after the core's installer and Flux objects
// — some 60 ms later on a first install, a serialization the guarantee
// does not ask for. The core's status stays the durable record: after a
// restart, or for a generation no preflight here passed, checkCore reads
// it as before.
type CorePreflights struct {
	mu     sync.Mutex
	passed map[types.UID]corePassed
	wake   []chan event.GenericEvent
}

// corePassed is the generation of a core provider whose preflight passed
// and the contract it read.
type corePassed struct {
	generation int64
	contract   string
}

// NewCorePreflights returns an empty record.
func NewCorePreflights() *CorePreflights {
	return &CorePreflights{passed: map[types.UID]corePassed{}}
}

// Pass records that core's preflight passed for its current generation
// with contract, and wakes the other kinds' providers when that is news.
func (c *CorePreflights) Pass(core v1alpha1.Provider, contract string) {
	c.pass(providerplan.OwnerOf(core, "CoreProvider"), contract)
}

// pass is Pass for the core provider a plan names.
func (c *CorePreflights) pass(core providerplan.Owner, contract string) {
	if c == nil || contract == "" {
		return
	}
	now := corePassed{generation: core.Generation, contract: contract}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.passed[core.UID] == now {
		return
	}
	c.passed[core.UID] = now
	// The providers woken list their kind; they read nothing of the core
	// but its name.
	woken := &v1alpha1.CoreProvider{ObjectMeta: metav1.ObjectMeta{Namespace: core.Namespace, Name: core.Name, UID: core.UID, Generation: core.Generation}}
	for _, ch := range c.wake {
		// The providers of that kind are woken already when the buffer
		// is full; the core's status wakes them in any case.
		select {
		case ch <- event.GenericEvent{Object: woken.DeepCopy()}:
		default:
		}
	}
}

// settle records what the plan of a core provider established, from the
// plan alone: its preflight passed for its contract (Pass), or it was
// refused and no longer vouches for a contract (a config Secret or a
// dependency changed, the generation did not). It comes before the
// core's writes, so the other kinds' providers wake at once; nothing is
// recorded for another kind, a suspended core, or one kept as installed.
func (c *CorePreflights) settle(d providerplan.Desired, err error) {
	if d.Owner.Type != v1alpha1.CoreProviderType || d.Suspend {
		return
	}
	if refusal, refused := plan.AsRefusal(err); refused && refusal.Condition != v1alpha1.InstalledCondition {
		c.forget(d.Owner.UID)
		return
	}
	if !d.Keep {
		c.pass(d.Owner, d.Status.Contract)
	}
}

// forget drops a core provider whose preflight refused it, or that is
// being deleted; a provider of another kind is not recorded.
func (c *CorePreflights) forget(core types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.passed, core)
}

// contract returns the contract the core's preflight read for the
// generation it has now, if it passed here.
func (c *CorePreflights) contract(core *v1alpha1.CoreProvider) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.passed[core.UID]
	if !ok || p.generation != core.Generation {
		return "", false
	}
	return p.contract, true
}

// source wakes every provider of a non-core kind (h) when a core
// provider's preflight passes.
func (c *CorePreflights) source(h handler.EventHandler) source.Source {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan event.GenericEvent, 8)
	c.wake = append(c.wake, ch)
	return source.Channel(ch, h)
}
