// Package run holds a namespace's deploy lock while something runs: a job
// driven to its end by this process, or a local command. It is the library
// behind `lockctl run`; cmd only parses flags, prints and picks exit codes.
//
// A Hold is a lock taken with a short expiry and renewed every third of it
// until it is released, once; Lost reports the renewal that found it taken.
// A hold's Ref ties the jobs a run submits to it (AnnotationHoldRef), so
// that HoldChecker, the scheduler's RunChecker, can tell a dead run's pod
// and have it deleted. Jobs drives one job to its end
// beside any reconcile loop, following its pod across replacement, and
// Command supervises a local command (signals, process group, exit status).
// Both report what happens to an Observer; a CLI display is one.
//
// PodLocker lets the reconciler take namespace locks for job pods that ask
// for them (spec.lock).
package run
