// SPDX-License-Identifier: Apache-2.0
// The GitHub Action's steps (action.yml): node runs the shell scripts
// beside this file, with the action's inputs as EGR_* variables. No npm
// dependencies: child_process and fs only.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

function input(name, dflt) {
  // the runner sets INPUT_<NAME> (upper case, spaces as _; '-' stays)
  const v = process.env['INPUT_' + name.replace(/ /g, '_').toUpperCase()];
  return v === undefined || v.trim() === '' ? dflt : v.trim();
}

// mode, or harden-runner's egress-policy; both given must agree
function mode() {
  const m = input('mode', ''), e = input('egress-policy', '');
  if (m && e && m !== e) {
    throw new Error(`mode: ${m} and egress-policy: ${e} disagree (they are one input)`);
  }
  return m || e || 'audit';
}

// the job's sudo: confined (block mode's default), disable, or allow
// (audit mode's default: there nothing is denied)
function sudo() {
  const s = input('sudo', mode() === 'block' ? 'confined' : 'allow');
  if (!['confined', 'disable', 'allow'].includes(s)) {
    throw new Error(`sudo: ${s}: expected confined, disable or allow`);
  }
  return s;
}

function services() {
  const s = input('services', 'true');
  if (s === 'true') return 'network=github_network_*';
  if (s === 'false') return '';
  throw new Error(`services: ${s}: expected true or false`);
}

function run(script) {
  let env;
  try {
    env = Object.assign({}, process.env, {
      EGR_MODE: mode(),
      EGR_SUDO: sudo(),
      EGR_POLICY: input('policy', ''),
      // harden-runner's allowed-endpoints (host:port ...) are allow rules too
      EGR_ALLOW: [input('allow', ''), input('allowed-endpoints', '')].join('\n'),
      EGR_ALLOW_RUNNER: input('allow-runner', 'true'),
      EGR_BIN: input('egressctl', ''),
      EGR_BUILD: input('build', 'false'),
      EGR_BINARY_URL: input('binary-url', ''),
      EGR_DAEMON_ARGS: input('daemon-args', ''),
      EGR_DOCKER: input('docker', 'true'),
      // the job's services: started by the runner before the first step,
      // on its github_network_<id>
      EGR_DOCKER_SERVICES: services(),
      // NAME=VALUE@HOST[,HOST] a line: later steps get placeholders
      EGR_SECRETS: input('secrets', ''),
      EGR_CA: input('ca', 'false'),
    });
  } catch (e) {
    console.log('::error::egressctl: ' + e.message);
    process.exitCode = 1;
    return;
  }
  const r = spawnSync('bash', [path.join(__dirname, script)], { env, stdio: 'inherit' });
  if (r.error) {
    console.log('::error::egressctl: ' + r.error.message);
    process.exitCode = 1;
  } else if (r.status !== 0) {
    process.exitCode = r.status || 1;
  }
}

// an annotation's text: the runner reads %, CR and LF as escapes
function esc(s) {
  return String(s).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

// One ::warning annotation per denied destination of the summary (FILE,
// `egressctl summary --format json`), at most MAX, naming who tried it and
// the rule that would allow it; the rest counted in one more line.
function annotate(file, max) {
  let s;
  try {
    s = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    return; // no summary: the post step said why
  }
  const denied = (s.destinations || []).filter((d) => d.denied > 0 || d.would_deny);
  denied.slice(0, max).forEach((d) => {
    const who = (d.who || []).map((w) => `${w.comm}[${w.pid}]`).join(', ') || 'unknown';
    const verb = d.would_deny && !d.denied ? 'would deny' : 'denied';
    const fix = d.suspect ? `; looks like data sent out in a DNS name (${d.suspect}): review, not suggested`
      : d.suggest ? `; --allow ${d.suggest} (allow: ${d.suggest}) allows it` : '';
    console.log(`::warning title=egressctl ${verb} ${esc(d.destination)}::` +
      esc(`${verb} ${d.destination} (${d.reason || 'not allowed'}), tried by ${who}${fix}`));
  });
  if (denied.length > max) {
    console.log(`::warning title=egressctl::${denied.length - max} more denied destination(s): ` +
      'see the job summary');
  }
}

// What the post step does (and the main step with `finish: true`): the
// summary, the policy, detach (post.sh); then the annotations.
function finish() {
  run('post.sh');
  const dir = process.env.STATE_dir || path.join(process.env.RUNNER_TEMP || '/tmp', 'egressctl');
  const max = parseInt(input('annotations', '20'), 10);
  if (max > 0) {
    annotate(path.join(dir, 'summary.json'), max);
  }
}

module.exports = { input, run, finish, annotate };
