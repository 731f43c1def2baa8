# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2016 # root's scripts are in single quotes: their $1 is theirs
# What the CI integrations share (contrib/ci/: the GitHub Action, the GitLab
# snippet, the Buildkite hooks): find the job's process tree, give it a
# cgroup of its own (or take the one it is in, when that holds only the
# job), confine it with `egressctl daemon`, and at the end write the
# summary and the suggested policy and lift the confinement.
#
#   . contrib/ci/lib/egressctl-ci.sh
#   egr_ci_start ROOT_PID       # confine ROOT_PID and what it spawns
#   egr_ci_env                  # NAME=VALUE lines for the job's later steps
#   egr_ci_finish               # summary, policy, detach, daemon stopped
#
# Settings (environment):
#   EGR_DIR        the job's directory for the results: the log, the
#                  summary, the policy (made 0755; the job can write it)
#   EGR_MODE       audit (record, deny nothing; default) or block
#   EGR_POLICY     a policy file, a policy as JSON text, or rules (one per
#                  line, or separated by spaces or commas)
#   EGR_ALLOW      more rules, the same way
#   EGR_BIN        the egressctl to use; default: EGR_BUILD's, else on PATH
#   EGR_BUILD      true: build egressctl from EGR_SRC (the checkout this
#                  file is in: tools/install-deps.sh --build, make); never
#                  done unless asked (default false)
#   EGR_CGROUP     the job's name: its cgroup (<cgroup2>/egressctl/NAME)
#                  when it needs one of its own (with docker kept and
#                  dockerd's systemd cgroup driver: always, a slice's,
#                  .../egressctl.slice/egressctl-NAME.slice), and its
#                  state's directory
#   EGR_SUMMARY    a file the markdown summary is appended to at the end
#                  ($GITHUB_STEP_SUMMARY); it is also $EGR_DIR/summary.md
#   EGR_DAEMON_ARGS  more options of `egressctl daemon` (word-split)
#   EGR_SUDO       what the job user's sudo becomes until the finish (the
#                  GitHub Action's `sudo` input): allow (unchanged, the
#                  default here), confined (only `egressctl sudo`: CMD as
#                  root inside the confinement) or disable (none). Either
#                  restriction is a sudoers rule of root's, and the finish
#                  then needs the token egr_ci_start leaves in EGR_CI_TOKEN
#                  (given back as EGR_TOKEN): the job cannot lift it early.
#   EGR_DOCKER     true (default): where dockerd's socket is, the daemon
#                  keeps it for the job (--docker: its containers confined,
#                  docs/ci.md "Docker"); false: docker is left alone
#   EGR_DOCKER_SERVICES  with docker kept: the containers running at the
#                  start that this filter selects (network=GLOB,
#                  label=KEY[=VALUE]) are confined by the policy too, each
#                  a target of its own (--docker-services: a job's
#                  services, which the runner starts before the first
#                  step); GitHub's: network=github_network_*
#   EGR_SECRETS    secrets the job never holds (the GitHub Action's
#                  `secrets` input): NAME=VALUE@HOST[,HOST] a line (the
#                  last '@' ends VALUE). Each value goes to root's state
#                  directory on a pipe, the daemon reads it there at start
#                  (--secret NAME=file:...) and it is removed once the
#                  daemon is ready; the job gets NAME=PLACEHOLDER in
#                  $EGR_DIR/job.env (egr_ci_env), and a CA (below); in
#                  block mode with docker kept, job.env also says
#                  DOCKER_BUILDKIT=0 (BuildKit's RUN steps would run
#                  outside the job's cgroup)
#   EGR_CA         true: a CA for this job (made with secrets anyway), for
#                  a policy that inspects HTTPS: root makes it in its state
#                  directory (the key stays there), the daemon signs with
#                  it (--ca), the job gets it in $EGR_DIR/ca.pem and, with
#                  the system's, in $EGR_DIR/ca-bundle.pem, named by the
#                  variables of $EGR_DIR/job.env
# Every function says what failed on stderr and returns non-zero.
#
# Root never acts on what the job can write. $EGR_DIR is the job's: root
# does not open, follow, chmod or chown anything there. What root runs,
# signals and writes lives in root's state directory,
# /run/egressctl/ci/NAME (0700, in /run/egressctl, 0700): the copy of
# egressctl that the daemon runs and the finish calls, the policy, the
# control socket, the daemon's pid, the log, the summary and the policy
# it suggests. Whatever root reads of the job's (the binary, a policy
# file) is read by the job user and handed over on a pipe; the results
# are handed back the same way and written by the job user. The finish
# talks to the daemon from a cgroup of its own outside the job's: the
# daemon takes no command from a process inside a cgroup it confines.

EGR_CI_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EGR_SRC=${EGR_SRC:-$(cd "$EGR_CI_LIB_DIR/../../.." && pwd)}

# root's: not from the environment, which a job can set for later steps
EGR_CI_STATE=/run/egressctl/ci
EGR_CI_PATH=/usr/sbin:/usr/bin:/sbin:/bin
# what names the job in the log's "ci" record (audit/record.c): passed to
# the daemon, which gets no other variable of the job's
EGR_CI_IDENT_VARS="GITHUB_ACTIONS GITHUB_RUN_ID GITHUB_RUN_ATTEMPT GITHUB_JOB GITHUB_WORKFLOW
GITHUB_REPOSITORY GITLAB_CI CI_JOB_ID CI_JOB_NAME CI_PIPELINE_ID CI_PROJECT_PATH BUILDKITE
BUILDKITE_JOB_ID BUILDKITE_BUILD_ID BUILDKITE_PIPELINE_SLUG BUILDKITE_STEP_KEY"

egr_ci_say() { echo "egressctl-ci: $*" >&2; }

# sudo itself, not what a job put first in PATH (the GitHub Action's own
# shim among them, which runs commands inside confinement)
EGR_CI_SUDO=/usr/bin/sudo
[ -x "$EGR_CI_SUDO" ] || EGR_CI_SUDO=sudo

egr_ci_sudo() {
	if [ "$(id -u)" = 0 ]; then "$@"; else "$EGR_CI_SUDO" -n "$@"; fi
}

# egr_ci_root SCRIPT ARGS...: the sh SCRIPT as root with ARGS as $1...,
# the system's PATH and no other variable
egr_ci_root() {
	local script=$1
	shift
	egr_ci_sudo env -i PATH="$EGR_CI_PATH" /bin/sh -c "$script" egressctl-ci "$@"
}

# egr_ci_abs PATH: PATH made absolute by the working directory, as it is
# spelt (the job may replace what it names; the finish compares names)
egr_ci_abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

# egr_ci_name_ok NAME: a job's name ([A-Za-z0-9._-], not . or ..)
egr_ci_name_ok() {
	case "$1" in '' | . | .. | *[!A-Za-z0-9._-]*) return 1 ;; esac
	return 0
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

# egr_ci_starttime PID: its start time (field 22 of /proc/PID/stat): with
# the pid, what names the process and no later one
egr_ci_starttime() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	set -- $stat
	echo "${20}"
}

# egr_ci_alive PID: PID runs (not a zombie); unlike kill -0, also for a
# process of root's when the caller is not root
egr_ci_alive() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

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

# egr_ci_move_tree ROOT DIR: ROOT's tree into the cgroup DIR (made), moved
# until no process of it is left outside: what a moved process forks
# follows it
egr_ci_move_tree() {
	local root=$1 dir=$2 mnt p moved
	mnt=$(egr_ci_mount)
	egr_ci_sudo mkdir -p "$dir" || return 1
	for _ in 1 2 3 4 5; do
		moved=0
		for p in $(egr_ci_tree "$root"); do
			[ "$(egr_ci_cgroup_of "$p")" = "${dir#"$mnt"}" ] && continue
			echo "$p" | egr_ci_sudo tee "$dir/cgroup.procs" >/dev/null 2>&1 &&
				moved=$((moved + 1))
		done
		[ "$moved" = 0 ] && break
	done
}

# egr_ci_job_cgroup ROOT NAME [SLICES]: prints the cgroup (a path) that
# holds exactly ROOT's tree: the one it is in when nothing else is there,
# else <mount>/egressctl/NAME, made and filled with the tree. With SLICES
# (dockerd's systemd cgroup driver: where systemd's slices begin below
# the mount, egr_ci_docker_slices) a slice's cgroup, whose name docker
# takes as its containers' parent: <mount>SLICES/egressctl.slice/
# egressctl-NAME.slice ('-' in NAME as '_'), the tree in its "job" (a
# slice holds no process itself)
egr_ci_job_cgroup() {
	local root=$1 name=$2 mnt cur tree p others=0 dir
	mnt=$(egr_ci_mount)
	[ -n "$mnt" ] || { egr_ci_say "no cgroup2 hierarchy is mounted"; return 1; }
	cur=$(egr_ci_cgroup_of "$root")
	[ -n "$cur" ] || { egr_ci_say "cannot read the cgroup of process $root"; return 1; }
	egr_ci_name_ok "$name" || { egr_ci_say "cgroup name '$name': expected [A-Za-z0-9._-]"; return 1; }
	if [ -n "${3+set}" ]; then
		dir=$mnt$3/egressctl.slice/egressctl-$(printf '%s' "$name" | tr -- - _).slice
		egr_ci_move_tree "$root" "$dir/job" || return 1
		egr_ci_say "dockerd uses systemd's cgroup driver: the job ($root and what it spawned) moved to $dir/job, the job's cgroup is the slice's"
		echo "$dir"
		return 0
	fi
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
	egr_ci_move_tree "$root" "$mnt/egressctl/$name" || return 1
	egr_ci_say "$others other process(es) share $mnt$cur: the job's ($root and what it spawned) moved to $mnt/egressctl/$name"
	echo "$mnt/egressctl/$name"
}

# egr_ci_docker_sock: dockerd's socket where there is one
egr_ci_docker_sock() {
	local r
	for r in /run/docker.sock /var/run/docker.sock; do
		[ -S "$r" ] && { echo "$r"; return 0; }
	done
	return 1
}

# egr_ci_docker_slices SOCK: when dockerd at SOCK uses systemd's cgroup
# driver, where systemd's slices begin below the cgroup2 mount: the root
# of the cgroup2 mount in the mount namespace of the process listening on
# SOCK (dockerd, or systemd for docker.socket), as ours sees it ("" when
# it is the mount's own root, as on a host). Nothing (status 1) with
# another driver or when docker does not answer.
egr_ci_docker_slices() {
	local sock=$1 drv pid r
	drv=$(timeout 30 docker -H "unix://$sock" info --format '{{.CgroupDriver}}' 2>/dev/null) || return 1
	[ "$drv" = systemd ] || return 1
	pid=$(egr_ci_sudo ss -xlpnH src "$sock" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1)
	r=$([ -n "$pid" ] && egr_ci_sudo cat "/proc/$pid/mountinfo" | awk '
		{ for (i = 1; i <= NF; i++) if ($i == "-") break
		  if ($5 == "/sys/fs/cgroup") { top = ($(i + 1) == "cgroup2"); troot = $4 }
		  else if ($(i + 1) == "cgroup2" && first == "") first = $4 }
		END { if (top) print troot; else if (first != "") print first; else exit 1 }')
	[ -n "$r" ] || {
		egr_ci_say "dockerd at $sock uses systemd's cgroup driver, and where its slices are cannot be told: its containers will be refused"
		return 1
	}
	[ "$r" = / ] && r=
	printf '%s\n' "$r"
}

# egr_ci_bin: the egressctl to use: EGR_BIN, else built (EGR_BUILD=true:
# the build's packages only, then make), else on PATH
egr_ci_bin() {
	if [ -n "${EGR_BIN:-}" ]; then
		[ -x "$EGR_BIN" ] || { egr_ci_say "EGR_BIN=$EGR_BIN is not executable"; return 1; }
		echo "$EGR_BIN"
		return 0
	fi
	case "${EGR_BUILD:-false}" in
	true)
		egr_ci_say "building egressctl from $EGR_SRC (tools/install-deps.sh --build, make)"
		egr_ci_sudo "$EGR_SRC/tools/install-deps.sh" --build >&2 || return 1
		make -C "$EGR_SRC" -j"$(nproc)" build/egressctl >&2 || return 1
		echo "$EGR_SRC/build/egressctl"
		return 0
		;;
	false) ;;
	*)
		egr_ci_say "EGR_BUILD=$EGR_BUILD: expected true or false"
		return 1
		;;
	esac
	if command -v egressctl >/dev/null; then
		command -v egressctl
		return 0
	fi
	egr_ci_say "no egressctl: install it (on PATH), name it (EGR_BIN), or build it from $EGR_SRC (EGR_BUILD=true)"
	return 1
}

# egr_ci_rules TEXT: one rule a line, from lines, spaces or commas
egr_ci_rules() { printf '%s\n' "$1" | tr ', \t' '\n\n\n' | sed '/^$/d; /^#/d'; }

# The root side of the start ($1 the state directory): a state directory
# of its own, made afresh (one left by a job whose daemon is gone is
# removed; one whose daemon runs is refused), the binary (stdin) copied in.
EGR_CI_ROOT_PREPARE='set -u
sdir=$1
umask 077
mkdir -p -m 0700 /run/egressctl /run/egressctl/ci || exit 1
if [ -e "$sdir" ] || [ -L "$sdir" ]; then
	pid=$(sed -n "s/^pid=//p" "$sdir/state" 2>/dev/null)
	if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$sdir/egressctl" ]; then
		echo "egressctl-ci: a daemon of $sdir runs already (pid $pid)" >&2
		exit 1
	fi
	rm -rf -- "$sdir" || exit 1
fi
mkdir -m 0700 "$sdir" && cat >"$sdir/egressctl" && chmod 0700 "$sdir/egressctl"'

# The daemon's pid ($1 the state directory): the one process that runs
# the state directory's copy of egressctl
EGR_CI_ROOT_PID='n=0
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = "$1/egressctl" ] && { pid=${p#/proc/}; n=$((n + 1)); }
done
[ "$n" = 1 ] && echo "$pid"'

# --- the job's sudo (EGR_SUDO confined or disable) ----------------------
#
# The job user's sudo is replaced by a sudoers rule of root's, read after
# the runner's own (sudo takes the last rule that matches, and the file
# sorts last in /etc/sudoers.d): no command as anyone, but two programs in
# root's state directory, as root: `sudo` (confined only: `egressctl
# sudo`, CMD as root inside the job's confinement) and `ci` (the finish,
# for the one who knows the job's token: the post step, to which the
# runner hands what the main step saved). The rule goes at the finish,
# when the daemon stops, or when the job's root process is gone while the
# daemon still runs (a post step that never came): the launcher below.

# egr_ci_dropin NAME: the sudoers file of job NAME (sudo skips a name with
# a dot in it: dots become _)
egr_ci_dropin() { echo "/etc/sudoers.d/zz-egressctl-$(printf '%s' "$1" | tr . _)"; }

# egr_ci_q TEXT: TEXT as one single-quoted shell word
egr_ci_q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# The daemon under a root shell that outlives it ($1 state, $2 cgroup2
# mount, $3 the sudoers file, $4 and $5 the job's root pid and its start
# time; the daemon's command after "--"): out of the job's cgroup into
# <mnt>/egressctl/NAME.watch; when the daemon ends, or the job's root
# process is gone first (the daemon is then stopped), the sudoers file goes.
EGR_CI_ROOT_LAUNCH='set -u
sdir=$1 mnt=$2 dropin=$3 wpid=$4 wstart=$5
shift 6
own=$mnt/egressctl/${sdir##*/}.watch
mkdir -p "$own" && echo $$ >"$own/cgroup.procs" || own=
start_of() { s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; set -- $s; echo "${20}"; }
"$@" &
dpid=$!
while kill -0 "$dpid" 2>/dev/null; do
	if [ "$(start_of "$wpid")" != "$wstart" ]; then
		echo "egressctl-ci: the job (process $wpid) ended without its finish: stopping the daemon" >&2
		kill -TERM "$dpid"
		break
	fi
	sleep 1
done
wait "$dpid"
rc=$?
if [ -e "$dropin" ]; then
	rm -f -- "$dropin" && echo "egressctl-ci: $dropin removed: the job user'"'"'s sudo is as before" >&2
fi
if [ -n "$own" ]; then echo $$ >"$mnt/cgroup.procs" && rmdir "$own"; fi
exit $rc'

# The helper `ci` in root's state (through sudo, the token on stdin):
# finish DIR, fetch DIR FILE, cleanup DIR. Its first lines (sdir, dropin,
# FINISH, CHECK) are written by egr_ci_sudo_setup; the cgroup2 mount is
# its own finding, not the caller's word.
EGR_CI_HELPER_BODY='set -u
IFS= read -r tok || tok=
if [ -z "$tok" ] || [ "$tok" != "$(cat "$sdir/token" 2>/dev/null)" ]; then
	echo "egressctl-ci: refused: only the finish of this job (its post step) may do that" >&2
	exit 3
fi
mnt=$(awk '"'"'{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }'"'"' \
	/proc/self/mountinfo | sed '"'"'s/\\040/ /g'"'"' | head -1)
case ${1:-}:${2:-} in
finish:/*) exec /bin/sh -c "$FINISH" egressctl-ci "$sdir" "$2" "$mnt" ;;
fetch:/*)
	case ${3:-} in decisions.jsonl | summary.md | summary.json | egress-policy.json) ;; *) exit 2 ;; esac
	exec /bin/sh -c "$CHECK"'"'"'cat -- "$sdir/$3"'"'"' egressctl-ci "$sdir" "$2" "$3" ;;
cleanup:/*)
	rm -f -- "$dropin"
	exec /bin/sh -c "$CHECK"'"'"'rm -rf -- "$sdir"'"'"' egressctl-ci "$sdir" "$2" ;;
esac
echo "egressctl-ci: usage: ci finish|fetch|cleanup DIR [FILE] (the token on stdin)" >&2
exit 2'

# The root side of the sudo setup ($1 state, $2 sudoers file, $3 the job
# user's uid, $4 the mode; the helper's text on stdin): the token, the
# helper, the `sudo` program (confined), the rule checked by visudo and
# put in place under its name. Prints the token.
EGR_CI_ROOT_SUDO='set -u
sdir=$1 dropin=$2 uid=$3 mode=$4
umask 077
cat >"$sdir/ci" && chmod 0700 "$sdir/ci" || exit 1
od -An -tx1 -N16 /dev/urandom | tr -d " \n" >"$sdir/token" || exit 1
progs=$sdir/ci
if [ "$mode" = confined ]; then
	printf "#!/bin/sh\nexec %s sudo \"\$@\"\n" "$sdir/egressctl" >"$sdir/sudo" && chmod 0700 "$sdir/sudo" || exit 1
	progs="$sdir/ci, $sdir/sudo"
fi
tmp=/etc/sudoers.d/.egressctl.$$
{
	echo "# egressctl: the sudo of uid $uid while egressctl confines its job"
	echo "# (sudo: $mode; $sdir). Removed at the finish, or when the daemon stops."
	echo "Defaults!$sdir/ci env_reset, !setenv"
	[ "$mode" = confined ] && echo "Defaults!$sdir/sudo env_reset, !setenv"
	echo "#$uid ALL=(ALL:ALL) !ALL"
	echo "#$uid ALL=(root) NOPASSWD: $progs"
} >"$tmp" && chmod 0440 "$tmp" || { rm -f -- "$tmp"; exit 1; }
if ! visudo -cqf "$tmp" >&2; then
	echo "egressctl-ci: visudo refuses the rule written for the job user:" >&2
	cat "$tmp" >&2
	rm -f -- "$tmp"
	exit 1
fi
mv -f -- "$tmp" "$dropin" && printf "sudoers=%s\nsudo=%s\n" "$dropin" "$mode" >>"$sdir/state" || exit 1
cat "$sdir/token"'

# egr_ci_sudo_setup SDIR NAME: the job user's sudo restricted as EGR_SUDO
# says; EGR_CI_TOKEN := the job's token. Checked as the job user: plain
# sudo refused, the helper (and `egressctl sudo`) allowed.
egr_ci_sudo_setup() {
	local sdir=$1 name=$2 dropin helper
	dropin=$(egr_ci_dropin "$name")
	helper="#!/bin/sh
# egressctl-ci: the finish of job $name, as root, for its post step
sdir=$(egr_ci_q "$sdir")
dropin=$(egr_ci_q "$dropin")
FINISH=$(egr_ci_q "$EGR_CI_ROOT_FINISH")
CHECK=$(egr_ci_q "$EGR_CI_ROOT_CHECK")
$EGR_CI_HELPER_BODY"
	EGR_CI_TOKEN=$(printf '%s\n' "$helper" | egr_ci_root "$EGR_CI_ROOT_SUDO" "$sdir" "$dropin" "$(id -u)" "$sudo_mode") &&
		[ -n "$EGR_CI_TOKEN" ] || { egr_ci_say "cannot restrict the job user's sudo"; return 1; }
	[ "$(id -u)" = 0 ] && return 0 # root's own sudo is not a job user's: nothing to check
	if "$EGR_CI_SUDO" -n true 2>/dev/null; then
		egr_ci_say "the job user still has sudo after $dropin (a rule read after it grants it): removed"
		"$EGR_CI_SUDO" -n rm -f -- "$dropin"
		return 1
	fi
	if ! "$EGR_CI_SUDO" -n -l "$sdir/ci" >/dev/null 2>&1 ||
		{ [ "$sudo_mode" = confined ] && ! "$EGR_CI_SUDO" -n -l "$sdir/sudo" >/dev/null 2>&1; }; then
		egr_ci_say "the job user cannot run $sdir/ci or $sdir/sudo through sudo after $dropin"
		return 1
	fi
	egr_ci_say "the job user's sudo is $sudo_mode until the finish ($dropin)"
}

# egr_ci_daemon_args: the daemon's options from the settings, into the
# array args (a policy file or text is handed to root's state on a pipe)
egr_ci_daemon_args() {
	local sdir=$1 r
	case "${EGR_MODE:-audit}" in
	audit) args+=(--audit) ;;
	block) ;;
	*) egr_ci_say "mode '${EGR_MODE}': expected audit or block"; return 1 ;;
	esac
	if [ -n "${EGR_POLICY:-}" ]; then
		if [ -f "$EGR_POLICY" ]; then
			egr_ci_root 'umask 077; cat >"$1/policy.json"' "$sdir" <"$EGR_POLICY" || return 1
			args+=(--policy "$sdir/policy.json")
		elif [ "${EGR_POLICY#\{}" != "$EGR_POLICY" ] || [ "${EGR_POLICY# \{}" != "$EGR_POLICY" ]; then
			printf '%s\n' "$EGR_POLICY" | egr_ci_root 'umask 077; cat >"$1/policy.json"' "$sdir" || return 1
			args+=(--policy "$sdir/policy.json")
		else
			while read -r r; do args+=(--allow "$r"); done < <(egr_ci_rules "$EGR_POLICY")
		fi
	fi
	while read -r r; do args+=(--allow "$r"); done < <(egr_ci_rules "${EGR_ALLOW:-}")
	case "${EGR_DOCKER:-true}" in
	true)
		if r=$(egr_ci_docker_sock); then
			args+=(--docker "$r")
			[ -n "${EGR_DOCKER_SERVICES:-}" ] && args+=(--docker-services "$EGR_DOCKER_SERVICES")
		fi ;;
	false) ;;
	*) egr_ci_say "docker '${EGR_DOCKER}': expected true or false"; return 1 ;;
	esac
	egr_ci_secret_args "$sdir" || return 1
	if [ -n "${EGR_SECRETS:-}" ] || [ "${EGR_CA:-false}" = true ]; then
		egr_ci_ca_args "$sdir" || return 1
	fi
	# shellcheck disable=SC2206 # word-split on purpose
	args+=(${EGR_DAEMON_ARGS:-})
}

# EGR_SECRETS into --secret options (args) and value files in root's state
# directory $1 (0600, written from a pipe: no value is ever on a command
# line); a line is never echoed, it holds a value
egr_ci_secret_args() {
	local sdir=$1 line name rest hosts n=0 k=0
	[ -n "${EGR_SECRETS:-}" ] || return 0
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%$'\r'}
		k=$((k + 1))
		case $line in '' | '#'*) continue ;; esac
		name=${line%%=*}
		rest=${line#*=}
		hosts=${rest##*@}
		case $name in
		'' | [0-9]* | *[!A-Za-z0-9_]*)
			egr_ci_say "secrets: line $k: expected NAME=VALUE@HOST[,HOST] (NAME: letters, digits, _)"
			return 1
			;;
		esac
		if [ "$name" = "$line" ] || [ "$hosts" = "$rest" ] || [ -z "$hosts" ]; then
			egr_ci_say "secrets: $name: expected NAME=VALUE@HOST[,HOST] (the hosts it may go to)"
			return 1
		fi
		n=$((n + 1))
		printf '%s' "${rest%@*}" | egr_ci_root 'umask 077; cat >"$1/secret-$2"' "$sdir" "$n" ||
			{ egr_ci_say "secrets: $name: cannot hand the value to root"; return 1; }
		args+=(--secret "$name=file:$sdir/secret-$n@$hosts")
	done <<<"$EGR_SECRETS"
	[ "$n" = 0 ] || args+=(--secret-placeholders "$sdir/placeholders")
}

# The secrets' value files in root's state directory $1, gone
egr_ci_drop_values() {
	[ -z "${EGR_SECRETS:-}" ] || egr_ci_root 'rm -f -- "$1"/secret-*' "$1"
}

# The job's CA, made by root in its state directory $1 (the key never
# leaves it), for the daemon (args)
egr_ci_ca_args() {
	local sdir=$1
	egr_ci_root 'umask 077; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 7 -subj "/CN=egressctl CI job $(basename "$1")" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
		-keyout "$1/ca.key" -out "$1/ca.pem" >/dev/null 2>&1' "$sdir" ||
		{ egr_ci_say "cannot make the job's CA (openssl req)"; return 1; }
	args+=(--ca "$sdir/ca.pem,$sdir/ca.key")
}

# The system's CA bundle (what the job's clients trust besides the CA)
egr_ci_system_bundle() {
	local f d
	for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt \
		/etc/ssl/ca-bundle.pem /etc/ssl/cert.pem; do
		[ -s "$f" ] && { echo "$f"; return 0; }
	done
	d=$(openssl version -d 2>/dev/null | sed -n 's/^OPENSSLDIR: "\(.*\)"$/\1/p')
	[ -n "$d" ] && [ -s "$d/cert.pem" ] && echo "$d/cert.pem"
}

# What the job's later steps get ($1 root's state directory, $2 the job's
# directory): the placeholders (the value files go now: the daemon read
# them at start), the CA and the bundle, and $2/job.env naming them
egr_ci_hand_out() {
	local sdir=$1 dir=$2 sys v
	: >"$dir/job.env" || return 1
	if [ -n "${EGR_SECRETS:-}" ]; then
		egr_ci_root 'cat "$1/placeholders" && rm -f -- "$1"/secret-*' "$sdir" >"$dir/secrets.env" ||
			{ egr_ci_say "cannot read the secrets' placeholders"; return 1; }
		cat "$dir/secrets.env" >>"$dir/job.env"
	fi
	if [ -n "${EGR_SECRETS:-}" ] || [ "${EGR_CA:-false}" = true ]; then
		egr_ci_root 'cat "$1/ca.pem"' "$sdir" >"$dir/ca.pem" || return 1
		sys=$(egr_ci_system_bundle) || egr_ci_say "no system CA bundle found: the bundle holds the job's CA alone"
		{ [ -n "$sys" ] && cat "$sys"; cat "$dir/ca.pem"; } >"$dir/ca-bundle.pem" || return 1
		for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT \
			NPM_CONFIG_CAFILE AWS_CA_BUNDLE; do
			echo "$v=$(egr_ci_abs "$dir")/ca-bundle.pem"
		done >>"$dir/job.env"
		echo "NODE_EXTRA_CA_CERTS=$(egr_ci_abs "$dir")/ca.pem" >>"$dir/job.env"
	fi
}

# The NAME=VALUE lines the job's later steps get (placeholders, the CA's
# variables): none without secrets or a CA
egr_ci_env() { cat "${EGR_DIR:?EGR_DIR is not set}/job.env" 2>/dev/null; }

egr_ci_start() {
	local root=$1 bin cg dir=${EGR_DIR:?EGR_DIR is not set} name sdir v dpid sudo_mode=${EGR_SUDO:-allow}
	local sock slices
	local -a args=() envs=()
	[ -n "$root" ] || { egr_ci_say "no job process to confine"; return 1; }
	case $sudo_mode in
	allow | confined | disable) ;;
	*) egr_ci_say "sudo '$sudo_mode': expected confined, disable or allow"; return 1 ;;
	esac
	if [ "$sudo_mode" != allow ] && [ "$(id -u)" = 0 ]; then
		egr_ci_say "the job runs as root: sudo: $sudo_mode cannot keep it inside (sudo: allow)"
		sudo_mode=allow
	fi
	mkdir -p "$dir" && chmod 0755 "$dir" || return 1
	if [ -s "$dir/state" ]; then
		egr_ci_say "egressctl is confining this job already ($dir/state)"
		return 0
	fi
	name=${EGR_CGROUP:-ci-$$}
	egr_ci_name_ok "$name" || { egr_ci_say "job name '$name': expected [A-Za-z0-9._-]"; return 1; }
	sdir=$EGR_CI_STATE/$name
	bin=$(egr_ci_bin) || return 1
	# the binary the daemon runs and the finish calls: root's copy, read
	# by the job user
	egr_ci_root "$EGR_CI_ROOT_PREPARE" "$sdir" <"$bin" || {
		egr_ci_say "cannot make the state directory $sdir"
		return 1
	}
	if [ "${EGR_DOCKER:-true}" = true ] && sock=$(egr_ci_docker_sock) &&
		slices=$(egr_ci_docker_slices "$sock"); then
		cg=$(egr_ci_job_cgroup "$root" "$name" "$slices") || return 1
	else
		cg=$(egr_ci_job_cgroup "$root" "$name") || return 1
	fi
	egr_ci_daemon_args "$sdir" || { egr_ci_drop_values "$sdir"; return 1; }
	for v in $EGR_CI_IDENT_VARS; do [ -n "${!v:-}" ] && envs+=("$v=${!v}"); done
	# daemon.out is the job's: opened by this shell, as the job user
	: >"$dir/daemon.out"
	local cmd=(env -i PATH="$EGR_CI_PATH" "${envs[@]}" setsid "$sdir/egressctl" daemon
		--cgroup "$cg" --control "$sdir/control" --log "$sdir/decisions.jsonl"
		--summary "$sdir/summary.md" --summary-format markdown "${args[@]}")
	if [ "$sudo_mode" != allow ]; then
		# under a root shell that takes the sudoers rule away when the
		# daemon ends, or the job's root process does
		cmd=(env -i PATH="$EGR_CI_PATH" "${envs[@]}" setsid /bin/sh -c "$EGR_CI_ROOT_LAUNCH"
			egressctl-ci "$sdir" "$(egr_ci_mount)" "$(egr_ci_dropin "$name")" "$root"
			"$(egr_ci_starttime "$root")" -- "${cmd[@]:$((4 + ${#envs[@]}))}")
	fi
	# not through egr_ci_sudo: a function run in the background is a
	# subshell (sudo passes the TERM on)
	if [ "$(id -u)" = 0 ]; then
		"${cmd[@]}" </dev/null >>"$dir/daemon.out" 2>&1 &
	else
		# shellcheck disable=SC2024 # the job user's file, opened by the job user
		"$EGR_CI_SUDO" -n "${cmd[@]}" </dev/null >>"$dir/daemon.out" 2>&1 &
	fi
	local spid=$!
	for _ in $(seq 300); do
		grep -q "ready:" "$dir/daemon.out" 2>/dev/null && break
		if ! egr_ci_alive "$spid" && ! grep -q "ready:" "$dir/daemon.out"; then
			egr_ci_say "egressctl daemon did not start: $(tail -5 "$dir/daemon.out")"
			egr_ci_drop_values "$sdir"
			return 1
		fi
		sleep 0.1
	done
	grep -q "ready:" "$dir/daemon.out" || {
		egr_ci_say "egressctl daemon is not ready after 30 s"
		egr_ci_drop_values "$sdir"
		return 1
	}
	dpid=$(egr_ci_root "$EGR_CI_ROOT_PID" "$sdir") || {
		egr_ci_say "cannot find the daemon running $sdir/egressctl"
		return 1
	}
	# root's state: what the finish trusts
	egr_ci_root 'umask 077; printf "cgroup=%s\npid=%s\ndir=%s\n" "$2" "$3" "$4" >"$1/state"' \
		"$sdir" "$cg" "$dpid" "$(egr_ci_abs "$dir")" || return 1
	egr_ci_hand_out "$sdir" "$dir" || return 1
	# docker build's BuildKit runs its RUN steps in dockerd's cgroup, and
	# is refused for the job: the classic builder runs them in the job's
	# (docker 23 and later default to BuildKit)
	if [ "${EGR_MODE:-audit}" = block ] && [[ " ${args[*]} " == *" --docker "* ]]; then
		echo "DOCKER_BUILDKIT=0" >>"$dir/job.env"
		egr_ci_say "later steps' docker build uses the classic builder (DOCKER_BUILDKIT=0): BuildKit's RUN steps would run outside the job's cgroup"
	fi
	local failed=
	if [ "$sudo_mode" != allow ] && ! egr_ci_sudo_setup "$sdir" "$name"; then
		failed=1
		# the rule is gone (the sudo of the runner is back): a finish as before
		[ -e "$(egr_ci_dropin "$name")" ] || { sudo_mode=allow; EGR_CI_TOKEN=; }
	fi
	# the job's: its name, and for the reader (the finish believes none of it)
	{
		echo "name=$name"
		echo "cgroup=$cg"
		echo "sudo=$sudo_mode"
		echo "pid=$dpid"
	} >"$dir/state"
	[ -z "$failed" ] || return 1
	EGR_SUDO=$sudo_mode
	egr_ci_say "confining $cg (${EGR_MODE:-audit} mode); decisions in $dir/decisions.jsonl at the end"
}

# egr_ci_state KEY: a value of $EGR_DIR/state (the job's: a name, no more)
egr_ci_state() { sed -n "s/^$1=//p" "$EGR_DIR/state" 2>/dev/null | head -1; }

# What every root step of the finish checks first ($1 the state
# directory, $2 the job's directory, named as the start named it): the
# state is a directory of root's (0700), made for this job. Exit 2 if not.
EGR_CI_ROOT_CHECK='set -u
sdir=$1 dir=$2
if [ -L "$sdir" ] || [ "$(stat -c %u:%a "$sdir" 2>/dev/null)" != 0:700 ] ||
	[ ! -f "$sdir/state" ] || [ "$(sed -n "s/^dir=//p" "$sdir/state")" != "$dir" ]; then
	echo "egressctl-ci: $sdir is not the state of the job of $dir" >&2
	exit 2
fi
'

# The root side of the finish (then $3 the cgroup2 mount): summary,
# suggested policy, detach, from a cgroup of its own; then the daemon
# stopped, if its pid still runs the state's copy of egressctl.
EGR_CI_ROOT_FINISH=$EGR_CI_ROOT_CHECK'mnt=$3 rc=0
bin=$sdir/egressctl
cg=$(sed -n "s/^cgroup=//p" "$sdir/state")
pid=$(sed -n "s/^pid=//p" "$sdir/state")
own=$mnt/egressctl/${sdir##*/}.finish
case "$own/" in "$cg"/*)
	echo "egressctl-ci: $own would be inside the job cgroup $cg" >&2
	exit 1 ;;
esac
if ! mkdir -p "$own" || ! echo $$ >"$own/cgroup.procs"; then
	echo "egressctl-ci: cannot leave the job cgroup for $own" >&2
	exit 1
fi
"$bin" summary --control "$sdir/control" --cgroup "$cg" \
	--suggest-policy "$sdir/egress-policy.json" >/dev/null 2>"$sdir/summary.err" || rc=1
grep -v "^egressctl: suggested policy written to" "$sdir/summary.err" >&2
"$bin" summary --control "$sdir/control" --cgroup "$cg" --format json >"$sdir/summary.json" || rc=1
"$bin" detach --control "$sdir/control" --cgroup "$cg" >/dev/null || rc=1
echo $$ >"$mnt/cgroup.procs" && rmdir "$own" ||
	echo "egressctl-ci: cannot remove $own" >&2
if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$bin" ]; then
	kill -TERM "$pid"
	for i in $(seq 100); do
		[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$bin" ] || break
		sleep 0.1
	done
else
	echo "egressctl-ci: process ${pid:-?} does not run $bin: not signalled" >&2
	rc=1
fi
exit $rc'

# egr_ci_helper SDIR ACTION ARGS...: root's side of the finish through
# the job's helper, the token (EGR_TOKEN) on its stdin
egr_ci_helper() {
	local sdir=$1
	shift
	printf '%s\n' "$EGR_TOKEN" | egr_ci_sudo "$sdir/ci" "$@"
}

# egr_ci_fetch SDIR DIR FILE: root's SDIR/FILE into DIR/FILE, written by
# the job user (a new file renamed over it: what was there, a symlink
# too, is replaced, never followed)
egr_ci_fetch() {
	local tmp
	tmp=$(mktemp "$2/.$3.XXXXXX") || return 1
	if { if [ -n "${EGR_TOKEN:-}" ]; then egr_ci_helper "$1" fetch "$2" "$3"; else
		egr_ci_root "$EGR_CI_ROOT_CHECK"'cat -- "$sdir/$3"' "$1" "$2" "$3"; fi; } >"$tmp" &&
		chmod 0644 "$tmp" && mv -fT -- "$tmp" "$2/$3"; then
		return 0
	fi
	rm -f -- "$tmp"
	return 1
}

egr_ci_finish() {
	local dir=${EGR_DIR:?EGR_DIR is not set} adir name sdir mnt f rc=0
	if [ ! -s "$dir/state" ]; then
		egr_ci_say "nothing to finish ($dir/state: none, or finished already)"
		return 0
	fi
	name=${EGR_NAME:-$(egr_ci_state name)}
	egr_ci_name_ok "$name" || { egr_ci_say "job name '$name' in $dir/state: expected [A-Za-z0-9._-]"; return 1; }
	sdir=$EGR_CI_STATE/$name
	mnt=$(egr_ci_mount)
	[ -n "$mnt" ] || { egr_ci_say "no cgroup2 hierarchy is mounted"; return 1; }
	adir=$(egr_ci_abs "$dir")
	case $(egr_ci_state sudo) in
	confined | disable)
		if [ -z "${EGR_TOKEN:-}" ]; then
			egr_ci_say "the job's sudo is $(egr_ci_state sudo) until the finish, which only the post step can do (with the token the runner hands it): not finished here"
			return 1
		fi
		;;
	esac
	if [ -n "${EGR_TOKEN:-}" ]; then
		egr_ci_helper "$sdir" finish "$adir"
	else
		egr_ci_root "$EGR_CI_ROOT_FINISH" "$sdir" "$adir" "$mnt"
	fi
	case $? in
	0) ;;
	2) return 1 ;; # not this job's: leave it alone
	*) rc=1 ;;
	esac
	for f in decisions.jsonl summary.md summary.json egress-policy.json; do
		egr_ci_fetch "$sdir" "$adir" "$f" || { egr_ci_say "cannot fetch $f from $sdir"; rc=1; }
	done
	if [ -n "${EGR_TOKEN:-}" ]; then
		# the sudoers rule too: the job user's sudo is as before
		egr_ci_helper "$sdir" cleanup "$adir" || rc=1
	else
		egr_ci_root "$EGR_CI_ROOT_CHECK"'rm -rf -- "$sdir"' "$sdir" "$adir" || rc=1
	fi
	if [ -n "${EGR_SUMMARY:-}" ] && [ -s "$dir/summary.md" ]; then
		cat "$dir/summary.md" >>"$EGR_SUMMARY" || rc=1
	fi
	mv -fT "$dir/state" "$dir/state.done"
	egr_ci_say "finished: summary $dir/summary.md, suggested policy $dir/egress-policy.json"
	return $rc
}
