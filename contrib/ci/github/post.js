// SPDX-License-Identifier: Apache-2.0
// The post step of the action (action.yml): summary, policy, detach.
'use strict';
const { run } = require('./run.js');

run('post.sh');
