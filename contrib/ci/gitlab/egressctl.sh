#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GitLab CI (shell executor): confine the job's process tree, the shell
# gitlab-runner started for it and what that spawns.
#   contrib/ci/gitlab/egressctl.sh start    in before_script
#   contrib/ci/gitlab/egressctl.sh finish   in after_script (a shell of its
#                                           own: the state is in EGR_DIR)
# Settings as contrib/ci/lib/egressctl-ci.sh says (EGR_MODE, EGR_POLICY,
# EGR_ALLOW, EGR_BIN, EGR_DAEMON_ARGS); EGR_DIR defaults to
# $CI_PROJECT_DIR/.egressctl, so that `artifacts: paths` can take it.
set -u
. "$(dirname "$0")/../lib/egressctl-ci.sh"

export EGR_DIR=${EGR_DIR:-${CI_PROJECT_DIR:-$PWD}/.egressctl}
export EGR_CGROUP=${EGR_CGROUP:-ci-gitlab-${CI_JOB_ID:-$$}}
case "${1:-}" in
start)
	root=$(egr_ci_child_of_named $$ gitlab-runner) || {
		egr_ci_say "no gitlab-runner up this shell's parent chain (not the shell executor?)"
		exit 1
	}
	egr_ci_start "$root" || exit 1
	;;
finish)
	egr_ci_finish
	rc=$?
	[ -s "$EGR_DIR/summary.md" ] && cat "$EGR_DIR/summary.md"
	exit $rc
	;;
*)
	echo "usage: $0 start|finish" >&2
	exit 2
	;;
esac
