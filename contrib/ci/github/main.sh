#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The action's main step (run.js): the job's process tree is the runner's
# Runner.Worker and what it spawns (this script among them): found up this
# script's parent chain, given a cgroup of its own, confined. The binary:
# the egressctl input, else built (build: true), else on PATH, else the
# release tarball of this action's ref (release.sh).
set -u
. "$(dirname "$0")/../lib/egressctl-ci.sh"
. "$(dirname "$0")/release.sh"

export EGR_DIR=${RUNNER_TEMP:-/tmp}/egressctl
export EGR_CGROUP=${EGR_CGROUP:-ci-${GITHUB_RUN_ID:-0}-${GITHUB_RUN_ATTEMPT:-1}-${GITHUB_JOB:-job}}
EGR_CGROUP=$(printf '%s' "$EGR_CGROUP" | tr -c 'A-Za-z0-9._-' '_')
if [ "${EGR_ALLOW_RUNNER:-true}" = true ]; then
	EGR_ALLOW="${EGR_ALLOW:-}
$(sed '/^#/d' "$(dirname "$0")/runner-hosts.rules")"
	export EGR_ALLOW
fi
root=$(egr_ci_ancestor_named $$ Runner.Worker) || {
	echo "::error::egressctl: no Runner.Worker process up this step's parent chain (a container job, or not a GitHub runner)"
	exit 1
}
case "${EGR_BUILD:-false}" in
true | false) ;;
*)
	echo "::error::egressctl: build: '$EGR_BUILD': expected true or false"
	exit 1
	;;
esac
if [ -z "${EGR_BIN:-}" ] && [ "${EGR_BUILD:-false}" = false ] && ! command -v egressctl >/dev/null; then
	egr_gh_release || exit 1
	export EGR_BIN=$EGR_GH_BIN
fi
if ! egr_ci_start "$root"; then
	echo "::error::egressctl: could not confine the job (see the lines above)"
	exit 1
fi
# the post step gets these as STATE_*, which no other step can write; the
# token is what lets it (and nothing else of the job) finish while the
# job's sudo is restricted
[ -n "${GITHUB_STATE:-}" ] && printf 'dir=%s\nname=%s\nsudo=%s\ntoken=%s\n' "$EGR_DIR" "$EGR_CGROUP" \
	"${EGR_SUDO:-allow}" "${EGR_CI_TOKEN:-}" >>"$GITHUB_STATE"
# later steps: `sudo` is the shim (bin/sudo), which runs CMD through
# `egressctl sudo` (confined) or says why there is no sudo (disable)
case ${EGR_SUDO:-allow} in
confined | disable)
	[ -n "${GITHUB_PATH:-}" ] && echo "$(cd "$(dirname "$0")" && pwd)/bin" >>"$GITHUB_PATH"
	if [ -n "${GITHUB_ENV:-}" ]; then
		echo "EGRESSCTL_SUDO=${EGR_SUDO}"
		echo "EGRESSCTL_SUDO_PROGRAM=/run/egressctl/ci/$EGR_CGROUP/sudo"
	fi >>"${GITHUB_ENV:-/dev/null}"
	;;
esac
# later steps: the secrets' placeholders and the job's CA (secrets, ca)
if [ -n "${GITHUB_ENV:-}" ]; then
	egr_ci_env >>"$GITHUB_ENV"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	{
		echo "log=$EGR_DIR/decisions.jsonl"
		echo "policy=$EGR_DIR/egress-policy.json"
		echo "summary=$EGR_DIR/summary.md"
	} >>"$GITHUB_OUTPUT"
fi
