// The action's post step: runs when the job ends, whatever happened
// (post-if: always()), and releases the hold its acquire took, by its
// fencing token. Nothing held, nothing to do.
'use strict';
const { lockctl } = require('./lockctl-action.js');

function post() {
  const token = process.env.STATE_token || '';
  const ns = process.env.STATE_namespace || '';
  if (!token || !ns) {
    console.log('lockctl: no lock held by this action, nothing to release');
    return 0;
  }
  const r = lockctl(['release', ns, '--token', token], false);
  if (r.code !== 0) {
    // The job's own result stands; the hold expires after its ttl.
    console.log(`::warning::lockctl release ${ns} --token ${token} exited ${r.code}${r.error ? ': ' + r.error : ''}; the lock expires after its ttl`);
  }
  return 0;
}

process.exitCode = post();
