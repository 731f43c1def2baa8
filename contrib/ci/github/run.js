// SPDX-License-Identifier: Apache-2.0
// The GitHub Action's steps (action.yml): node runs the shell scripts
// beside this file, with the action's inputs as EGR_* variables. No npm
// dependencies: child_process only.
'use strict';
const { spawnSync } = require('child_process');
const path = require('path');

function input(name, dflt) {
  // the runner sets INPUT_<NAME> (upper case, spaces as _; '-' stays)
  const v = process.env['INPUT_' + name.replace(/ /g, '_').toUpperCase()];
  return v === undefined || v.trim() === '' ? dflt : v.trim();
}

function run(script) {
  const env = Object.assign({}, process.env, {
    EGR_MODE: input('mode', 'audit'),
    EGR_POLICY: input('policy', ''),
    EGR_ALLOW: input('allow', ''),
    EGR_ALLOW_RUNNER: input('allow-runner', 'true'),
    EGR_BIN: input('egressctl', ''),
    EGR_DAEMON_ARGS: input('daemon-args', ''),
  });
  const r = spawnSync('bash', [path.join(__dirname, script)], { env, stdio: 'inherit' });
  if (r.error) {
    console.log('::error::egressctl: ' + r.error.message);
    process.exitCode = 1;
  } else if (r.status !== 0) {
    process.exitCode = r.status || 1;
  }
}

module.exports = { input, run };
