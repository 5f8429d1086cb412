// The action's post step: runs when the job ends, whatever happened
// (post-if: always()), and releases the hold its acquire took, by its
// fencing token, where main took it, or the hold of a run that was
// cancelled or killed, by the job's identity. Everything it uses comes from the
// state main saved (the runner passes post nothing else of main's).
'use strict';
const { state, lockctl } = require('./lockctl-action.js');

async function post() {
  const ns = state('namespace');
  if (!ns) {
    console.log('lockctl: no lock held by this action, nothing to release');
    return 0;
  }
  const token = state('token');
  const lockNs = state('lock_namespace');
  const where = lockNs ? ['--lock-namespace', lockNs] : [];
  if (state('running') === 'true') {
    return postRun(ns, where);
  }
  const exit = state('acquire_exit');
  if (!token) {
    if (exit !== '') {
      // The acquire gave up (superseded, timed out) or was cancelled and
      // left the queue: nothing was held.
      console.log(`lockctl: no lock held by this action (acquire exited ${exit}), nothing to release`);
      return 0;
    }
    // main ended without saying how the acquire went (killed while it
    // waited): release by this job's identity, which also takes a claim
    // still queued out of the queue.
    console.log(`::warning::lockctl acquire ${ns} did not finish; releasing by this job's identity`);
    const r = await lockctl(['release', ns, ...where], false);
    if (r.code !== 0) {
      console.log(`::warning::lockctl release ${ns} exited ${r.code}${r.error ? ': ' + r.error : ''}; any hold expires after its ttl`);
    }
    return 0;
  }
  const r = await lockctl(['release', ns, '--token', token, ...where], false);
  if (r.code !== 0) {
    // The job's own result stands; the hold expires after its ttl.
    console.log(`::warning::lockctl release ${ns} --token ${token} exited ${r.code}${r.error ? ': ' + r.error : ''}; the lock expires after its ttl`);
  } else if (/is not held; nothing to release/.test(r.stderr)) {
    // Held when main ended, gone now: someone broke it, it expired, or
    // it is not where this step looked.
    console.log(`::warning::lock ${ns}${lockNs ? ' in namespace ' + lockNs : ''} was held by this job under fencing token ${token}, but the post step found it not held: it was broken or expired before the job ended`);
  }
  return 0;
}

// postRun ends a command: run step. lockctl run releases when its
// command ends, and on a cancel before it exits when it can: in the
// runner's 2.5 s between SIGTERM and SIGKILL. A run that did not end
// cleanly (cancelled, killed) may have left its hold, or its claim in the
// queue: release by this job's identity, which takes either away and
// says "nothing to release" when lockctl did.
async function postRun(ns, where) {
  const exit = state('run_exit');
  const interrupted = state('run_interrupted');
  if (exit !== '' && !interrupted) {
    console.log(`lockctl: lockctl run ${ns} ended (exit ${exit}) and released; nothing to release`);
    return 0;
  }
  const why = exit === '' ? 'did not finish' : `was cancelled (${interrupted}, exit ${exit})`;
  console.log(`lockctl: lockctl run ${ns} ${why}; releasing by this job's identity`);
  const r = await lockctl(['release', ns, ...where], false);
  if (r.code !== 0) {
    console.log(`::warning::lockctl release ${ns} exited ${r.code}${r.error ? ': ' + r.error : ''}; any hold expires after its ttl`);
  }
  return 0;
}

post().then((code) => {
  process.exitCode = code;
}, (err) => {
  console.log('::error::' + err.message);
  process.exitCode = 1;
});
