// Package podwatch follows a pod to its end while streaming the logs of its
// containers.
//
// A Follower watches one pod, named or found by a label selector, with
// watchtools.UntilWithSync: a list and a watch on the pod, which the informer
// underneath re-establishes by itself after watch errors, expiry (410 Gone)
// and API server restarts. Every change of the pod's phase and of its
// containers' states is reported as an Event. Follow returns when the pod is
// Succeeded or Failed, with a Result holding the exit codes; a deleted pod is
// an error (ErrPodDeleted), and so is a cancelled context.
//
// Logs are read with the pods/log subresource, always with timestamps, which
// are stripped before the lines are written. The timestamps let a stream that
// ends before its container does be re-opened from the last line seen
// (SinceTime) without losing or repeating lines, and let a restarted container
// be read to the end through Previous before the new instance is streamed.
//
// Ordering: init containers are streamed one after another in spec order, as
// Kubernetes runs them; the main containers, and init containers with
// restartPolicy Always (sidecars), are streamed concurrently once the regular
// init containers are done. Lines are written whole, so concurrent streams
// interleave by line, each line prefixed with "[container] " when the pod has
// more than one container.
//
// Logs are best effort: a stream that cannot be opened or breaks is reported
// once per container (an EventLogError and a warning on the logger) and never
// fails Follow. Once the pod has finished, Follow waits for the open streams
// to drain, but gives up on a stream that stays idle for FollowOptions.DrainTimeout.
//
// podwatch never exits the process and never touches the lock: the caller
// handles SIGINT by cancelling the context, then aborts the job and releases
// the lock.
package podwatch
