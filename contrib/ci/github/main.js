// SPDX-License-Identifier: Apache-2.0
// The main step of the action (action.yml): start confining the job, or
// with `finish: true`, what the post step does.
'use strict';
const { input, run } = require('./run.js');

run(input('finish', 'false') === 'true' ? 'post.sh' : 'main.sh');
