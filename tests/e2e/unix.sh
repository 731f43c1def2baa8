#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of the unix sockets of local services that start work
# outside the cgroup (sandbox/unixsvc.c, bpf/unix.c, the masks of
# sandbox/masks.c): container runtimes, systemd's private sockets, the
# D-Bus buses. Every detour is first shown to reach a stand-in service
# without egressctl (the control half), then refused under it.
#
#   sudo tests/e2e/unix.sh build/egressctl   (make e2e does this)
#
# The stand-ins are listeners of our own (clients/unixsvc.py, root, outside
# any cgroup) at the default list's paths under T=/run/egr-test-PID, which
# the test build's --test-unix-root puts the defaults under; the host's real
# /run/docker.sock and friends are never touched. The D-Bus session bus is a
# dbus-daemon --session of our own at T/run/user/65534/bus. test_real runs
# the release build against the real default paths: a tmpfs over /run/user
# in this suite's own mount namespace (unshare below), with a session bus
# and a systemd --user stand-in in it.
#
# Everything is named with the suite's pid and removed by the EXIT trap.

set -u
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
. "$(dirname "$0")/lib.sh"
# A private mount namespace: the bind-mount alias of test_detours and the
# tmpfs over /run/user of test_real are this run's only.
e2e_reexec --mntns "$@"

ALL_TESTS="direct detours hardlink allow dbus daemon real"
T=/run/egr-test-$$
U=65534	# nobody: CMD's user, and the session bus's
SVCLOG=$W/svc.log
# the defaults (sandbox/unixsvc.c), under $T
SVCS="run/docker.sock run/containerd/containerd.sock run/podman/podman.sock
run/buildkit/buildkitd.sock run/crio/crio.sock run/systemd/private run/dbus/system_bus_socket
run/user/$U/systemd/private run/user/$U/podman/podman.sock run/user/$U/docker.sock"

eval "lib_$(declare -f e2e_cleanup)"
e2e_cleanup() {
	mountpoint -q "$W/alias" 2>/dev/null && umount "$W/alias"
	mountpoint -q /run/user 2>/dev/null && [ "${REAL_MOUNTED:-}" = 1 ] && umount -l /run/user
	lib_e2e_cleanup
	rm -rf "$T"
}

unix_setup() {
	local p args=()
	e2e_base_setup || return 1
	if ! e2e_private_mntns; then
		echo "not in a private mount namespace"
		return 1
	fi
	test_build setup || return 1
	mkdir -m 0755 -p "$T/run/user/$U" || return 1
	chown "$U:$U" "$T/run/user/$U"
	for p in $SVCS; do args+=("$T/$p"); done
	: >"$SVCLOG"
	"$PY" "$C/unixsvc.py" serve --log "$SVCLOG" "${args[@]}" >"$W/svc.ready" 2>"$W/svc.err" &
	PIDS+=($!)
	wait_for 5 grep -qs READY "$W/svc.ready" || { echo "stand-ins: $(cat "$W/svc.err")"; return 1; }
	return 0
}

# u_probe NAME ARGS...: unixsvc.py connect ARGS as nobody, no egressctl
u_probe() {
	jv "$(timeout 10 setpriv --reuid=$U --regid=$U --clear-groups -- "$PY" "$C/unixsvc.py" connect "$@" | tail -1)"
}

# u_egr TAG [EGRESSCTL OPTIONS --] ARGS...: the same confined (test build,
# defaults under $T), log in $W/TAG.log; P_* from its JSON line
u_egr() {
	local tag=$1
	shift
	local -a opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	EGRESSCTL=$EGRT egr "$tag" --test-unix-root "$T" --user "$U" --log "$W/$tag.log" "${opts[@]}" -- \
		"$PY" "$C/unixsvc.py" connect "$@"
	egr_json "$tag" || true
}

svc_hits() { grep -c . "$SVCLOG" 2>/dev/null || echo 0; }

# a_blocked NAME: the confined connect failed and the stand-in saw nothing
a_blocked() {
	if [ "$P_ok" = false ] && [ "$(svc_hits)" = "$HITS" ]; then ok "$1"; else
		fail "$1" "reached the service: $P_json (service log: $(tail -2 "$SVCLOG" | tr '\n' '|'))"
	fi
}

# ---------------------------------------------------------------------------

# 1. every default socket by its own name: reachable without egressctl,
#    EPERM under it, one denial line with the option, one record
test_direct() {
	local p n
	for p in $SVCS; do
		n=${p//\//_}
		u_probe "$T/$p"
		if [ "$P_ok" = true ] && [ "$P_data" = "svc $T/$p" ]; then ok "direct.$n.control"; else
			fail "direct.$n.control" "the stand-in is not reachable: $P_json"; fi
		HITS=$(svc_hits)
		u_egr "direct-$n" -- "$T/$p"
		a_blocked "direct.$n.blocked"
		a_eq "direct.$n.eperm" errno "$P_errno" EPERM
		a_grep "direct.$n.line" "$W/direct-$n.err" \
			"denied python3\[[0-9]+\] → unix:$(re "$T/$p") \(a local service that starts work outside the sandbox; --allow-unix $(re "$T/$p") allows it\)"
		a_jlog "direct.$n.record" "$W/direct-$n.log" source=bpf decision=deny "host=unix:$(re "$T/$p")" \
			"reason=a local service that starts work outside the sandbox \(--allow-unix $(re "$T/$p") allows it\)"
	done
	# the /var/run twin of every name is an entry too (the name check runs
	# before the lookup: no file needs to be there)
	u_egr direct-var -- "$T/var/run/docker.sock"
	a_eq direct.var_twin.eperm errno "$P_errno" EPERM
	a_grep direct.var_twin.named "$W/direct-var.err" "→ unix:$(re "$T")/var/run/docker.sock"
}

# 2. the detours: another name for the same socket. The programs see only
#    the name given; the mount namespace's masks hold for every name that
#    resolves into them (ECONNREFUSED: a file, not a socket, is there)
test_detours() {
	local holder name
	ln -s "$T/run/docker.sock" "$RW/docker.link"
	mkdir -p "$W/alias"
	mount --bind "$T/run" "$W/alias" || fail detours.alias.setup "cannot bind-mount $T/run"
	setpriv --reuid=$U --regid=$U --clear-groups -- sleep 60 &
	holder=$!
	PIDS+=("$holder")
	for name in relative symlink proc_root proc_self_root bind_alias user_relative; do
		case $name in
		relative) set -- docker.sock --chdir "$T/run" ;;
		symlink) set -- "$RW/docker.link" ;;
		proc_root) set -- "/proc/$holder/root$T/run/docker.sock" ;;
		proc_self_root) set -- "/proc/self/root$T/run/docker.sock" ;;
		bind_alias) set -- "$W/alias/docker.sock" ;;
		user_relative) set -- private --chdir "$T/run/user/$U/systemd" ;;
		esac
		u_probe "$@"
		if [ "$P_ok" = true ]; then ok "detours.$name.control"; else
			fail "detours.$name.control" "the detour does not reach the stand-in unconfined: $P_json"; fi
		HITS=$(svc_hits)
		u_egr "detour-$name" -- "$@"
		a_blocked "detours.$name.blocked"
		# proc_root: Landlock refuses the holder's /proc entries (EACCES);
		# the rest reach the mask
		case $name in
		proc_root) a_eq "detours.$name.errno" errno "$P_errno" EACCES ;;
		*) a_eq "detours.$name.errno" errno "$P_errno" ECONNREFUSED ;;
		esac
	done
	# with --allow-sudo the holder is not even there: CMD's PID namespace
	HITS=$(svc_hits)
	u_egr detour-proc-sudo --allow-sudo -- "/proc/$holder/root$T/run/docker.sock"
	a_blocked detours.proc_root_sudo.blocked
	a_eq detours.proc_root_sudo.errno errno "$P_errno" ENOENT
	# without the masks (only the name check, as the daemon's targets have
	# it) the relative name goes through: why the masks are needed
	umount "$W/alias"
	kill "$holder" 2>/dev/null
}

# 3. a hard link made in advance: only the socket's owner (or CAP_FOWNER)
#    may link a socket (fs.protected_hardlinks); a link made before the run
#    is a name no mask covers, so the run refuses to start
test_hardlink() {
	local r
	# (that is the host's fs.protected_hardlinks=1, systemd's default; the
	# kernel's own default 0 lets anyone link: then only the run's refusal
	# below stands between CMD and the socket)
	if [ "$(cat /proc/sys/fs/protected_hardlinks 2>/dev/null)" = 1 ]; then
		r=$(setpriv --reuid=$U --regid=$U --clear-groups -- ln "$T/run/docker.sock" "$RW/hl.sock" 2>&1)
		if [ ! -e "$RW/hl.sock" ]; then ok hardlink.nobody_cannot; else
			fail hardlink.nobody_cannot "nobody linked a root-owned socket: $r"; fi
	else
		note "hardlink.nobody_cannot skipped: fs.protected_hardlinks=$(cat /proc/sys/fs/protected_hardlinks 2>/dev/null) on this host"
	fi
	ln "$T/run/docker.sock" "$T/hl.sock" || { fail hardlink.setup "cannot link as root"; return; }
	u_probe "$T/hl.sock"
	if [ "$P_ok" = true ]; then ok hardlink.control; else fail hardlink.control "$P_json"; fi
	HITS=$(svc_hits)
	u_egr hardlink -- "$T/hl.sock"
	a_rc hardlink.refused 125 hardlink
	a_grep hardlink.said "$W/hardlink.err" "$(re "$T/run/docker.sock") has 1 other hard link\(s\).*--allow-unix"
	a_eq hardlink.not_reached hits "$(svc_hits)" "$HITS"
	rm -f "$T/hl.sock"
	u_egr hardlink-gone -- "$T/hl.sock"
	a_eq hardlink.gone.starts errno "$P_errno" ENOENT
}

# 4. --allow-unix lets exactly that socket through, by any name;
#    --deny-unix adds one
test_allow() {
	u_egr allow --allow-unix "$T/run/docker.sock" -- "$T/run/docker.sock"
	a_eq allow.direct data "$P_data" "svc $T/run/docker.sock"
	u_egr allow-rel --allow-unix "$T/run/docker.sock" -- docker.sock --chdir "$T/run"
	a_eq allow.relative data "$P_data" "svc $T/run/docker.sock"
	HITS=$(svc_hits)
	u_egr allow-other --allow-unix "$T/run/docker.sock" -- "$T/run/podman/podman.sock"
	a_blocked allow.others_stay
	# one user's session sockets out of the "every user" entry
	u_egr allow-user --allow-unix "$T/run/user/$U/systemd/private" -- "$T/run/user/$U/systemd/private"
	a_eq allow.user_entry data "$P_data" "svc $T/run/user/$U/systemd/private"
	HITS=$(svc_hits)
	u_egr deny-extra --deny-unix "$T/run/containerd/containerd.sock.extra" -- "$T/run/containerd/containerd.sock.extra"
	a_grep deny.extra.line "$W/deny-extra.err" "--allow-unix $(re "$T/run/containerd/containerd.sock.extra") allows it"
}

# 5. the D-Bus session bus: a dbus-daemon of our own, nobody's, at the
#    session bus's place. dbus-send and busctl --user reach it unconfined
#    and not confined. systemd --user cannot run here (PID 1 is not
#    systemd): its private socket is covered by the stand-in of test_direct
dbus_start() {
	local addr=$1 out=$2 i
	setpriv --reuid=$U --regid=$U --clear-groups -- dbus-daemon --session --nofork \
		--address="unix:path=$addr" --print-address >"$out" 2>"$out.err" &
	PIDS+=($!)
	for i in $(seq 100); do [ -S "$addr" ] && grep -q . "$out" && return 0; sleep 0.05; done
	fail dbus.start "dbus-daemon did not start: $(head -c 300 "$out.err")"
	return 1
}

test_dbus() {
	local bus=$T/run/user/$U/bus pid1
	pid1=$(cat /proc/1/comm)
	note "PID 1 is '$pid1'$([ "$pid1" != systemd ] && echo ', not systemd: no systemd --user here (systemd-run --user cannot run); its socket is the stand-in run/user/UID/systemd/private')"
	dbus_start "$bus" "$W/dbus.addr" || return
	local -a env=(env DBUS_SESSION_BUS_ADDRESS="unix:path=$bus" XDG_RUNTIME_DIR="$T/run/user/$U")
	if setpriv --reuid=$U --regid=$U --clear-groups -- "${env[@]}" dbus-send --session --print-reply \
		--dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames >"$W/dbus.ctl" 2>&1; then
		ok dbus.send.control; else fail dbus.send.control "$(head -c 300 "$W/dbus.ctl")"; fi
	if setpriv --reuid=$U --regid=$U --clear-groups -- "${env[@]}" busctl --user list --no-pager \
		>"$W/busctl.ctl" 2>&1; then ok dbus.busctl.control; else
		fail dbus.busctl.control "$(head -c 300 "$W/busctl.ctl")"; fi
	EGRESSCTL=$EGRT egr dbus-send --test-unix-root "$T" --user $U --log "$W/dbus-send.log" -- "${env[@]}" \
		dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames
	a_rc dbus.send.refused 1 dbus-send
	a_grep dbus.send.line "$W/dbus-send.err" "denied dbus-send\[[0-9]+\] → unix:$(re "$bus") \(.*--allow-unix $(re "$bus") allows it\)"
	a_jlog dbus.send.record "$W/dbus-send.log" source=bpf decision=deny "host=unix:$(re "$bus")"
	EGRESSCTL=$EGRT egr dbus-busctl --test-unix-root "$T" --user $U -- "${env[@]}" \
		busctl --user call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ListNames
	a_rc dbus.busctl.refused 1 dbus-busctl
	a_grep dbus.busctl.line "$W/dbus-busctl.err" "denied busctl\[[0-9]+\] → unix:$(re "$bus")"
	# by a relative name: the mask (busctl knows no relative address; dbus-send does)
	EGRESSCTL=$EGRT egr dbus-rel --test-unix-root "$T" --user $U -- sh -c \
		"cd $T/run/user/$U && exec dbus-send --bus=unix:path=bus --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames"
	a_rc dbus.relative.refused 1 dbus-rel
	EGRESSCTL=$EGRT egr dbus-allow --test-unix-root "$T" --allow-unix "$bus" --user $U -- "${env[@]}" \
		dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames
	a_rc dbus.allowed 0 dbus-allow
}

# 6. a daemon target (its processes not started by egressctl, no mount
#    namespace): the name check holds, a relative name does not -- the
#    difference README and docs/security-sandbox.md state
test_daemon() {
	local cg=$CGROOT/egr-e2e-$$-ud i pid
	mkdir -p "$cg"
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/ud.ctl" --cgroup "$cg" \
		--deny-unix "$T/run/docker.sock" --log "$W/ud.log" >"$W/ud.dout" 2>&1 </dev/null &
	pid=$!
	PIDS+=("$pid")
	for i in $(seq 300); do grep -qs "ready:" "$W/ud.dout" && break; sleep 0.05; done
	grep -qs "ready:" "$W/ud.dout" || { fail daemon.ready "$(tail -c 400 "$W/ud.dout" | tr '\n' '|')"; return; }
	u_cg() {
		jv "$(timeout 10 nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"' \
			"$cg" "$PY" "$C/unixsvc.py" connect "$@" | tail -1)"
	}
	HITS=$(svc_hits)
	u_cg "$T/run/docker.sock"
	a_blocked daemon.direct.blocked
	a_eq daemon.direct.eperm errno "$P_errno" EPERM
	a_grep daemon.direct.line "$W/ud.dout" "denied python3\[[0-9]+\] → unix:$(re "$T/run/docker.sock") \(.*--allow-unix $(re "$T/run/docker.sock") allows it\)"
	a_jlog daemon.direct.record "$W/ud.log" source=bpf decision=deny "host=unix:$(re "$T/run/docker.sock")"
	u_cg docker.sock --chdir "$T/run"
	a_eq daemon.relative.not_held data "$P_data" "svc $T/run/docker.sock"
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# 7. the release build and the real default paths, in this run's mount
#    namespace: a tmpfs over /run/user with nobody's session bus and a
#    systemd --user stand-in in it
test_real() {
	local bus=/run/user/$U/bus rb=$EGRESSCTL
	[ -d /run/user ] || mkdir -p /run/user
	mount -t tmpfs -o mode=0755 egr-test /run/user || { fail real.setup "cannot mount a tmpfs on /run/user"; return; }
	REAL_MOUNTED=1
	mkdir -m 0700 "/run/user/$U" && chown "$U:$U" "/run/user/$U"
	dbus_start "$bus" "$W/dbus-real.addr" || return
	"$PY" "$C/unixsvc.py" serve --log "$SVCLOG" "/run/user/$U/systemd/private" >"$W/svc2.ready" 2>&1 &
	PIDS+=($!)
	wait_for 5 grep -qs READY "$W/svc2.ready"
	chown -R "$U:$U" "/run/user/$U/systemd"
	local -a env=(env DBUS_SESSION_BUS_ADDRESS="unix:path=$bus")
	EGRESSCTL=$rb egr real-bus --user $U -- "${env[@]}" \
		dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames
	a_rc real.bus.refused 1 real-bus
	a_grep real.bus.line "$W/real-bus.err" "→ unix:/run/user/$U/bus .*--allow-unix /run/user/$U/bus allows it"
	HITS=$(svc_hits)
	EGRESSCTL=$rb egr real-private --user $U -- "$PY" "$C/unixsvc.py" connect private --chdir "/run/user/$U/systemd"
	egr_json real-private || true
	a_blocked real.systemd_user.relative
	EGRESSCTL=$rb egr real-private2 --user $U -- "$PY" "$C/unixsvc.py" connect "/run/user/$U/systemd/private"
	egr_json real-private2 || true
	a_eq real.systemd_user.direct errno "$P_errno" EPERM
}

suite_main unix.sh unix_setup "ip nsenter setpriv unshare mount dbus-daemon dbus-send busctl timeout" "$@"
