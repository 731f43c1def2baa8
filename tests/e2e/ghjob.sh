# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# A GitHub job run by a job user of the test's own, as on a hosted runner
# (cisudo.sh, and ci.sh's github_runner): the user (useradd JU) with
# passwordless sudo from a sudoers file of the test's own (SUDOERS, as the
# runner's /etc/sudoers.d/runner), a Runner.Worker as that user running
# the action's main step, the steps, the post step (gh_job), and what
# reads the steps' records (a_rec) and rootprobe.py's lines (lib.sh's read_probe,
# a_refused, a_worked). The suite sets JU and SUDOERS, defines tcg TAG
# (the runner's cgroup) and, for the steps' probes, OUTSIDE (a root
# process outside the job); its EXIT trap calls ghjob_cleanup: the
# sudoers files (the suite's, and the action's rules for this run's jobs
# and what a step planted, by name), the action's root processes (by the
# binary in root's state of this run's jobs), the user's processes, root's
# state of this run's jobs, the user. Sourced after lib.sh and
# audit_net.sh (INET_DNS).

# ghjob_user [GROUP]: the job user JU (JUID), GROUP among its groups (as a
# runner's user is in docker's), with passwordless sudo from SUDOERS
ghjob_user() {
	local -a more=()
	[ -n "${1:-}" ] && more=(-G "$1")
	command -v visudo >/dev/null || { echo "no visudo"; return 1; }
	useradd -M -N -g nogroup "${more[@]}" -d "$W/home" -s /bin/bash "$JU" ||
		{ echo "useradd $JU failed"; return 1; }
	JUID=$(id -u "$JU")
	printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\nDefaults:%s !use_pty, !lecture\n' "$JU" "$JU" >"$W/sudoers.tmp"
	chmod 0440 "$W/sudoers.tmp"
	visudo -cqf "$W/sudoers.tmp" && cp "$W/sudoers.tmp" "$SUDOERS" && chmod 0440 "$SUDOERS" ||
		{ echo "cannot install $SUDOERS"; return 1; }
}

ghjob_cleanup() {
	local p
	rm -f -- "$SUDOERS" /etc/sudoers.d/zz-egressctl-e2e-$$-* /etc/sudoers.d/zz-egr-e2e-$$-*
	# what the action left running as root: daemons, launchers, the pid 1
	# of each sudo's namespace (by the binary in its state)
	for p in /proc/[0-9]*; do
		case $(readlink "$p/exe" 2>/dev/null) in /run/egressctl/ci/e2e-$$-*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
	done
	id "$JU" >/dev/null 2>&1 && pkill -KILL -u "$JU" 2>/dev/null
	rm -rf /run/egressctl/ci/e2e-$$-*
	id "$JU" >/dev/null 2>&1 && userdel "$JU" 2>/dev/null
}

# gh_vars TAG RUN_ID: the variables a runner gives TAG's job (its files
# $W/TAG.*), into the array GH_VARS (ci.sh's jobs and gh_job's)
gh_vars() {
	GH_VARS=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		HOME="$W/$1.tmp" GITHUB_ACTIONS=true CI=true GITHUB_RUN_ID="$2" GITHUB_RUN_ATTEMPT=1
		GITHUB_JOB="job-$1" GITHUB_WORKFLOW=ci GITHUB_REPOSITORY=org/repo
		GITHUB_ACTION_PATH="$REPO" GITHUB_STEP_SUMMARY="$W/$1.summary.md"
		GITHUB_OUTPUT="$W/$1.output" GITHUB_STATE="$W/$1.state" GITHUB_ENV="$W/$1.env"
		RUNNER_TEMP="$W/$1.tmp" EGR_CGROUP="$(cg_name "$1-job")")
}

# gh_job TAG "INPUT_X=Y ..." [POST(yes|no)]: the runner's cgroup TAG with
# a Runner.Worker as $JU that runs: $W/TAG.before (shell text, before the
# action), the action's main step, then, with the runner's GITHUB_PATH and
# GITHUB_ENV applied, $W/TAG.steps, the post step (unless POST is no) and
# $W/TAG.after. The steps' records (rec KEY CMD...) are in $W/TAG.step.
# The worker is given GH_JOB_SECS (150) seconds.
gh_job() {
	local tag=$1 inputs=$2 post=${3:-yes} cg f i wpid
	cg=$(tcg "$tag")
	mkdir -p "$cg" "$W/$tag.bin" "$W/$tag.tmp" || return 1
	ln -sf /bin/bash "$W/$tag.bin/Runner.Worker"
	for f in summary.md output state path env step; do : >"$W/$tag.$f"; done
	for f in before steps after; do [ -e "$W/$tag.$f" ] || : >"$W/$tag.$f"; done
	cat >"$W/$tag.worker.sh" <<EOF
set -u
STEPF=$W/$tag.step
rec() {
	local k=\$1 o rc
	shift
	o=\$("\$@" 2>&1)
	rc=\$?
	printf '%s rc=%s %s\n' "\$k" "\$rc" "\$(printf '%s' "\$o" | tr '\n' ' ' | head -c 800)" >>\$STEPF
}
. $W/$tag.before
env $inputs INPUT_ALLOW=a.example.test INPUT_ALLOW-RUNNER=false INPUT_EGRESSCTL=$EGRESSCTL \
	"INPUT_DAEMON-ARGS=--dns-upstream $INET_DNS" node $REPO/contrib/ci/github/main.js
echo "main \$?" >>\$STEPF
# what the runner does for the later steps
while read -r p; do [ -n "\$p" ] && PATH="\$p:\$PATH"; done <\$GITHUB_PATH
set -a
. \$GITHUB_ENV
set +a
NAME=\$(sed -n 's/^name=//p' $W/$tag.tmp/egressctl/state)
SDIR=/run/egressctl/ci/\$NAME
DPID=\$(sed -n 's/^pid=//p' $W/$tag.tmp/egressctl/state)
echo "DPID \$DPID" >>\$STEPF
. $W/$tag.steps
[ $post = yes ] || exit 0
env \$(sed -n 's/^\([a-z]*\)=/STATE_\1=/p' \$GITHUB_STATE) node $REPO/contrib/ci/github/post.js
echo "post \$?" >>\$STEPF
. $W/$tag.after
EOF
	for f in "$W/$tag.tmp" "$W/$tag.summary.md" "$W/$tag.output" "$W/$tag.state" "$W/$tag.path" \
		"$W/$tag.env" "$W/$tag.step"; do
		chown "$JUID" "$f"
	done
	gh_vars "$tag" 9002
	nsenter --net="$NS_SBX" env -i "${GH_VARS[@]}" GITHUB_PATH="$W/$tag.path" \
		PY="$PY" C="$C" RW="$RW" W="$W" OUTSIDE="${OUTSIDE:-}" CGROOT="$CGROOT" SUITE=$$ \
		sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid="$3" --regid=nogroup --init-groups -- "$1" "$2"' \
		"$cg" "$W/$tag.bin/Runner.Worker" "$W/$tag.worker.sh" "$JU" </dev/null >"$W/$tag.worker" 2>&1 &
	wpid=$!
	PIDS+=("$wpid")
	for i in $(seq $((10 * ${GH_JOB_SECS:-150}))); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$wpid" 2>/dev/null && { note "$tag: the worker overstayed ${GH_JOB_SECS:-150} s"; kill "$wpid"; }
	wait "$wpid" 2>/dev/null
	note "$tag: worker: $(tr '\n' '|' <"$W/$tag.worker" | head -c 1500)"
}

# a_rec NAME TAG KEY ERE: the step's record KEY matches "KEY rc=N OUTPUT"
# against ERE (after "KEY ")
a_rec() {
	local line
	line=$(grep -m1 "^$3 rc=" "$W/$2.step")
	if [ -z "$line" ]; then
		fail "$1" "no record $3 in $2's steps: $(tail -c 400 "$W/$2.worker" | tr '\n' '|')"
	elif grep -Eq -- "^$(re "$3") ($4)" <<<"$line"; then
		ok "$1"
	else
		fail "$1" "$line"
	fi
}

a_refused() { # a_refused NAME PROBE
	case ${R[$2]:-missing} in
	false*) ok "$1" ;;
	missing) fail "$1" "no result for $2" ;;
	*) fail "$1" "ESCAPE: it worked: ${R[$2]}" ;;
	esac
}
a_worked() { # a_worked NAME PROBE (the control half)
	[[ ${R[$2]:-} == true* ]] && ok "$1" || fail "$1" "the attempt does not work unconfined either: ${R[$2]:-missing}"
}
