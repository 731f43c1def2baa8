// SPDX-License-Identifier: Apache-2.0
// The main step of the action (action.yml): start confining the job, or
// with `finish: true`, what the post step does.
'use strict';
const { input, run, finish } = require('./run.js');

if (input('finish', 'false') === 'true') {
  finish();
} else {
  run('main.sh');
}
