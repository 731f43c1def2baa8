// SPDX-License-Identifier: Apache-2.0
// The post step of the action (action.yml): summary, policy, detach; then
// the denied destinations as annotations, where the step's log shows them.
'use strict';
const { finish } = require('./run.js');

finish();
