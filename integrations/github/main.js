// The action's main step: acquire, run or release (action.yml).
'use strict';
const { input, append, lockctl } = require('./lockctl-action.js');

// lockNamespaceArgs are the flags that select where the lock lives.
function lockNamespaceArgs(lockNs) {
  return lockNs ? ['--lock-namespace', lockNs] : [];
}

async function main() {
  const command = input('command') || 'acquire';
  const ns = input('namespace');
  if (!ns) {
    console.log('::error::input namespace is required');
    return 2;
  }
  const lockNs = input('lock-namespace');
  const common = lockNamespaceArgs(lockNs);
  switch (command) {
    case 'acquire': {
      // Everything post needs is saved in the state before lockctl starts:
      // post sees only its inputs and this state, and it must release
      // (or leave the queue) in the same place even if this step is
      // cancelled or killed while lockctl waits.
      append('GITHUB_STATE', 'namespace', ns);
      append('GITHUB_STATE', 'lock_namespace', lockNs);
      append('GITHUB_STATE', 'acquiring', 'true');
      const r = await lockctl(['acquire', ns, '--timeout', input('timeout') || '30m', '--ttl', input('ttl') || '1h', ...common], true);
      if (r.error) {
        console.log('::error::' + r.error);
        append('GITHUB_STATE', 'acquire_exit', '1');
        return 1;
      }
      const token = r.stdout.trim();
      if (r.code !== 0 || !token) {
        // Superseded (3), timed out (4) or cancelled: nothing held.
        append('GITHUB_STATE', 'acquire_exit', String(r.code));
        if (r.interrupted) {
          console.log(`::error::cancelled (${r.interrupted}) while waiting for lock ${ns}; lockctl acquire left the queue (exit ${r.code})`);
        } else {
          console.log(`::error::lockctl acquire ${ns} exited ${r.code}`);
        }
        return r.code || 1;
      }
      append('GITHUB_STATE', 'token', token);
      append('GITHUB_STATE', 'acquire_exit', '0');
      append('GITHUB_OUTPUT', 'token', token);
      append('GITHUB_ENV', 'LOCKCTL_FENCING_TOKEN', token);
      console.log(`lock ${ns} held with fencing token ${token}; released when the job ends`);
      // A cancel that came as lockctl finished: the hold is post's to release.
      return r.interrupted ? 1 : 0;
    }
    case 'run': {
      const cmd = input('run');
      if (!cmd) {
        console.log('::error::command run needs the input run (the shell command)');
        return 2;
      }
      // As for acquire, post must find what this step may hold even if
      // the step is cancelled or killed while the command runs.
      append('GITHUB_STATE', 'namespace', ns);
      append('GITHUB_STATE', 'lock_namespace', lockNs);
      append('GITHUB_STATE', 'running', 'true');
      const r = await lockctl(['run', '--lock', ns, '--timeout', input('timeout') || '30m', '--ttl', input('ttl') || '1h', ...common, '--', 'bash', '-eo', 'pipefail', '-c', cmd], false);
      if (r.error) {
        console.log('::error::' + r.error);
      }
      // lockctl run released at its end, unless it was stopped (a
      // cancel): then post releases by this job's identity.
      append('GITHUB_STATE', 'run_exit', String(r.code));
      if (r.interrupted) {
        append('GITHUB_STATE', 'run_interrupted', r.interrupted);
      }
      return r.code;
    }
    case 'release': {
      const token = input('token') || process.env.LOCKCTL_FENCING_TOKEN || '';
      const args = ['release', ns, ...common];
      if (token) {
        args.push('--token', token);
      }
      const r = await lockctl(args, false);
      if (r.error) {
        console.log('::error::' + r.error);
      }
      return r.code;
    }
    default:
      console.log(`::error::input command is "${command}": want acquire, run or release`);
      return 2;
  }
}

main().then((code) => {
  process.exitCode = code;
}, (err) => {
  console.log('::error::' + err.message);
  process.exitCode = 1;
});
