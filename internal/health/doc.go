// Package health folds the conditions of Flux objects into provider
// conditions. It is pure — values in, values out — so the controller and
// tests share it, and it is generation- and revision-aware: a Flux object
// counts only for its current generation, and what it applied counts as
// installed only at the revision the provider expects.
//
// The controller observes its Flux objects (Observe*), folds them into
// Installed and Available (FoldProvider), sets them with SetCondition and
// summarises everything into Ready (Summary).
package health
