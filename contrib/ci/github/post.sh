#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The action's post step (run.js; also its main step with `finish: true`):
# the summary appended to $GITHUB_STEP_SUMMARY, the suggested policy
# written for actions/upload-artifact, confinement lifted.
set -u
. "$(dirname "$0")/../lib/egressctl-ci.sh"

export EGR_DIR=${STATE_dir:-${RUNNER_TEMP:-/tmp}/egressctl}
# the runner's record of the main step (steps cannot write it), before
# $EGR_DIR/state (which they can)
export EGR_NAME=${STATE_name:-}
export EGR_SUMMARY=${GITHUB_STEP_SUMMARY:-}
# what lets the finish through while the job's sudo is restricted
export EGR_TOKEN=${STATE_token:-}
egr_ci_finish || echo "::warning::egressctl: the summary or the policy could not be written (see above)"
if [ "${STATE_sudo:-}" = allow ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
	w="sudo: allow: the job user kept its passwordless sudo, and root can leave confinement (move out of the cgroup, detach the programs): what the job reached may be more than this summary says. sudo: confined (block mode's default) keeps root inside"
	echo "::warning title=egressctl sudo: allow::$w"
	printf '\n> **egressctl warning**: %s.\n' "$w" >>"$GITHUB_STEP_SUMMARY"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	{
		echo "log=$EGR_DIR/decisions.jsonl"
		echo "policy=$EGR_DIR/egress-policy.json"
		echo "summary=$EGR_DIR/summary.md"
	} >>"$GITHUB_OUTPUT"
fi
exit 0
