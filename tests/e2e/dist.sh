#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of the release tarball (`make dist`): what is in it and
# how it is packed; that its binary needs no shared library but glibc's
# (readelf -d) and no glibc symbol newer than 2.31 (objdump -T); and that
# it confines a command in a root that holds nothing but busybox and the
# host's glibc (its loader and the libraries it names), the demo's job:
# `egressctl run --allow a.example.test -- CMD` with an allowed and a
# denied destination, the denied one tried first without egressctl (the
# control half) and then under it, with zero packets at the leak sensor.
#
#   tests/e2e/dist.sh build/egressctl   (as root; make e2e does this after
#                                        make dist: the tarball is taken
#                                        from build/dist/)
#   E2E_TESTS="tarball chroot" ...      run only these test functions
#   E2E_KEEP=1 ...                      keep /tmp/egr-e2e-PID
#
# The network, names and servers are audit.sh's (audit_net.sh): dnsmasq on
# 198.18.0.1 (a.example.test 203.0.113.10), HTTP :80 on every address of
# the test "internet", the leak sensor on its veth. The chroot's mounts
# (proc, sys, the cgroup2 and bpf filesystems) are made in the suite's own
# mount namespace (e2e_reexec --mntns) and undone by the cleanup.
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion, and as the last
# line "N passed, M failed".  Exit 1 if any failed, 77 if not root.

set -u
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"
. "$(dirname "$0")/audit_net.sh"

REPO=$(cd "$E2E_SRC/../.." && pwd)
GLIBC_MAX=2.31

# tcg TAG: a cgroup this suite makes (removed by e2e_cleanup)
tcg() { echo "$CGROOT/egr-e2e-$$-$1"; }
ROOT=$W/root	# the chroot: busybox, the binary, glibc's loader and libraries

# dist_find: DIST (the tarball), DIST_SUMS, DIST_FILE (its name); false
# with a FAIL line when make dist has not made exactly one
dist_find() {
	local d
	d=$(dirname "$EGRESSCTL")/dist
	DIST_SUMS=$d/SHA256SUMS
	set -- "$d"/egressctl-*-linux-amd64.tar.gz
	if [ $# != 1 ] || [ ! -f "$1" ]; then
		fail dist.present "want one $d/egressctl-VERSION-linux-amd64.tar.gz (make dist), found: $*"
		return 1
	fi
	DIST=$1
	DIST_FILE=$(basename "$DIST")
}

# unpacked: the tarball unpacked once into $W/unpacked; UNPACKED is its top
# directory, BIN its binary
unpacked() {
	UNPACKED=$W/unpacked/${DIST_FILE%.tar.gz}
	BIN=$UNPACKED/bin/egressctl
	[ -d "$UNPACKED" ] && return 0
	mkdir -p "$W/unpacked" && tar -xzf "$DIST" -C "$W/unpacked"
}

# ======================================================================
# The tarball: its checksum, what is in it, how it is packed
# ======================================================================
test_tarball() {
	local t=tarball list ver names
	dist_find || return 0
	(cd "$(dirname "$DIST")" && sha256sum -c --quiet SHA256SUMS) >"$W/$t.sums" 2>&1
	a_val "$t.sha256sums" "sha256sum -c SHA256SUMS" "$?" 0
	a_val "$t.sums_name_it" "files SHA256SUMS names" "$(awk '{ print $2 }' "$DIST_SUMS")" "$(re "$DIST_FILE")"
	unpacked || { fail "$t.unpacks" "tar -xzf $DIST failed"; return 0; }
	list=$(tar -tzf "$DIST" | sed "s|^${DIST_FILE%.tar.gz}/||")
	for f in bin/egressctl share/man/man1/egressctl.1 share/man/man5/egressctl-policy.5 \
		share/bash-completion/completions/egressctl share/zsh/site-functions/_egressctl \
		share/egressctl/ci/github/main.js share/egressctl/ci/lib/egressctl-ci.sh \
		share/egressctl/ci/gitlab/egressctl.sh share/doc/egressctl/LICENSE \
		share/doc/egressctl/linked/libjansson4.copyright; do
		a_grep "$t.holds.$f" <(printf '%s\n' "$list") "^$(re "$f")\$"
	done
	# the CI scripts with their modes; not the sums that name the tarball
	expect "$t.ci_script_executable" "share/egressctl/ci/github/main.sh is not executable" \
		test -x "$UNPACKED/share/egressctl/ci/github/main.sh"
	a_nogrep "$t.no_sums_inside" <(printf '%s\n' "$list") 'SHA256SUMS'
	# packed the same way every time: sorted names, owner 0, one mtime
	names=$(tar -tzf "$DIST")
	a_eq "$t.sorted" "names in order" "$names" "$(printf '%s\n' "$names" | LC_ALL=C sort)"
	a_eq "$t.owner" "owners" "$(tar -tvzf "$DIST" | awk '{ print $2 }' | sort -u)" "0/0"
	a_eq "$t.one_mtime" "mtimes" "$(tar -tvzf "$DIST" | awk '{ print $4, $5 }' | sort -u | wc -l)" 1
	# the version in the name is the binary's own
	ver=${DIST_FILE#egressctl-}
	ver=${ver%-linux-amd64.tar.gz}
	a_grep "$t.version" <("$BIN" version 2>&1) "^egressctl $(re "$ver") "
}

# ======================================================================
# The binary: glibc's libraries only, no glibc symbol newer than 2.31
# ======================================================================
test_static() {
	local t=static needed bad newer highest
	dist_find && unpacked || return 0
	needed=$(readelf -d "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
	note "$t: NEEDED: $(printf '%s' "$needed" | tr '\n' ' ')"
	bad=$(printf '%s\n' "$needed" | grep -Ev '^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2)$')
	a_eq "$t.needed_glibc_only" "NEEDED libraries that are not glibc's" "$bad" ""
	a_grep "$t.needs_libc" <(printf '%s\n' "$needed") '^libc\.so\.6$'
	# none of the libraries linked in statically is named (and the
	# dynamically linked build/egressctl, the control, names them)
	a_grep "$t.control.shared_build_names_libbpf" <(readelf -d "$EGRESSCTL") 'NEEDED.*\[libbpf\.so'
	newer=$(objdump -T "$BIN" | sed -n 's/.*(GLIBC_\([0-9.]*\)).*/\1/p' | sort -uV |
		while read -r v; do [ "$(printf '%s\n%s\n' "$v" "$GLIBC_MAX" | sort -V | tail -1)" = "$GLIBC_MAX" ] || echo "$v"; done)
	highest=$(objdump -T "$BIN" | sed -n 's/.*(GLIBC_\([0-9.]*\)).*/\1/p' | sort -uV | tail -1)
	note "$t: highest glibc symbol version: GLIBC_$highest"
	a_eq "$t.glibc_at_most_$GLIBC_MAX" "symbol versions above GLIBC_$GLIBC_MAX" "$(printf '%s' "$newer" | tr '\n' ' ')" ""
	# the check make dist runs says the same, and refuses the shared build
	"$REPO/tools/dist/check-binary.sh" "$BIN" "$GLIBC_MAX" >"$W/$t.check" 2>&1
	a_val "$t.check_binary" "tools/dist/check-binary.sh on the release binary" "$?" 0
	"$REPO/tools/dist/check-binary.sh" "$EGRESSCTL" "$GLIBC_MAX" >"$W/$t.check_shared" 2>&1
	a_val "$t.control.check_binary_refuses_shared" "check-binary.sh on build/egressctl" "$?" 1
}

# root_make: $ROOT with busybox (static), the release binary, glibc's loader
# and the libraries the binary names (copied from the host), and the
# mount points; nothing else
root_make() {
	local lib interp
	rm -rf "$ROOT"
	mkdir -p "$ROOT/bin" "$ROOT/lib/x86_64-linux-gnu" "$ROOT/lib64" "$ROOT/proc" "$ROOT/sys" \
		"$ROOT/dev" "$ROOT/run" "$ROOT/tmp" || return 1
	chmod 1777 "$ROOT/tmp"
	cp /bin/busybox "$ROOT/bin/busybox" && cp "$BIN" "$ROOT/egressctl" || return 1
	interp=$(readelf -l "$BIN" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
	[ "$interp" = /lib64/ld-linux-x86-64.so.2 ] || { note "interpreter '$interp'"; return 1; }
	cp "$(readlink -f "$interp")" "$ROOT$interp" || return 1
	for lib in $(readelf -d "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
		cp "$(readlink -f "/lib/x86_64-linux-gnu/$lib")" "$ROOT/lib/x86_64-linux-gnu/$lib" || return 1
	done
}

# root_mount: the root a mount of its own, as a container's is (the
# sandbox makes CMD's / private), and what the run needs of the host,
# bind-mounted at the same paths: /proc, /dev (egressctl opens /dev/null),
# /sys with what is mounted below it (the cgroup2 mount and bpffs,
# usually), and those two where they are elsewhere
root_mount() {
	local bpffs m
	bpffs=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "bpf") print $5; break } }' \
		/proc/self/mountinfo | head -1)
	[ -n "$bpffs" ] || { note "no bpffs mounted"; return 1; }
	mount --bind "$ROOT" "$ROOT" && mount --bind /proc "$ROOT/proc" && mount --bind /dev "$ROOT/dev" &&
		mount --rbind /sys "$ROOT/sys" || return 1
	for m in "$CGROOT" "$bpffs"; do
		case $m in /sys/*) continue ;; esac
		mkdir -p "$ROOT$m" && mount --bind "$m" "$ROOT$m" || return 1
	done
}

# get HOST PATH: busybox shell text that GETs http://HOST/PATH and prints
# the response. busybox-static's wget crashes, so nc speaks HTTP/1.0; its
# -e program writes the request and reads the answer, so that the request
# is not followed by a half-close (the proxy takes one for the client
# leaving, http_ex.c). The status: nc's (cannot connect), else cat's.
get() {
	printf '%s' "/bin/busybox nc -w 5 $1 80 -e /bin/busybox sh -c 'printf \"GET $2 HTTP/1.0\\\\r\\\\nHost: $1\\\\r\\\\n\\\\r\\\\n\"; exec /bin/busybox cat >&2' 2>&1"
}

# ======================================================================
# The release binary confines a command in a root of busybox and glibc
# ======================================================================
test_chroot() {
	local t=chroot ctl den files want out
	dist_find && unpacked || return 0
	if ! root_make; then
		fail "$t.root" "could not make $ROOT"
		return 0
	fi
	files=$(cd "$ROOT" && find . ! -type d | LC_ALL=C sort | tr '\n' ' ')
	want=$({
		printf '%s\n' ./bin/busybox ./egressctl ./lib64/ld-linux-x86-64.so.2
		readelf -d "$BIN" | sed -n 's|.*(NEEDED).*\[\(.*\)\]$|./lib/x86_64-linux-gnu/\1|p'
	} | LC_ALL=C sort | tr '\n' ' ')
	note "$t: the root holds $files"
	a_eq "$t.root_holds_only" "files in the root" "$files" "$want"
	if ! root_mount; then
		fail "$t.mounts" "could not bind-mount /proc, /sys, $CGROOT and bpffs into $ROOT"
		return 0
	fi
	new4 ctl
	new4 den
	# the control half: without egressctl, from the same root, the denied
	# destination answers
	timeout 20 nsenter --net="$NS_SBX" chroot "$ROOT" /bin/busybox sh -c "$(get "$ctl" /dist-control)" \
		>"$W/$t.control" 2>&1
	a_grep "$t.control.reached" "$W/$t.control" "^hello GET /dist-control via $(re "$ctl"):80"
	sensor_saw "$t.control.sensor_saw" "dst host $ctl and tcp dst port 80"
	# under egressctl, the release binary in the root: the allowed name
	# answers, the denied address and the denied name do not
	timeout -k 2 60 nsenter --net="$NS_SBX" chroot "$ROOT" /egressctl run --cgroup "$(cg_name "$t")" \
		--user 65534 --dns-upstream "$INET_DNS" --allow a.example.test -- /bin/busybox sh -c "
		$(get a.example.test /dist-allowed); r=\$?; echo; echo \"allowed rc=\$r\"
		$(get "$den" /dist-denied); r=\$?; echo; echo \"denied-address rc=\$r\"
		$(get blocked.test /dist-denied-name); r=\$?; echo; echo \"denied-name rc=\$r\"
		/bin/busybox id -u" >"$W/$t.out" 2>"$W/$t.err" </dev/null
	EGR_RC=$?
	note "$t: egressctl said: $(tr '\n' '|' <"$W/$t.err" | head -c 900)"
	a_grep "$t.allowed" "$W/$t.out" '^hello GET /dist-allowed via 203\.0\.113\.10:80$'
	a_grep "$t.allowed_rc" "$W/$t.out" '^allowed rc=0$'
	a_nogrep "$t.denied_address_no_answer" "$W/$t.out" 'hello GET /dist-denied'
	a_grep "$t.denied_address_blocked" "$W/$t.out" "blocked $(re "$den"):80: no rule allows it"
	a_grep "$t.denied_name_failed" "$W/$t.out" '^denied-name rc=[1-9]'
	a_grep "$t.cmd_as_nobody" "$W/$t.out" '^65534$'
	a_grep "$t.said_denied" "$W/$t.err" "^egressctl: denied .*$(re "$den")"
	a_grep "$t.summary" "$W/$t.err" '^egressctl: summary: [1-9][0-9]* allowed, [1-9][0-9]* denied'
	a_nogrep "$t.server_saw_nothing_denied" "$WEBLOG" 'dist-denied'
	a_grep "$t.server_saw_allowed" "$WEBLOG" 'target=/dist-allowed'
	sensor_none "$t.sensor_nothing" "dst host $den"
	out=$(cg_path "$t")
	expect "$t.cgroup_removed" "$out is left behind" test ! -d "$out"
}

# ======================================================================
# The GitHub Action: the release tarball of its ref, downloaded and
# checked; a tampered one refused; built only when asked
# ======================================================================

SRV=203.0.113.90	# the suite's release server ("GitHub"), port 8000
GH_CONTROL=203.0.113.21	# what the step reaches before the action (control half)
GH_DENIED=203.0.113.24	# ... and after it, denied

# srv_start: python's http.server on $SRV:8000 in the test internet,
# serving $W/srv, each request logged in $W/srv.log
srv_start() {
	[ -n "${SRV_PID:-}" ] && return 0
	mkdir -p "$W/srv"
	nsenter --net="$NS_INET" "$PY" -m http.server --bind "$SRV" --directory "$W/srv" 8000 \
		>"$W/srv.out" 2>"$W/srv.log" &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	wait_secs 10 inet_listening 8000 || { fail srv.listening "http.server: $(head -c 300 "$W/srv.log")"; return 1; }
}

# action_copy DIR: the action as a runner checks it out at a release's
# tag: action.yml and contrib/ci/, with the SHA256SUMS `make dist-sums`
# writes for this tarball (the committed header, then make dist's line)
action_copy() {
	rm -rf "$1" && mkdir -p "$1/contrib" && cp "$REPO/action.yml" "$1/" &&
		cp -a "$REPO/contrib/ci" "$1/contrib/ci" || return 1
	{ grep '^#' "$REPO/contrib/ci/SHA256SUMS"; cat "$DIST_SUMS"; } >"$1/contrib/ci/SHA256SUMS"
}

# gh_job TAG ACTION_DIR INPUT=VALUE...: a simulated runner's job (ci.sh's
# rig, without a listener) running ACTION_DIR's main step with these
# inputs, a step that reaches an allowed and a denied host, and the post
# step; the step's lines in $W/TAG.step, the worker's output in
# $W/TAG.worker. The step also says whether root's copy of egressctl (the
# daemon's) is the file $W/TAG.want names.
gh_job() {
	local tag=$1 action=$2 cg wpid i
	shift 2
	cg=$(tcg "$tag")
	mkdir -p "$cg" "$W/$tag.bin" "$W/$tag.tmp" || return 1
	ln -sf /bin/bash "$W/$tag.bin/Runner.Worker"
	: >"$W/$tag.summary.md"
	: >"$W/$tag.output"
	: >"$W/$tag.state"
	: >"$W/$tag.step"
	cat >"$W/$tag.worker.sh" <<EOF
set -u
step() {
	echo "step \$1 \$(curl -s -o /dev/null -m 5 -w '%{http_code}' "\${@:2}")" >>$W/$tag.step
}
step before-denied --resolve blocked.test:80:$GH_CONTROL http://blocked.test/$tag-before
env $* INPUT_MODE=block INPUT_ALLOW=a.example.test INPUT_ALLOW-RUNNER=false \
	"INPUT_DAEMON-ARGS=--dns-upstream $INET_DNS" node $action/contrib/ci/github/main.js
echo "main \$?" >>$W/$tag.step
if [ -s $W/$tag.want ] && cmp -s /run/egressctl/ci/$(cg_name "$tag-job")/egressctl "\$(cat $W/$tag.want)"; then
	echo "daemon-binary wanted" >>$W/$tag.step
fi
step allowed http://a.example.test/$tag-allowed
step denied --resolve blocked.test:80:$GH_DENIED http://blocked.test/$tag-denied
env \$(sed -n 's/^\([a-z]*\)=/STATE_\1=/p' \$GITHUB_STATE) node $action/contrib/ci/github/post.js
echo "post \$?" >>$W/$tag.step
EOF
	nsenter --net="$NS_SBX" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME="$W/$tag.tmp" GITHUB_ACTIONS=true CI=true GITHUB_RUN_ID=9002 GITHUB_RUN_ATTEMPT=1 \
		GITHUB_JOB="job-$tag" GITHUB_WORKFLOW=ci GITHUB_REPOSITORY=org/app \
		GITHUB_ACTION_REPOSITORY=org/egressctl GITHUB_ACTION_REF="v$DIST_VER" \
		GITHUB_ACTION_PATH="$action" GITHUB_STEP_SUMMARY="$W/$tag.summary.md" \
		GITHUB_OUTPUT="$W/$tag.output" GITHUB_STATE="$W/$tag.state" RUNNER_TEMP="$W/$tag.tmp" \
		EGR_CGROUP="$(cg_name "$tag-job")" \
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$1" "$2"' "$cg" "$W/$tag.bin/Runner.Worker" \
		"$W/$tag.worker.sh" </dev/null >"$W/$tag.worker" 2>&1 &
	wpid=$!
	PIDS+=("$wpid")
	for i in $(seq 1200); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$wpid" 2>/dev/null && { note "$tag: the worker overstayed 120 s"; kill "$wpid"; }
	wait "$wpid" 2>/dev/null
}

stepv() { sed -n "s/^step $2 //p" "$W/$1.step" | head -1; }

# gh_gone TAG: the post step left no root state for the job behind
gh_gone() {
	expect "$1.detached.state" "/run/egressctl/ci/$(cg_name "$1-job") is left behind" \
		test ! -e "/run/egressctl/ci/$(cg_name "$1-job")"
}

# action_ready: DIST_VER, and the release server serving the tarball where
# the tests' binary-url pattern puts it
action_ready() {
	local d
	dist_find && unpacked || return 1
	DIST_VER=${DIST_FILE#egressctl-}
	DIST_VER=${DIST_VER%-linux-amd64.tar.gz}
	srv_start || return 1
	d=$W/srv/org/egressctl/releases/download/v$DIST_VER
	mkdir -p "$d" && cp "$DIST" "$d/" || return 1
	if command -v egressctl >/dev/null; then
		fail action.no_egressctl_on_path "$(command -v egressctl) is installed: the Action would take it"
		return 1
	fi
}

test_action_release() {
	local t=ghrel base
	action_ready || return 0
	action_copy "$W/$t.action" || { fail "$t.action_copy" "cannot copy the action"; return 0; }
	# the default pattern: this repository's GitHub release of the version
	a_eq "$t.default_url" "the default binary-url" \
		"$(GITHUB_ACTION_REPOSITORY=org/egressctl bash -c '. "$1"; egr_gh_url "$EGR_GH_RELEASE_URL" egressctl-1.2.3-linux-amd64.tar.gz 1.2.3' \
			_ "$W/$t.action/contrib/ci/github/release.sh" 2>&1)" \
		"https://github.com/org/egressctl/releases/download/v1.2.3/egressctl-1.2.3-linux-amd64.tar.gz"
	a_grep "$t.action_yml_default" "$W/$t.action/action.yml" \
		'default: "https://github\.com/\{repository\}/releases/download/v\{version\}/\{file\}"'
	echo "$W/$t.tmp/egressctl-release/${DIST_FILE%.tar.gz}/bin/egressctl" >"$W/$t.want"
	base=$(sensor_now "dst host $GH_DENIED")
	gh_job "$t" "$W/$t.action" "INPUT_BINARY-URL=http://$SRV:8000/{repository}/releases/download/{ref}/{file}"
	note "$t: worker: $(tr '\n' '|' <"$W/$t.worker" | head -c 1500)"
	a_val "$t.control.before_reached" "code before the action" "$(stepv "$t" before-denied)" 200
	sensor_saw "$t.control.sensor_saw" "dst host $GH_CONTROL and tcp dst port 80"
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.downloaded" "$W/srv.log" \
		"\"GET /org/egressctl/releases/download/v$(re "$DIST_VER")/$(re "$DIST_FILE") HTTP/1\\.1\" 200"
	a_grep "$t.checked" "$W/$t.worker" \
		"^egressctl: $(re "$DIST_FILE"), SHA-256 [0-9a-f]{64} as contrib/ci/SHA256SUMS says\$"
	a_grep "$t.daemon_runs_release" "$W/$t.step" '^daemon-binary wanted$'
	a_nogrep "$t.not_built" "$W/$t.worker" 'building egressctl'
	a_val "$t.step.allowed" "allowed host" "$(stepv "$t" allowed)" 200
	a_val "$t.step.denied" "denied host" "$(stepv "$t" denied)" "000|403"
	a_nogrep "$t.step.server_saw_nothing" "$WEBLOG" "$t-denied"
	sensor_none_since "$t.step.sensor_nothing" "$base" "dst host $GH_DENIED and tcp dst port 80 and tcp[tcpflags] & tcp-syn != 0"
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	gh_gone "$t"
}

# Regression half of the checksum: a release server (or a mirror) that
# serves another tarball under the release's name fails the step; the
# tarball is never unpacked nor run, and nothing is built instead.
test_action_tampered() {
	local t=ghbad d evil
	action_ready || return 0
	action_copy "$W/$t.action" || { fail "$t.action_copy" "cannot copy the action"; return 0; }
	# a well-formed tarball of the same name, one file more
	d=$W/$t.evil
	mkdir -p "$d" "$W/srv/evil" && tar -xzf "$DIST" -C "$d" &&
		echo "evil" >"$d/${DIST_FILE%.tar.gz}/bin/evil" &&
		tar -C "$d" -czf "$W/srv/evil/$DIST_FILE" "${DIST_FILE%.tar.gz}"
	evil=$(sha256sum "$W/srv/evil/$DIST_FILE" | cut -d' ' -f1)
	gh_job "$t" "$W/$t.action" "INPUT_BINARY-URL=http://$SRV:8000/evil/{file}"
	note "$t: worker: $(tr '\n' '|' <"$W/$t.worker" | head -c 1200)"
	a_grep "$t.downloaded" "$W/srv.log" "\"GET /evil/$(re "$DIST_FILE") HTTP/1\\.1\" 200"
	a_grep "$t.main.failed" "$W/$t.step" '^main [1-9]'
	a_grep "$t.said_why" "$W/$t.worker" \
		"^::error::egressctl: http://$(re "$SRV"):8000/evil/$(re "$DIST_FILE") is not the release this action's ref names: its SHA-256 is $evil, contrib/ci/SHA256SUMS says [0-9a-f]{64} for $(re "$DIST_FILE"); refused"
	a_nogrep "$t.not_built" "$W/$t.worker" 'building egressctl|install-deps'
	expect "$t.not_unpacked" "the refused tarball was unpacked" \
		test ! -e "$W/$t.tmp/egressctl-release/${DIST_FILE%.tar.gz}"
	expect "$t.no_daemon" "root's state for the job exists" test ! -e "/run/egressctl/ci/$(cg_name "$t-job")"
	# the job's next step runs unconfined: the workflow decides whether a
	# failed step stops the job
	a_val "$t.step.unconfined" "denied host after the failed main step" "$(stepv "$t" denied)" 200
}

test_action_build() {
	local t=ghbuild src
	action_ready || return 0
	# the action's checkout: the source tree, with this build's objects
	# (the version is another, debian/changelog's: the commands are
	# compiled again and the binary linked), so that make takes seconds
	src=$W/$t.action
	rm -rf "$src" && mkdir -p "$src/build" &&
		(cd "$REPO" && tar -c --exclude-vcs --exclude=./build --exclude='./build-*' .) | tar -x -C "$src" &&
		(cd "$(dirname "$EGRESSCTL")" && tar -c --exclude=./dist --exclude=./deb --exclude=./asan \
			--exclude=./fuzz --exclude=./egressctl --exclude=./helpers --exclude=./tests .) |
		tar -x -C "$src/build" || { fail "$t.copy" "cannot copy the source tree"; return 0; }
	echo "$src/build/egressctl" >"$W/$t.want"
	cp "$W/srv.log" "$W/$t.srv.before"
	gh_job "$t" "$src" INPUT_BUILD=true "INPUT_BINARY-URL=http://$SRV:8000/{repository}/releases/download/{ref}/{file}"
	note "$t: worker: $(tr '\n' '|' <"$W/$t.worker" | tail -c 1200)"
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.built" "$W/$t.worker" "building egressctl from $(re "$src") \\(tools/install-deps\\.sh --build, make\\)"
	expect "$t.binary_made" "$src/build/egressctl is missing" test -x "$src/build/egressctl"
	a_grep "$t.daemon_runs_build" "$W/$t.step" '^daemon-binary wanted$'
	a_eq "$t.nothing_downloaded" "requests at the release server" \
		"$(diff "$W/$t.srv.before" "$W/srv.log" | grep -c GET)" 0
	a_val "$t.step.allowed" "allowed host" "$(stepv "$t" allowed)" 200
	a_val "$t.step.denied" "denied host" "$(stepv "$t" denied)" "000|403"
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	gh_gone "$t"
}

ALL_TESTS="tarball static chroot action_release action_tampered action_build"

suite_main dist.sh audit_setup "ip nsenter setpriv unshare mount chroot busybox tcpdump ss curl dig dnsmasq openssl timeout readelf objdump tar sha256sum node make" "$@"
