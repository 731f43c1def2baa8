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
	# the CI scripts with their modes
	expect "$t.ci_script_executable" "share/egressctl/ci/github/main.sh is not executable" \
		test -x "$UNPACKED/share/egressctl/ci/github/main.sh"
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

ALL_TESTS="tarball static chroot"

suite_main dist.sh audit_setup "ip nsenter setpriv unshare mount chroot busybox tcpdump ss curl dig dnsmasq openssl timeout readelf objdump tar sha256sum" "$@"
