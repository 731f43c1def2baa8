#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# The daemon as egressctl.service runs it: the unit's hardening
# (CapabilityBoundingSet=, NoNewPrivileges=, ProtectSystem=, ProtectHome=,
# PrivateTmp=, the writable paths, LimitNOFILE=) read from
# contrib/systemd/egressctl.service.in and built by hand, since PID 1 here
# is not systemd: a mount namespace of the daemon's own with every mount
# read-only but /proc, /sys, /dev and the writable paths, /home, /root and
# /run/user inaccessible, /tmp and /var/tmp private, then setpriv
# --bounding-set --no-new-privs. Under it the daemon attaches to test
# cgroups, confines their connections (the leak sensor sees nothing of a
# denied one), lists and ends what they had open, answers on its control
# socket, reloads, and opens its log anew when logrotate's snippet
# (contrib/logrotate.in) rotates it. Each capability of the unit's set is
# shown needed: without it, what needs it fails. systemd-analyze verify
# checks the unit where the tool exists, and its security exposure is
# printed in a note.
#
#   tests/e2e/service.sh build/egressctl        (as root; make e2e does this)
#   E2E_TESTS="hardened caps" ...    run only these test functions
#   E2E_KEEP=1 ...                   keep /tmp/egr-e2e-PID (logs, pcap)
#   SVC_CAPS=+bpf,+net_admin ...     test hardened with this bounding set
#                                    instead of the unit's (to measure one)
#
# The network, names and servers are audit.sh's (audit_net.sh), as in
# daemon.sh. The daemon's /run/egressctl and /var/log/egressctl are
# directories of this suite's, bound there in the suite's private mount
# namespace (the host's stay as they are); its configuration is in
# /run/egr-svc-PID (under ProtectSystem=strict and PrivateTmp= the daemon
# sees neither /tmp nor the suite's work directory).
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion, "# ..." notes, and
# as the last line "N passed, M failed". Exit 1 if any failed, 77 if not
# root.

set -u
if [ -z "${EGR_E2E_REAPER:-}" ] && [ "$(id -u)" = 0 ] && [ $# -ge 1 ]; then
	export EGR_E2E_REAPER=$$
	exec /usr/bin/python3 "$(dirname "$0")/clients/reaper.py" "$BASH" "$0" "$@"
fi
if [ "${EGR_E2E_MNTNS:-}" != $$ ] && [ "$(id -u)" = 0 ] && [ $# -ge 1 ] && command -v unshare >/dev/null; then
	export EGR_E2E_MNTNS=$$
	exec unshare --mount --propagation private "$BASH" "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/audit_net.sh"

UNIT_IN=$(cd "$E2E_SRC/../.." && pwd)/contrib/systemd/egressctl.service.in
LOGROTATE_IN=$(cd "$E2E_SRC/../.." && pwd)/contrib/logrotate.in
DEFAULT_POLICY=$(cd "$E2E_SRC/../.." && pwd)/contrib/default-policy.json
D=/run/egr-svc-$$		# the daemon's configuration (readable under its hardening)
MADE_DIRS=()			# host directories made as mount points, removed at exit

# the suite's own mounts and directories go after lib's cleanup
eval "svc_$(declare -f e2e_cleanup)"
e2e_cleanup() {
	local d
	svc_e2e_cleanup
	umount -l /run/egressctl /var/log/egressctl 2>/dev/null
	rm -rf --one-file-system "$D"
	for d in "${MADE_DIRS[@]}"; do rmdir "$d" 2>/dev/null; done
}

# ------------------------------------------------------------- the unit

# unit_get KEY: the values of KEY= in the unit, in order, space-separated
unit_get() { sed -n "s/^$1=//p" "$W/egressctl.service" | tr '\n' ' ' | sed 's/ *$//'; }

# unit_caps: the unit's CapabilityBoundingSet= as setpriv's list (+bpf,...)
unit_caps() {
	local c out=
	for c in $(unit_get CapabilityBoundingSet); do
		c=${c,,}
		out="$out,+${c#cap_}"
	done
	echo "${out#,}"
}

# unit_rw: the paths the unit makes writable: ReadWritePaths= (a "-" prefix:
# when it exists), RuntimeDirectory= under /run, LogsDirectory= under
# /var/log, StateDirectory= under /var/lib
unit_rw() {
	local p
	for p in $(unit_get ReadWritePaths); do echo "${p#-}"; done
	for p in $(unit_get RuntimeDirectory); do echo "/run/$p"; done
	for p in $(unit_get LogsDirectory); do echo "/var/log/$p"; done
	for p in $(unit_get StateDirectory); do echo "/var/lib/$p"; done
}

# The hardening, built by hand as systemd builds it for the unit; run as
# `harden.sh CMD...` by root, in a mount namespace of its own (slave) and the
# sandbox host's network namespace. H_CAPS (setpriv's list), H_NNP (yes or
# empty), H_PS (ProtectSystem=), H_PH (ProtectHome=), H_PT (PrivateTmp=),
# H_RW (the writable paths, space-separated), H_NOFILE (LimitNOFILE=).
write_harden() {
	cat >"$W/harden.sh" <<'EOF'
set -u
say() { echo "harden: $*" >&2; }
in_rw() {
	local p
	for p in $H_RW; do case $1 in "$p" | "$p"/*) return 0 ;; esac; done
	return 1
}
mounts() { awk '{ print $5 }' /proc/self/mountinfo | sed 's/\\040/ /g'; }
is_mount() { mounts | grep -qxF -- "$1"; }
# writable paths: a bind of each onto itself, kept writable below
for p in $H_RW; do
	[ -d "$p" ] || { say "no $p"; exit 126; }
	mount --bind "$p" "$p" || exit 126
done
case $H_PS in
strict) trees=/ ;;
full) trees="/usr /boot /efi /etc" ;;
yes | true) trees="/usr /boot /efi" ;;
"" | no | false) trees= ;;
*) say "ProtectSystem=$H_PS: not built here"; exit 126 ;;
esac
for t in $trees; do
	[ -d "$t" ] || continue
	is_mount "$t" || mount --bind "$t" "$t" || exit 126
	mounts | while IFS= read -r m; do
		case $m in "$t" | "${t%/}/"*) ;; *) continue ;; esac
		# strict leaves the API file systems as they are
		case $m in /proc | /proc/* | /sys | /sys/* | /dev | /dev/*) continue ;; esac
		in_rw "$m" && continue
		mount -o remount,bind,ro "$m" 2>/dev/null || say "cannot make $m read-only"
	done
done
case $H_PH in
yes | true | tmpfs)
	for h in /home /root /run/user; do
		[ -d "$h" ] && { mount -t tmpfs -o ro,mode=000,size=4k tmpfs "$h" || exit 126; }
	done ;;
read-only)
	for h in /home /root /run/user; do
		[ -d "$h" ] && { mount --bind "$h" "$h" && mount -o remount,bind,ro "$h" || exit 126; }
	done ;;
esac
case $H_PT in
yes | true)
	for t in /tmp /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs "$t" || exit 126; done ;;
esac
if [ -n "$H_NOFILE" ] && ! { ulimit -Hn "$H_NOFILE" && ulimit -Sn "$H_NOFILE"; } 2>/dev/null; then
	say "LimitNOFILE=$H_NOFILE: not here (hard limit $(ulimit -Hn): no CAP_SYS_RESOURCE?)"
fi
exec setpriv ${H_NNP:+--no-new-privs} --inh-caps=-all --bounding-set="-all${H_CAPS:+,$H_CAPS}" -- "$@"
EOF
}

# ------------------------------------------------------------- helpers

tcg() { echo "$CGROOT/egr-e2e-$$-$1"; }
mkcg() { mkdir -p "$(tcg "$1")"; }

# in_cg TAG KEY CMD...: CMD in the background in the sbx netns, inside
# target cgroup TAG, as nobody; its pid in CG_PID, output in $W/KEY.out
in_cg() {
	local tag=$1 key=$2
	shift 2
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"' \
		"$(tcg "$tag")" "$@" >"$W/$key.out" 2>"$W/$key.err" </dev/null &
	CG_PID=$!
	PIDS+=("$CG_PID")
}

# hrun CAPS NOFILE CMD...: CMD under the unit's hardening, with bounding
# set CAPS and LimitNOFILE NOFILE (empty: as it is), in the sandbox host's
# network namespace. It execs (each step does): run it in the background
# (`hrun ... &`, $! is then CMD's pid) or in a subshell.
hrun() {
	local caps=$1 nofile=$2
	shift 2
	exec nsenter --net="$NS_SBX" unshare --mount --propagation slave env \
		H_CAPS="$caps" H_NNP="$([ "$(unit_get NoNewPrivileges)" = yes ] && echo yes)" \
		H_PS="$(unit_get ProtectSystem)" H_PH="$(unit_get ProtectHome)" \
		H_PT="$(unit_get PrivateTmp)" H_RW="$(unit_rw | tr '\n' ' ')" H_NOFILE="$nofile" \
		"$BASH" "$W/harden.sh" "$@"
}

# hexec CMD...: CMD under the unit's hardening (as ExecReload=)
hexec() { (hrun "$(unit_caps)" "" "$@"); }

# hstart TAG CONFIG [CAPS]: the daemon under the unit's hardening (CAPS
# instead of its bounding set when given: "" for none), with CONFIG and
# the default control socket; waits until it says ready or exits. D_PID,
# output in $W/TAG.dout; status 1 when it did not come up.
hstart() {
	local tag=$1 cfg=$2 caps
	caps=${3-$(unit_caps)}
	: >"$W/$tag.dout"
	hrun "$caps" "$(unit_get LimitNOFILE)" "$SVC_EGR" daemon --config "$cfg" >>"$W/$tag.dout" 2>&1 </dev/null &
	D_PID=$!
	PIDS+=("$D_PID")
	wait_secs 20 d_up "$W/$tag.dout"
	grep -q "ready:" "$W/$tag.dout"
}
d_up() { grep -q "ready:" "$1" || ! kill -0 "$D_PID" 2>/dev/null; }

dstop() {
	kill -TERM "$D_PID" 2>/dev/null
	wait "$D_PID" 2>/dev/null
	D_RC=$?
}

# config NAME TARGETS-JSON: $D/NAME.json, the daemon's configuration
config() { printf '{"targets": [%s]}\n' "$2" >"$D/$1.json"; }

# target NAME TAG [JSON-KEYS]: one target of cgroup TAG, the shipped default
# policy (denies everything) and a.example.test allowed, its log in
# /var/log/egressctl/NAME.jsonl, the suite's resolver
target() {
	printf '{"name": "%s", "cgroup": "%s", "policy": "%s", "allow": ["a.example.test"], "log": "/var/log/egressctl/%s.jsonl", "dns_upstream": "%s"%s}' \
		"$1" "$(tcg "$2")" "$D/policy.json" "$1" "$INET_DNS" "${3:+, $3}"
}

# LOOP: curl in a loop, one HTTP code a line
LOOP='while :; do curl -s -o /dev/null -m 3 -w "%{http_code}\n" "$@"; sleep 0.2; done'

svc_setup() {
	local d
	audit_setup || return 1
	mkdir -m 0700 "$D" || return 1
	cp "$DEFAULT_POLICY" "$D/policy.json" && chmod 0644 "$D/policy.json"
	# the binary where the hardened daemon can see it: a checkout under
	# /tmp (a CI's clean clone) is hidden by PrivateTmp=
	mkdir -m 0755 "$D/bin" && cp "$EGRESSCTL" "$D/bin/egressctl" || return 1
	SVC_EGR=$D/bin/egressctl
	# the daemon's directories, the suite's own in this mount namespace
	for d in /run/egressctl /var/log/egressctl; do
		if [ ! -d "$d" ]; then
			mkdir -m 0700 "$d" || return 1
			MADE_DIRS+=("$d")
		fi
	done
	mkdir -m 0700 "$W/run.egr" && mkdir -m 0755 "$W/log.egr" || return 1
	mount --bind "$W/run.egr" /run/egressctl && mount --bind "$W/log.egr" /var/log/egressctl || return 1
	sed "s|@BINDIR@|$D/bin|g; s|@SYSCONFDIR@|/etc|g; s|@RUNSTATEDIR@|/run|g" "$UNIT_IN" >"$W/egressctl.service"
	sed "s|@BINDIR@|$D/bin|g; s|@SYSCONFDIR@|/etc|g; s|@RUNSTATEDIR@|/run|g" "$LOGROTATE_IN" >"$W/logrotate.conf"
	write_harden
}

# cap_mask LIST: the bitmask (hex, as /proc/PID/status) of setpriv's +cap list
cap_mask() {
	local c m=0 n
	for c in ${1//,/ }; do
		n=$(capsh --explain="cap_${c#+}" 2>/dev/null | sed -n '1s/^cap_[a-z_]* (\([0-9]*\)).*/\1/p')
		[ -n "$n" ] || { echo "unknown:$c"; return; }
		m=$((m | (1 << n)))
	done
	printf '%016x\n' "$m"
}

# ======================================================================
# The scenario: two targets under the unit's hardening (one keeps what it
# had open, one ends it), a denied host and an allowed one before and
# after the attach, the control socket, a reload, logrotate.
# ======================================================================

# scenario T CAPS: the daemon with bounding set CAPS; ok/fail lines T.*
scenario() {
	local t=$1 caps=$2 base pk st got want m n1
	mkcg "$t-keep"
	mkcg "$t-kill"
	# control: before the attach each target reaches the denied host
	in_cg "$t-keep" "$t-held" "$PY" "$C/longconn.py" banner "$A_BLOCKED" 22 --hold-for 120 --every 0.3
	local ph=$CG_PID
	in_cg "$t-kill" "$t-killed" "$PY" "$C/longconn.py" banner "$A_BLOCKED" 22 --hold-for 120 --every 0.3
	pk=$CG_PID
	in_cg "$t-keep" "$t-loop" sh -c "$LOOP" sh --noproxy '*' --resolve "blocked.test:80:$A_BLOCKED" "http://blocked.test/$t"
	wait_secs 10 grep -qs '^200' "$W/$t-loop.out"
	wait_secs 10 grep -qs '"new": "ok"' "$W/$t-held.out"
	wait_secs 10 grep -qs '"new": "ok"' "$W/$t-killed.out"
	a_grep "$t.control.reached" "$W/$t-loop.out" '^200$'
	a_grep "$t.control.held" "$W/$t-held.out" '"held": true'
	a_grep "$t.control.held_kill" "$W/$t-killed.out" '"held": true'
	sensor_saw "$t.control.sensor" "dst host $A_BLOCKED and tcp dst port 80"
	have_egr || return 0
	config "$t" "$(target keep "$t-keep"), $(target kill "$t-kill" '"kill_existing": true')"
	if ! hstart "$t" "$D/$t.json" "$caps"; then
		fail "$t.ready" "the daemon did not come up: $(tail -c 600 "$W/$t.dout" | tr '\n' '|')"
		return 1
	fi
	ok "$t.ready"
	grep '^harden:' "$W/$t.dout" | while read -r m; do note "$t: $m"; done
	# the restrictions are the daemon's
	st=/proc/$D_PID/status
	want=$(cap_mask "$caps")
	got="$(awk '/^CapBnd/ { print $2 }' "$st") $(awk '/^CapEff/ { print $2 }' "$st") $(awk '/^NoNewPrivs/ { print $2 }' "$st")"
	a_val "$t.restricted.caps" "CapBnd CapEff NoNewPrivs" "$got" "$want $want $([ "$(unit_get NoNewPrivileges)" = yes ] && echo 1 || echo 0)"
	m=$(mounts_not_ro "$D_PID")
	a_val "$t.restricted.readonly" "writable mounts outside /proc, /sys, /dev, /tmp, /var/tmp and $(unit_rw | tr '\n' ' ')" "${m:-none}" none
	got=$(for h in /home /root; do
		[ -d "$h" ] && echo "$h $(nsenter --target "$D_PID" --mount stat -c %a "$h") $(nsenter --target "$D_PID" --mount ls -A "$h" | wc -l)"
	done | tr '\n' ' ')
	a_val "$t.restricted.home" "/home and /root for the daemon: mode, entries" "$got" "(/home 0 0 )?/root 0 0 "
	a_val "$t.restricted.tmp" "the daemon's /tmp" "$(nsenter --target "$D_PID" --mount test -d "$W" && echo "sees $W" || echo private)" private
	# confined: the denied host answers 403 and sends nothing out, the
	# allowed one goes through; what was open is listed, or ended
	: >"$W/$t-loop.out"
	base=$(sensor_now "dst host $A_BLOCKED and tcp[tcpflags] & tcp-syn != 0")
	wait_secs 10 grep -qs '^403' "$W/$t-loop.out"
	sleep 1
	a_grep "$t.denied_403" "$W/$t-loop.out" '^403$'
	a_nogrep "$t.never_200" "$W/$t-loop.out" '^200$'
	sensor_none_since "$t.sensor_nothing" "$base" "dst host $A_BLOCKED and tcp[tcpflags] & tcp-syn != 0"
	in_cg "$t-keep" "$t-allowed" sh -c 'curl -s -o /dev/null -m 10 -w "%{http_code}\n" http://a.example.test/x; curl -sk -o /dev/null -m 10 -w "%{http_code}\n" https://a.example.test/x'
	wait_secs 25 test "$(grep -c . "$W/$t-allowed.out" 2>/dev/null)" = 2
	a_val "$t.allowed" "http and https to a.example.test" "$(tr '\n' ' ' <"$W/$t-allowed.out")" "200 200 "
	a_jlog "$t.log.deny" /var/log/egressctl/keep.jsonl decision=deny host=blocked.test
	a_jlog "$t.log.allow" /var/log/egressctl/keep.jsonl decision=allow host=a.example.test
	a_jlog "$t.preexisting.listed" /var/log/egressctl/keep.jsonl event=pre-existing source=daemon \
		ip="$(re "$A_BLOCKED")" port=22 pid="$ph"
	a_jlog "$t.preexisting.killed" /var/log/egressctl/kill.jsonl event=pre-existing-killed source=daemon \
		ip="$(re "$A_BLOCKED")" port=22 pid="$pk"
	wait_secs 5 grep -qs '"step": "echo"' "$W/$t-killed.out"
	a_grep "$t.preexisting.ended" "$W/$t-killed.out" '"errno": "(ECONNABORTED|ECONNRESET|EPIPE|EOF)", "step": "echo"'
	# the control socket (the default path), a runtime rule, a reload
	timeout 20 "$EGRESSCTL" status -j >"$W/$t.status" 2>&1
	a_val "$t.control.status" "targets in egressctl status -j" "$("$PY" -c '
import json, sys
print(" ".join(sorted(e["daemon"]["name"] for e in json.load(open(sys.argv[1])) if e.get("daemon"))))' "$W/$t.status" 2>&1)" "keep kill"
	timeout 20 "$EGRESSCTL" allow --cgroup keep --for 5m blocked.test >"$W/$t.allow" 2>&1
	a_val "$t.control.allow" "egressctl allow --cgroup keep blocked.test: exit status ($(head -c 300 "$W/$t.allow"))" "$?" 0
	: >"$W/$t-loop.out"
	wait_secs 10 grep -qs '^200' "$W/$t-loop.out"
	a_grep "$t.control.allowed_now" "$W/$t-loop.out" '^200$'
	# the unit's ExecReload (egressctl reload, under the same hardening),
	# then the daemon's own SIGHUP
	hexec "$SVC_EGR" reload >"$W/$t.reload" 2>&1
	a_val "$t.reload.execreload" "egressctl reload under the hardening: exit status ($(head -c 300 "$W/$t.reload"))" "$?" 0
	a_jlog "$t.reload.asked" /var/log/egressctl/keep.jsonl event=reload-asked
	kill -HUP "$D_PID"
	wait_secs 10 test "$(grep -c 'egressctl: reloaded' "$W/$t.dout")" -ge 2
	a_val "$t.reload.sighup" "reloads the daemon said" "$(grep -c 'egressctl: reloaded' "$W/$t.dout")" 2
	# logrotate's snippet: the decision log renamed, the daemon (found by
	# the pid file the init script writes) opens it anew
	echo "$D_PID" >/run/egressctl/daemon.pid
	logrotate -f -s "$W/$t.lr.state" "$W/logrotate.conf" >"$W/$t.lr.out" 2>&1
	a_val "$t.logrotate.rotated" "keep.jsonl.1 and kill.jsonl.1" \
		"$([ -s /var/log/egressctl/keep.jsonl.1 ] && [ -s /var/log/egressctl/kill.jsonl.1 ] && echo yes)" yes
	n1=$(grep -c . /var/log/egressctl/keep.jsonl.1)
	in_cg "$t-keep" "$t-after" curl -s -o /dev/null -m 10 -w '%{http_code}\n' http://a.example.test/after-rotate
	wait_secs 15 grep -qs . "$W/$t-after.out"
	wait_secs 5 test -s /var/log/egressctl/keep.jsonl
	a_jlog "$t.logrotate.reopened" /var/log/egressctl/keep.jsonl decision=allow host=a.example.test
	a_val "$t.logrotate.old_left" "lines added to keep.jsonl.1" "$(($(grep -c . /var/log/egressctl/keep.jsonl.1) - n1))" 0
	rm -f /run/egressctl/daemon.pid
	dstop
	a_val "$t.stopped" "exit status after TERM" "$D_RC" 0
	# fail closed: the pins the daemon made in its own mount namespace are
	# the host's (bpffs is shared), so its targets stay confined
	a_val "$t.pins_outlive" "pins of both targets seen from outside" \
		"$(for c in keep kill; do [ -e "$PIN_ROOT/$(stat -c %i "$(tcg "$t-$c")")/map_conns" ] && echo -n "$c "; done)" "keep kill "
	: >"$W/$t-loop.out"
	base=$(sensor_now "dst host $A_BLOCKED and tcp[tcpflags] & tcp-syn != 0")
	wait_secs 10 grep -qs . "$W/$t-loop.out"
	sleep 1
	a_grep "$t.stopped.refused" "$W/$t-loop.out" '^000$'
	a_nogrep "$t.stopped.never_200" "$W/$t-loop.out" '^200$'
	sensor_none_since "$t.stopped.sensor_nothing" "$base" "dst host $A_BLOCKED and tcp[tcpflags] & tcp-syn != 0"
	"$EGRESSCTL" detach --cgroup "$(tcg "$t-keep")" >/dev/null 2>&1
	"$EGRESSCTL" detach --cgroup "$(tcg "$t-kill")" >/dev/null 2>&1
	kill "$ph" "$pk" 2>/dev/null
}

# mounts_not_ro PID: the mounts of PID's namespace that are writable but
# should not be (outside /proc, /sys, /dev, the private /tmp and /var/tmp
# and the unit's writable paths), one a line
mounts_not_ro() {
	local rw
	rw=$(unit_rw | tr '\n' ' ')
	# the last mount at each path is the one the path reaches (a mount
	# stacked on another hides it)
	awk -v rw="$rw" '
		BEGIN { n = split(rw, p, " ") }
		{ m = $5; gsub(/\\040/, " ", m); opts[m] = $6; if (!(m in seen)) { seen[m] = 1; order[++k] = m } }
		END {
			for (j = 1; j <= k; j++) {
				m = order[j]
				if (m ~ /^\/(proc|sys|dev)(\/|$)/ || m == "/tmp" || m == "/var/tmp") continue
				skip = 0
				for (i = 1; i <= n; i++) if (m == p[i] || index(m, p[i] "/") == 1) skip = 1
				if (!skip && ("," opts[m] ",") !~ /,ro,/) print m
			}
		}' "/proc/$1/mountinfo"
}

test_hardened() {
	scenario hardened "${SVC_CAPS-$(unit_caps)}"
}

# ======================================================================
# Each capability of the unit's bounding set is needed. One target (as a
# CI runner with a container): nobody's connection open before the attach,
# a process in a network namespace of its own, and --containers with an
# address no interface has. With the unit's set it all works; without each
# capability, what needs it fails.
# ======================================================================

# capsrun TAG CAPS: the daemon with bounding set CAPS on a fresh target
# cgroup TAG (as above; containers address 192.0.2.N, N counting up);
# leaves $W/TAG.dout, $W/TAG.status (status -j), $W/TAG.allow (an
# allow's output and status), CR_READY (yes or empty), CR_PID (the
# connection's holder)
CAPSN=70
capsrun() {
	local t=$1 caps=$2 ns=egr-svc-$$-$1 hold
	CAPSN=$((CAPSN + 1))
	CR_READY=
	mkcg "$t"
	ip netns add "$ns" && EXTRA_NETNS+=("$ns")
	ip -n "$ns" link set lo up
	in_cg "$t" "$t-held" "$PY" "$C/longconn.py" banner "$A_BLOCKED" 22 --hold-for 60 --every 0.3
	CR_PID=$CG_PID
	hold=$CG_PID
	nsenter --net="/run/netns/$ns" sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- sleep 60' \
		"$(tcg "$t")" </dev/null >/dev/null 2>&1 &
	PIDS+=($!)
	local other=$!
	wait_secs 10 grep -qs '"held": true' "$W/$t-held.out"
	config "$t" "$(target caps "$t" "\"containers\": \"192.0.2.$CAPSN\"")"
	hstart "$t" "$D/$t.json" "$caps" && CR_READY=yes
	if [ -n "$CR_READY" ]; then
		timeout 20 "$EGRESSCTL" status -j >"$W/$t.status" 2>&1
		timeout 20 "$EGRESSCTL" allow --cgroup caps --for 1m c.example.test >"$W/$t.allow" 2>&1
		echo "exit $?" >>"$W/$t.allow"
	fi
	dstop
	"$EGRESSCTL" detach --cgroup "$(tcg "$t")" >/dev/null 2>&1
	kill "$hold" "$other" 2>/dev/null
	mv /var/log/egressctl/caps.jsonl "$W/$t.jlog" 2>/dev/null
}

# without LIST CAP: LIST (setpriv's +a,+b) less CAP
without() { sed "s/\(^\|,\)$2\(,\|$\)/\1/; s/,,/,/; s/^,//; s/,$//" <<<"$1"; }

test_caps() {
	local set c t rest
	set=$(unit_caps)
	[ -n "$set" ] || { fail caps.unit "egressctl.service has no CapabilityBoundingSet="; return; }
	note "the unit's bounding set: $set"
	# the control: the unit's set
	capsrun caps-all "$set"
	a_val caps.all.ready "the daemon with the unit's set" "${CR_READY:-$(tail -c 300 "$W/caps-all.dout" | tr '\n' '|')}" yes
	a_jlog caps.all.netns "$W/caps-all.jlog" event=attach "reason=attached to .*"
	a_grep caps.all.address "$W/caps-all.dout" "--containers 192\\.0\\.2\\.$CAPSN: no interface had it .*: added 192\\.0\\.2\\.$CAPSN/32 to lo"
	a_nogrep caps.all.listed_every_netns "$W/caps-all.dout" 'cannot list the connections'
	a_jlog caps.all.holder "$W/caps-all.jlog" event=pre-existing pid="$CR_PID"
	a_grep caps.all.control "$W/caps-all.allow" '^exit 0$'
	for c in ${set//,/ }; do
		c=${c#+}
		t=caps-no-$c
		rest=$(without "$set" "+$c")
		capsrun "$t" "$rest"
		case $c in
		sys_admin)
			# the BPF programs (CAP_SYS_ADMIN covers CAP_BPF and CAP_PERFMON)
			a_val caps.sys_admin.bpf "without CAP_SYS_ADMIN: ready" "${CR_READY:-no}" no
			a_grep caps.sys_admin.said "$W/$t.dout" 'Operation not permitted|EPERM'
			# and with CAP_BPF and CAP_PERFMON instead: setns() into the
			# network namespace of a target's process is refused, and
			# what the target had open goes unlisted (unkilled with
			# kill_existing)
			t="caps-bpf-not-sys_admin"
			capsrun "$t" "$rest,+bpf,+perfmon"
			a_val caps.sys_admin.setns "with CAP_BPF, CAP_PERFMON instead: ready" "${CR_READY:-no}" yes
			a_grep caps.sys_admin.setns_said "$W/$t.dout" 'cannot list the connections open before the attach: cannot enter network namespace [0-9]+: Operation not permitted'
			a_jlog_none caps.sys_admin.setns_unlisted "$W/$t.jlog" event=pre-existing port=22
			;;
		net_admin)
			# the containers' address added to lo
			a_val caps.net_admin.address "without CAP_NET_ADMIN: ready" "${CR_READY:-no}" no
			a_grep caps.net_admin.said "$W/$t.dout" '192\.0\.2\.[0-9]+.*(Operation not permitted|EPERM)'
			;;
		sys_ptrace)
			# who asks on the control socket: root with more capabilities
			# than the daemon (the kernel's ptrace access check on /proc)
			a_val caps.sys_ptrace.ready "without CAP_SYS_PTRACE: ready" "${CR_READY:-no}" yes
			a_grep caps.sys_ptrace.control "$W/$t.allow" 'refused .*cannot read its user namespace: Permission denied'
			;;
		dac_read_search)
			# /proc/PID/fd of another user's process: who holds the
			# connection that was open before the attach
			a_val caps.dac_read_search.ready "without CAP_DAC_READ_SEARCH: ready" "${CR_READY:-no}" yes
			a_jlog caps.dac_read_search.listed "$W/$t.jlog" event=pre-existing
			a_jlog_none caps.dac_read_search.no_holder "$W/$t.jlog" event=pre-existing pid="$CR_PID"
			;;
		*)
			fail "caps.$c" "no check of what CAP_${c^^} is for here: add one, and its row in docs/operations.md"
			;;
		esac
	done
}

# ======================================================================
# The unit: its hardening is there (a line taken out fails here, as the
# measurements above would stop measuring it), systemd-analyze verify
# passes where the tool exists, and its security exposure is printed.
# ======================================================================
test_unit() {
	local k v out
	for k in CapabilityBoundingSet NoNewPrivileges ProtectSystem ProtectHome PrivateTmp Wants After; do
		v=$(unit_get "$k")
		case $k:$v in
		CapabilityBoundingSet:?* | NoNewPrivileges:yes | ProtectSystem:strict | ProtectHome:yes | \
			PrivateTmp:yes | Wants:*network-online.target* | After:*network-online.target*)
			ok "unit.$k" ;;
		*) fail "unit.$k" "egressctl.service: $k=${v:-(none)}" ;;
		esac
	done
	if ! command -v systemd-analyze >/dev/null; then
		note "unit.verify: no systemd-analyze (the systemd package) here: skipped"
		return
	fi
	# the binary of ExecStart is the one under test; man pages may not be
	# installed in a build tree
	if out=$(systemd-analyze verify --man=no "$W/egressctl.service" 2>&1) && [ -z "$out" ]; then
		ok unit.verify
	else
		fail unit.verify "systemd-analyze verify: $out"
	fi
	out=$(systemd-analyze security --offline=true "$W/egressctl.service" 2>&1)
	note "systemd-analyze security: $(grep 'Overall exposure' <<<"$out" | sed 's/^→ //')"
	grep '^✗' <<<"$out" | awk '{ print $2 }' | tr '\n' ' ' | fold -w 150 -s | while read -r l; do
		note "  not set: $l"
	done
}

# ======================================================================
# ProtectSystem=strict: a target whose log is outside the unit's writable
# paths (here in /run, read-only for the daemon) stops the daemon at start,
# naming the file; in /var/log/egressctl it is written (test hardened).
# ======================================================================
test_readonly_log() {
	local t=rolog
	mkcg "$t"
	printf '{"targets": [{"name": "ro", "cgroup": "%s", "allow": ["a.example.test"], "log": "%s"}]}\n' \
		"$(tcg "$t")" "$D/$t.jsonl" >"$D/$t.json"
	hstart "$t" "$D/$t.json" && CR_READY=yes || CR_READY=
	a_val "$t.refused" "ready with its log in $D" "${CR_READY:-no}" no
	wait_secs 10 sh -c "! kill -0 $D_PID 2>/dev/null"
	a_grep "$t.said" "$W/$t.dout" "$(re "$D/$t.jsonl").*Read-only file system"
	a_val "$t.no_file" "$D/$t.jsonl" "$([ -e "$D/$t.jsonl" ] && echo exists || echo none)" none
	dstop
	"$EGRESSCTL" detach --cgroup "$(tcg "$t")" >/dev/null 2>&1
}

ALL_TESTS="unit hardened caps readonly_log"

suite_main service.sh svc_setup "ip nsenter setpriv unshare mount capsh logrotate tcpdump ss curl dig dnsmasq openssl timeout" "$@"
