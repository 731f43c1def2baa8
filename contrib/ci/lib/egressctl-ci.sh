# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# What the CI integrations share (contrib/ci/: the GitHub Action, the GitLab
# snippet, the Buildkite hooks): find the job's process tree, give it a
# cgroup of its own (or take the one it is in, when that holds only the
# job), confine it with `egressctl daemon`, and at the end write the
# summary and the suggested policy and lift the confinement.
#
#   . contrib/ci/lib/egressctl-ci.sh
#   egr_ci_start ROOT_PID       # confine ROOT_PID and what it spawns
#   egr_ci_finish               # summary, policy, detach, daemon stopped
#
# Settings (environment):
#   EGR_DIR        where the state, the log, the policy go (made 0755)
#   EGR_MODE       audit (record, deny nothing; default) or block
#   EGR_POLICY     a policy file, a policy as JSON text, or rules (one per
#                  line, or separated by spaces or commas)
#   EGR_ALLOW      more rules, the same way
#   EGR_BIN        the egressctl to use; default: on PATH, else built from
#                  EGR_SRC (the checkout this file is in) with make
#   EGR_CGROUP     the name of the job's cgroup (<cgroup2>/egressctl/NAME)
#                  when it needs one of its own
#   EGR_SUMMARY    a file the markdown summary is appended to at the end
#                  ($GITHUB_STEP_SUMMARY); it is also $EGR_DIR/summary.md
#   EGR_DAEMON_ARGS  more options of `egressctl daemon` (word-split)
# Every function says what failed on stderr and returns non-zero.

EGR_CI_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EGR_SRC=${EGR_SRC:-$(cd "$EGR_CI_LIB_DIR/../../.." && pwd)}

egr_ci_say() { echo "egressctl-ci: $*" >&2; }

egr_ci_sudo() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n -E "$@"; fi
}

# egr_ci_ppid PID: its parent's pid (the field after the command in
# /proc/PID/stat, whose command may hold spaces and parentheses)
egr_ci_ppid() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	set -- $stat
	echo "$2"
}

egr_ci_comm() { cat "/proc/$1/comm" 2>/dev/null; }

# egr_ci_ancestor_named PID COMM: the nearest ancestor of PID (PID itself
# included) whose command is COMM
egr_ci_ancestor_named() {
	local p=$1
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		[ "$(egr_ci_comm "$p")" = "$2" ] && { echo "$p"; return 0; }
		p=$(egr_ci_ppid "$p") || return 1
	done
	return 1
}

# egr_ci_child_of_named PID COMM: the ancestor of PID whose parent's command
# is COMM (a job shell that gitlab-runner started)
egr_ci_child_of_named() {
	local p=$1 pp
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		pp=$(egr_ci_ppid "$p") || return 1
		[ "$(egr_ci_comm "$pp")" = "$2" ] && { echo "$p"; return 0; }
		p=$pp
	done
	return 1
}

# egr_ci_mount: the cgroup2 mount point (/proc/self/mountinfo; the unified
# one on a hybrid host)
egr_ci_mount() {
	awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
		/proc/self/mountinfo | sed 's/\\040/ /g' | head -1
}

# egr_ci_cgroup_of PID: its cgroup below the mount ("/system.slice/x")
egr_ci_cgroup_of() { sed -n 's/^0:://p' "/proc/$1/cgroup" 2>/dev/null; }

# egr_ci_tree ROOT: ROOT and its descendants, one pid a line
egr_ci_tree() {
	local d pid pp
	declare -A kids=()
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		pp=$(egr_ci_ppid "$pid" 2>/dev/null) || continue
		kids[$pp]+=" $pid"
	done
	local -a todo=("$1")
	while [ ${#todo[@]} -gt 0 ]; do
		pid=${todo[0]}
		todo=("${todo[@]:1}")
		echo "$pid"
		for d in ${kids[$pid]:-}; do todo+=("$d"); done
	done
}

# egr_ci_job_cgroup ROOT NAME: prints the cgroup (a path) that holds
# exactly ROOT's tree: the one it is in when nothing else is there, else
# <mount>/egressctl/NAME, made and filled with the tree (moved until no
# process of it is left outside: what a moved process forks follows it)
egr_ci_job_cgroup() {
	local root=$1 name=$2 mnt cur tree p others=0 i moved
	mnt=$(egr_ci_mount)
	[ -n "$mnt" ] || { egr_ci_say "no cgroup2 hierarchy is mounted"; return 1; }
	cur=$(egr_ci_cgroup_of "$root")
	[ -n "$cur" ] || { egr_ci_say "cannot read the cgroup of process $root"; return 1; }
	tree=" $(egr_ci_tree "$root" | tr '\n' ' ') "
	while read -r p; do
		[ -n "$p" ] || continue
		case "$tree" in *" $p "*) ;; *) others=$((others + 1)) ;; esac
	done <"$mnt$cur/cgroup.procs"
	if [ "$others" = 0 ] && [ "$cur" != / ]; then
		egr_ci_say "the job's processes are alone in $mnt$cur: confining it"
		echo "$mnt$cur"
		return 0
	fi
	case "$name" in '' | *[!A-Za-z0-9._-]*)
		egr_ci_say "cgroup name '$name': expected [A-Za-z0-9._-]"
		return 1 ;;
	esac
	egr_ci_sudo mkdir -p "$mnt/egressctl/$name" || return 1
	for i in 1 2 3 4 5; do
		moved=0
		for p in $(egr_ci_tree "$root"); do
			[ "$(egr_ci_cgroup_of "$p")" = "/egressctl/$name" ] && continue
			echo "$p" | egr_ci_sudo tee "$mnt/egressctl/$name/cgroup.procs" >/dev/null 2>&1 &&
				moved=$((moved + 1))
		done
		[ "$moved" = 0 ] && break
	done
	egr_ci_say "$others other process(es) share $mnt$cur: the job's ($root and what it spawned) moved to $mnt/egressctl/$name"
	echo "$mnt/egressctl/$name"
}

# egr_ci_bin: the egressctl to use, built when there is none
egr_ci_bin() {
	if [ -n "${EGR_BIN:-}" ]; then
		[ -x "$EGR_BIN" ] || { egr_ci_say "EGR_BIN=$EGR_BIN is not executable"; return 1; }
		echo "$EGR_BIN"
		return 0
	fi
	if command -v egressctl >/dev/null; then
		command -v egressctl
		return 0
	fi
	egr_ci_say "building egressctl from $EGR_SRC (tools/install-deps.sh, make)"
	egr_ci_sudo "$EGR_SRC/tools/install-deps.sh" >&2 || return 1
	make -C "$EGR_SRC" -j"$(nproc)" >&2 || return 1
	echo "$EGR_SRC/build/egressctl"
}

# egr_ci_rules TEXT: one rule a line, from lines, spaces or commas
egr_ci_rules() { printf '%s\n' "$1" | tr ', \t' '\n\n\n' | sed '/^$/d; /^#/d'; }

egr_ci_start() {
	local root=$1 bin cg dir=${EGR_DIR:?EGR_DIR is not set} name r i
	local -a args=()
	[ -n "$root" ] || { egr_ci_say "no job process to confine"; return 1; }
	mkdir -p "$dir" && chmod 0755 "$dir" || return 1
	if [ -s "$dir/state" ]; then
		egr_ci_say "egressctl is confining this job already ($dir/state)"
		return 0
	fi
	bin=$(egr_ci_bin) || return 1
	name=${EGR_CGROUP:-ci-$$}
	cg=$(egr_ci_job_cgroup "$root" "$name") || return 1
	case "${EGR_MODE:-audit}" in
	audit) args+=(--audit) ;;
	block) ;;
	*) egr_ci_say "mode '${EGR_MODE}': expected audit or block"; return 1 ;;
	esac
	if [ -n "${EGR_POLICY:-}" ]; then
		if [ -f "$EGR_POLICY" ]; then
			args+=(--policy "$(realpath "$EGR_POLICY")")
		elif [ "${EGR_POLICY#\{}" != "$EGR_POLICY" ] || [ "${EGR_POLICY# \{}" != "$EGR_POLICY" ]; then
			printf '%s\n' "$EGR_POLICY" >"$dir/policy.json"
			args+=(--policy "$dir/policy.json")
		else
			while read -r r; do args+=(--allow "$r"); done < <(egr_ci_rules "$EGR_POLICY")
		fi
	fi
	while read -r r; do args+=(--allow "$r"); done < <(egr_ci_rules "${EGR_ALLOW:-}")
	# shellcheck disable=SC2206 # word-split on purpose
	args+=(${EGR_DAEMON_ARGS:-})
	: >"$dir/daemon.out"
	local cmd=(setsid "$bin" daemon --cgroup "$cg" --control "$dir/control"
		--log "$dir/decisions.jsonl" --summary "$dir/summary.md" --summary-format markdown
		"${args[@]}")
	# not through egr_ci_sudo: a function run in the background is a
	# subshell, and $! its pid, not the daemon's (egr_ci_finish's TERM
	# would end the subshell and leave the daemon running); sudo passes
	# the TERM on
	if [ "$(id -u)" = 0 ]; then
		"${cmd[@]}" </dev/null >>"$dir/daemon.out" 2>&1 &
	else
		sudo -n -E "${cmd[@]}" </dev/null >>"$dir/daemon.out" 2>&1 &
	fi
	local dpid=$!
	for i in $(seq 300); do
		grep -q "ready:" "$dir/daemon.out" 2>/dev/null && break
		if ! kill -0 "$dpid" 2>/dev/null && ! grep -q "ready:" "$dir/daemon.out"; then
			egr_ci_say "egressctl daemon did not start: $(tail -5 "$dir/daemon.out")"
			return 1
		fi
		sleep 0.1
	done
	grep -q "ready:" "$dir/daemon.out" || { egr_ci_say "egressctl daemon is not ready after 30 s"; return 1; }
	{
		echo "bin=$bin"
		echo "cgroup=$cg"
		echo "pid=$dpid"
	} >"$dir/state"
	egr_ci_say "confining $cg (${EGR_MODE:-audit} mode); decisions in $dir/decisions.jsonl"
}

# egr_ci_state KEY: a value of $EGR_DIR/state
egr_ci_state() { sed -n "s/^$1=//p" "$EGR_DIR/state" 2>/dev/null | head -1; }

egr_ci_finish() {
	local dir=${EGR_DIR:?EGR_DIR is not set} bin cg pid i rc=0
	if [ ! -s "$dir/state" ]; then
		egr_ci_say "nothing to finish ($dir/state: none, or finished already)"
		return 0
	fi
	bin=$(egr_ci_state bin)
	cg=$(egr_ci_state cgroup)
	egr_ci_sudo "$bin" summary --control "$dir/control" --cgroup "$cg" \
		--suggest-policy "$dir/egress-policy.json" >/dev/null || rc=1
	egr_ci_sudo chmod 0644 "$dir/egress-policy.json" 2>/dev/null
	# detach writes the summary (--summary) and lifts confinement
	egr_ci_sudo "$bin" detach --control "$dir/control" --cgroup "$cg" >/dev/null || rc=1
	pid=$(egr_ci_state pid)
	if [ -n "$pid" ]; then
		egr_ci_sudo kill -TERM "$pid" 2>/dev/null
		for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	if [ -n "${EGR_SUMMARY:-}" ] && [ -s "$dir/summary.md" ]; then
		cat "$dir/summary.md" >>"$EGR_SUMMARY" || rc=1
	fi
	egr_ci_sudo chown -R "$(id -u):$(id -g)" "$dir" 2>/dev/null
	mv "$dir/state" "$dir/state.done"
	egr_ci_say "finished: summary $dir/summary.md, suggested policy $dir/egress-policy.json"
	return $rc
}
