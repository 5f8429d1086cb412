// Helpers shared by main.js and post.js: the runner's file protocol for
// inputs, outputs, state and environment, and running lockctl. No
// dependencies, so the action needs no build step and no node_modules.
'use strict';
const fs = require('fs');
const os = require('os');
const { spawnSync } = require('child_process');

// input reads an input as the runner passes it: INPUT_<NAME>, upper case,
// spaces as underscores, dashes kept.
function input(name) {
  return (process.env['INPUT_' + name.replace(/ /g, '_').toUpperCase()] || '').trim();
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

// lockctl runs lockctl with args; stderr (status, waiting lines) goes to
// the log as it comes, stdout is returned.
function lockctl(args, capture) {
  const bin = process.env.LOCKCTL_BIN || 'lockctl';
  const r = spawnSync(bin, args, { stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'], encoding: 'utf8' });
  if (r.error) {
    return { code: 1, stdout: '', error: `run ${bin}: ${r.error.message} (is lockctl installed? see integrations/github/setup)` };
  }
  return { code: r.status === null ? 1 : r.status, stdout: r.stdout || '', signal: r.signal };
}

module.exports = { input, append, lockctl };
