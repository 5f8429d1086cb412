// Helpers shared by main.js and post.js: the runner's file protocol for
// inputs, outputs, state and environment, and running lockctl. No
// dependencies, so the action needs no build step and no node_modules.
'use strict';
const fs = require('fs');
const os = require('os');
const { spawn } = require('child_process');

// input reads an input as the runner passes it: INPUT_<NAME>, upper case,
// spaces as underscores, dashes kept.
function input(name) {
  return (process.env['INPUT_' + name.replace(/ /g, '_').toUpperCase()] || '').trim();
}

// state reads what main saved with append('GITHUB_STATE', name, value): the
// runner passes it to the post step as STATE_<name>, and only there.
function state(name) {
  return process.env['STATE_' + name] || '';
}

// append writes name=value to the file the runner named in the variable
// file (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STATE), with a delimiter.
function append(file, name, value) {
  const path = process.env[file];
  if (!path) {
    throw new Error(file + ' is not set: run this action from GitHub Actions');
  }
  const delim = 'lockctl_' + Math.random().toString(36).slice(2);
  fs.appendFileSync(path, `${name}<<${delim}${os.EOL}${value}${os.EOL}${delim}${os.EOL}`);
}

// lockctl runs lockctl with args and resolves to { code, stdout, stderr,
// error, interrupted }. stderr (status, waiting lines) goes to the log as it
// comes; stdout is returned when capture is set, else logged too.
//
// The runner cancels a step by signalling its node process alone (SIGINT,
// then SIGTERM, then SIGKILL of that pid), never its children. While
// lockctl runs, this process catches SIGINT and SIGTERM, passes each on to
// lockctl and waits for it to end: an acquire that is waiting leaves the
// lock's queue (it exits 130 or 143), a run passes the signal on to its
// command and releases. interrupted names the first signal caught.
function lockctl(args, capture) {
  const bin = process.env.LOCKCTL_BIN || 'lockctl';
  return new Promise((resolve) => {
    let interrupted = '';
    let stdout = '';
    let stderr = '';
    let child;
    let settled = false;
    const forward = (sig) => {
      interrupted = interrupted || sig;
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill(sig);
      }
    };
    const onInt = () => forward('SIGINT');
    const onTerm = () => forward('SIGTERM');
    const done = (r) => {
      if (settled) {
        return;
      }
      settled = true;
      process.removeListener('SIGINT', onInt);
      process.removeListener('SIGTERM', onTerm);
      resolve({ stdout, stderr, interrupted, ...r });
    };
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    child = spawn(bin, args, { stdio: ['ignore', capture ? 'pipe' : 'inherit', 'pipe'] });
    if (capture) {
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d) => { stdout += d; });
    }
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      stderr += d;
      process.stderr.write(d);
    });
    child.on('error', (err) => {
      done({ code: 1, error: `run ${bin}: ${err.message} (is lockctl installed? see integrations/github/setup)` });
    });
    child.on('close', (code, signal) => {
      done({ code: code === null ? 128 + (os.constants.signals[signal] || 9) : code, signal });
    });
  });
}

module.exports = { input, state, append, lockctl };
