// The action's main step: acquire, run or release (action.yml).
'use strict';
const { input, append, lockctl } = require('./lockctl-action.js');

function main() {
  const command = input('command') || 'acquire';
  const ns = input('namespace');
  if (!ns) {
    console.log('::error::input namespace is required');
    return 2;
  }
  const common = [];
  if (input('lock-namespace')) {
    common.push('--lock-namespace', input('lock-namespace'));
  }
  switch (command) {
    case 'acquire': {
      append('GITHUB_STATE', 'namespace', ns);
      const r = lockctl(['acquire', ns, '--timeout', input('timeout') || '30m', '--ttl', input('ttl') || '1h', ...common], true);
      if (r.error) {
        console.log('::error::' + r.error);
        return 1;
      }
      if (r.code !== 0) {
        // Superseded (3) or timed out (4): nothing held, nothing for post.
        console.log(`::error::lockctl acquire ${ns} exited ${r.code}`);
        return r.code;
      }
      const token = r.stdout.trim();
      append('GITHUB_STATE', 'token', token);
      append('GITHUB_OUTPUT', 'token', token);
      append('GITHUB_ENV', 'LOCKCTL_FENCING_TOKEN', token);
      console.log(`lock ${ns} held with fencing token ${token}; released when the job ends`);
      return 0;
    }
    case 'run': {
      const cmd = input('run');
      if (!cmd) {
        console.log('::error::command run needs the input run (the shell command)');
        return 2;
      }
      const r = lockctl(['run', '--lock', ns, '--timeout', input('timeout') || '30m', '--ttl', input('ttl') || '1h', ...common, '--', 'bash', '-eo', 'pipefail', '-c', cmd], false);
      if (r.error) {
        console.log('::error::' + r.error);
      }
      return r.code;
    }
    case 'release': {
      const token = input('token') || process.env.LOCKCTL_FENCING_TOKEN || '';
      const args = ['release', ns, ...common];
      if (token) {
        args.push('--token', token);
      }
      const r = lockctl(args, false);
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

process.exitCode = main();
