# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2034 # variables used by run.sh, which sources this file
# Library of the egressctl end-to-end suite: test network, servers, leak
# sensor, egressctl/tlisten runners, assertions, cleanup, and the re-exec
# every suite starts with (e2e_reexec).  Sourced by every suite; the test
# network's drawing is in docs/testing.md.  Everything created here carries
# the suite's pid ($$) in its name and is removed by e2e_cleanup (EXIT trap),
# by id/pid, even when a test fails.

PY=/usr/bin/python3	# the root PATH may hold a pyenv python nobody cannot run
E2E_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# e2e_reexec [--mntns] "$@": what a suite runs first, right after sourcing
# this file, with its own arguments. As root and given EGRESSCTL, the suite
# execs itself again under clients/reaper.py, a child subreaper, so that
# orphans of the run (confined processes of a SIGKILLed egressctl,
# double-forked grandchildren) are reaped and at the end killed by pid,
# not left to PID 1; with --mntns, once more in a private mount namespace
# (unshare --mount --propagation private), so that what the suite mounts
# over the host's files (resolv.conf, sudoers) is this run's only, while
# cgroupfs and bpffs stay the host's (the same superblocks). Each exec is
# marked in the environment (EGR_E2E_REAPER; EGR_E2E_MNTNS, the pid it
# runs as) and happens once; the new process sources this file afresh
# (its $$ is another under the reaper), so nothing set before the exec
# counts. Returns when there is nothing left to do.
e2e_reexec() {
	local mntns=
	if [ "${1:-}" = --mntns ]; then
		mntns=1
		shift
	fi
	[ "$(id -u)" = 0 ] && [ $# -ge 1 ] || return 0
	if [ -z "${EGR_E2E_REAPER:-}" ]; then
		export EGR_E2E_REAPER=$$
		exec "$PY" "$E2E_SRC/clients/reaper.py" "$BASH" "$0" "$@"
	fi
	if [ -n "$mntns" ] && [ "${EGR_E2E_MNTNS:-}" != $$ ] && command -v unshare >/dev/null; then
		export EGR_E2E_MNTNS=$$
		exec unshare --mount --propagation private "$BASH" "$0" "$@"
	fi
}

# e2e_private_mntns: true in the private mount namespace that e2e_reexec
# --mntns made for this run, not the host's: only there may a suite mount
# over a host file.
e2e_private_mntns() {
	[ "${EGR_E2E_MNTNS:-}" = $$ ] && [ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/$PPID/ns/mnt)" ]
}

SBX=egr-sbx-$$
INET=egr-inet-$$
NS_SBX=/run/netns/$SBX
NS_INET=/run/netns/$INET
W=/tmp/egr-e2e-$$		# work dir: logs, pcap, go files (0755)
RW=$W/rw			# writable by the confined user (nobody)
C=$W/clients			# copies of clients/, readable by nobody
PCAP=$W/sensor.pcap
SBX_IF="vs"		# sandbox side of the veth
INET_IF="vi"		# "internet" side of the veth (the sensor listens here)
DNS_PORT=5353			# DNS listener in the sbx netns (--dns-port)
LO_PORT=5432			# loopback "host service" outside the cgroup
ABS_NAME=egr-e2e-$$-abs		# abstract unix stream listener (sbx netns)
ABSD_NAME=egr-e2e-$$-absd	# abstract unix datagram socket
INET_ANSWER=203.0.113.99	# what the "internet" DNS server answers
SBX_ANSWER=192.0.2.53		# what the suite's DNS listener answers
PIN_ROOT=/sys/fs/bpf/egressctl
CG_PREFIX=e2e-$$		# --cgroup NAMEs: <mnt>/egressctl/e2e-$$-TAG

PASS=0
FAILED=0
A4N=0		# address allocators: one fresh destination per attempt
A6N=0
PORTN=0		# tlisten port allocator
MARKN=0		# sensor sync marker ports
PIDS=()		# every background process we started, killed at exit
EXTRA_NETNS=()	# network namespaces a suite made besides SBX and INET, removed at exit

# ---------------------------------------------------------------- results

ok() { echo "ok $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
note() { echo "# $*"; }

# expect NAME REASON CMD...: ok NAME if CMD succeeds, else FAIL NAME: REASON
expect() {
	local name=$1 reason=$2
	shift 2
	if "$@"; then ok "$name"; else fail "$name" "$reason"; fi
}

# ------------------------------------------------------------ JSON results

# jv JSON: sets P_ok P_errno P_peer P_data P_pid P_cg P_step ... (null -> "")
# from one probe line; P_json keeps the raw line for messages.
jv() {
	local line=$1
	unset P_ok P_errno P_peer P_data P_pid P_cg P_step P_source P_parent_pid P_recv_errno
	P_json=$line
	eval "$("$PY" - "$line" <<'EOF'
import json, shlex, sys
try:
    d = json.loads(sys.argv[1])
except ValueError:
    d = {"ok": False, "errno": "NOJSON"}
for k, v in d.items():
    if isinstance(v, bool):
        v = "true" if v else "false"
    elif v is None:
        v = ""
    elif not isinstance(v, str):
        v = json.dumps(v)
    if k.isidentifier():
        print("P_%s=%s" % (k, shlex.quote(v)))
EOF
)"
}

# read_probe FILE: the JSON lines of a probe (clients/probe.py,
# rootprobe.py) that name themselves, as R[name]="ok errno data"
declare -A R
read_probe() {
	local line n
	R=()
	while read -r line; do
		jv "$line"
		n=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["name"])' "$line" 2>/dev/null) || continue
		R[$n]="$P_ok ${P_errno:-} $(printf '%s' "${P_data:-}" | head -c 120 | tr '\n' ' ')"
	done < <(grep '^{' "$1" 2>/dev/null)
}

P_ok="" P_errno="" P_peer="" P_data="" P_pid="" P_cg="" P_source="" P_parent_pid="" P_json=""

# nth_json FILE [N]: the Nth (default 1) line of FILE that looks like JSON
nth_json() { grep '^{' "$1" 2>/dev/null | sed -n "${2:-1}p"; }

# ------------------------------------------------------------- allocators

new4() { A4N=$((A4N + 1)); printf -v "$1" '198.51.100.%d' "$A4N"; }
new6() { A6N=$((A6N + 1)); printf -v "$1" '2001:db8:2::%x' "$A6N"; }
new_port() { PORTN=$((PORTN + 1)); printf -v "$1" '%d' $((15000 + PORTN)); }

# ---------------------------------------------------------- namespaces

in_sbx() { nsenter --net="$NS_SBX" "$@"; }
in_inet() { nsenter --net="$NS_INET" "$@"; }
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

# probe_root ARGS / probe_nobody ARGS: run the probe OUTSIDE egressctl in
# the sbx netns (the control half of every vector); prints its JSON line.
probe_root() { timeout -k 1 20 nsenter --net="$NS_SBX" "$PY" "$C/probe.py" "$@" | grep '^{' | tail -1; }
probe_nobody() {
	timeout -k 1 20 nsenter --net="$NS_SBX" setpriv --reuid=65534 --regid=65534 \
		--clear-groups -- "$PY" "$C/probe.py" "$@" | grep '^{' | tail -1
}
PROBE="$PY $W/clients/probe.py"	# for CMDs under egressctl: in sh -c strings
PROBE_ARGV=("$PY" "$W/clients/probe.py")	# ... and as argv

cgroup2_mount() {
	# fstype cgroup2 from mountinfo; /sys/fs/cgroup preferred when it is cgroup2
	awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
		/proc/self/mountinfo | sed 's/\\040/ /g' | awk '$0 == "/sys/fs/cgroup" { f = $0 } NR == 1 { first = $0 } END { print (f != "" ? f : first) }'
}

wait_for() {	# wait_for SECONDS CMD...: poll CMD every 50 ms, up to SECONDS
	local i lim=$((20 * $1))
	shift
	for ((i = 0; i < lim; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}

# wait_secs SECONDS CMD...: poll CMD every 0.1 s for SECONDS of wall-clock
# time (wait_for counts polls: slow CMDs -- a bpftool dump -- stretch it)
wait_secs() {
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000))
	shift
	until "$@"; do
		[ "${EPOCHREALTIME/./}" -ge "$end" ] && return 1
		sleep 0.1
	done
}

sbx_listening() { in_sbx ss -Hltn "sport = :$1" | grep -q LISTEN; }
inet_listening() { in_inet ss -Hltn "sport = :$1" | grep -q LISTEN; }

net_setup() {
	ip netns add "$SBX" && ip netns add "$INET" || return 1
	ip -n "$SBX" link add "$SBX_IF" type veth peer name "$INET_IF" netns "$INET" || return 1
	ip -n "$SBX" link set lo up
	ip -n "$INET" link set lo up
	ip -n "$SBX" addr add 198.18.0.2/24 dev "$SBX_IF"
	ip -n "$SBX" addr add 2001:db8:1::2/64 dev "$SBX_IF" nodad
	ip -n "$INET" addr add 198.18.0.1/24 dev "$INET_IF"
	ip -n "$INET" addr add 2001:db8:1::1/64 dev "$INET_IF" nodad
	ip -n "$SBX" link set "$SBX_IF" up
	ip -n "$INET" link set "$INET_IF" up
	ip -n "$SBX" route add default via 198.18.0.1
	ip -n "$SBX" -6 route add default via 2001:db8:1::1
	# The "internet" owns whole test ranges (AnyIP): every attempt gets its
	# own destination address, so the sensor tells attempts apart by address.
	ip -n "$INET" route add local 198.51.100.0/24 dev lo
	ip -n "$INET" route add local 203.0.113.0/24 dev lo
	ip -n "$INET" -6 route add local 2001:db8:2::/64 dev lo
	in_sbx sysctl -qw net.ipv4.ping_group_range="0 2147483647" net.ipv4.tcp_fastopen=1 \
		net.mptcp.enabled=1 || return 1
	in_inet sysctl -qw net.ipv4.tcp_fastopen=3 net.ipv4.icmp_ratelimit=0 \
		net.ipv6.icmp.ratelimit=0 || return 1
	# warm the neighbour entries both ways (from the sbx host, as root, no cgroup)
	in_sbx ping -c1 -W2 198.18.0.1 >/dev/null 2>&1
	in_sbx ping -c1 -W2 2001:db8:1::1 >/dev/null 2>&1
	return 0
}

servers_setup() {
	local i
	# started with nsenter directly (it execs): $! is the server itself, so
	# the EXIT trap can kill and reap it by pid
	nsenter --net="$NS_INET" "$PY" "$C/servers.py" inet --log "$W/inet.log" --answer "$INET_ANSWER" \
		--tcp-ports 7,22,53,80,443,7000-7031 >"$W/inet.ready" 2>"$W/inet.err" &
	PIDS+=($!)
	nsenter --net="$NS_SBX" "$PY" "$C/servers.py" sbx --log "$W/sbx.log" --answer "$SBX_ANSWER" \
		--dns-port "$DNS_PORT" --lo-port "$LO_PORT" --abstract "$ABS_NAME" \
		--abstract-dgram "$ABSD_NAME" --unix "$W/fs.sock" --unix-dgram "$W/fsd.sock" \
		>"$W/sbx.ready" 2>"$W/sbx.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/inet.ready" 2>/dev/null && grep -q READY "$W/sbx.ready" 2>/dev/null && break
		sleep 0.05
	done
	grep -q READY "$W/inet.ready" || { echo "inet servers failed: $(cat "$W/inet.err")"; return 1; }
	grep -q READY "$W/sbx.ready" || { echo "sbx servers failed: $(cat "$W/sbx.err")"; return 1; }
	sensor_start
}

# sensor_start: the leak sensor: everything the sandbox host puts on the wire
# (received by the inet side of the veth), packet-buffered, no capture delay.
# Used by servers_setup, and on its own by suites with their own servers.
sensor_start() {
	local i
	nsenter --net="$NS_INET" tcpdump -i "$INET_IF" -Q in -n -U --immediate-mode -Z root -s 256 \
		-w "$PCAP" >"$W/tcpdump.out" 2>&1 &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q "listening on" "$W/tcpdump.out" 2>/dev/null && break
		sleep 0.05
	done
	grep -q "listening on" "$W/tcpdump.out" || { echo "sensor failed: $(cat "$W/tcpdump.out")"; return 1; }
	sensor_sync || { echo "sensor does not see the sync markers"; return 1; }
}

# ---------------------------------------------------------------- sensor

sensor_count() {	# sensor_count FILTER: packets in the pcap matching FILTER
	tcpdump -r "$PCAP" -n "$@" 2>/dev/null | wc -l
}

# sensor_sync: send a v4 and a v6 marker from the sandbox host (root, no
# cgroup) and wait until the sensor has both.  Packets queue in order on the
# veth, so anything a probe sent before is in the pcap after this returns.
sensor_sync() {
	local p i
	MARKN=$((MARKN + 1))
	p=$((30000 + MARKN))
	in_sbx bash -c "echo m >/dev/udp/198.18.0.1/$p; echo m >/dev/udp/2001:db8:1::1/$p" 2>/dev/null
	for i in $(seq 60); do
		[ "$(sensor_count "udp and dst port $p")" -ge 2 ] && return 0
		sleep 0.05
	done
	return 1
}

# sensor_now FILTER: sync, then the count so far (a baseline for sensor_none_since)
sensor_now() {
	sensor_sync
	sensor_count "$1"
}

# sensor_none_since NAME BASE FILTER: no packet matching FILTER after the
# baseline BASE (from sensor_now) -- for an address used earlier in the run
sensor_none_since() {
	local n
	sensor_sync
	n=$(sensor_count "$3")
	if [ "$n" -le "$2" ]; then ok "$1"; else
		fail "$1" "LEAK: sensor saw $((n - $2)) new packet(s) matching '$3': $(tcpdump -r "$PCAP" -n "$3" 2>/dev/null | tail -3 | tr '\n' '|')"
	fi
}

# sensor_saw NAME FILTER / sensor_none NAME FILTER: assertions
sensor_saw() {
	local n
	sensor_sync
	n=$(sensor_count "$2")
	if [ "$n" -gt 0 ]; then ok "$1"; else fail "$1" "sensor saw no packet matching '$2'"; fi
}
sensor_none() {
	local n
	sensor_sync
	n=$(sensor_count "$2")
	if [ "$n" -eq 0 ]; then ok "$1"; else
		fail "$1" "LEAK: sensor saw $n packet(s) matching '$2': $(tcpdump -r "$PCAP" -n "$2" 2>/dev/null | head -3 | tr '\n' '|')"
	fi
}

# ------------------------------------------------------------- egressctl

# test_build TAG: EGRT := the EGR_TESTING build next to $EGRESSCTL (its
# --test-* options); without one, a failed TAG.binary check and status 1
test_build() {
	EGRT="$(dirname "$EGRESSCTL")/helpers/egressctl-test"
	[ -x "$EGRT" ] && return 0
	fail "$1.binary" "$EGRT missing (make helpers)"
	return 1
}

have_egr() { [ -x "$EGRESSCTL" ] && [ -z "${E2E_CONTROL_ONLY:-}" ]; }

# egr TAG ARGS...: run `egressctl run ARGS...` synchronously in the sbx netns
# (bounded), stdout/stderr to $W/TAG.out/.err, status in EGR_RC.
egr() {
	local tag=$1
	shift
	timeout -k 2 "${EGR_TIMEOUT:-30}" nsenter --net="$NS_SBX" env --default-signal=INT,QUIT \
		"$EGRESSCTL" run "$@" >"$W/$tag.out" 2>"$W/$tag.err" </dev/null
	EGR_RC=$?
}

# egr_bg TAG ARGS...: the same in the background; EGR_PID is egressctl's pid
# (nsenter and env exec, so $! is egressctl itself).
egr_bg() {
	local tag=$1
	shift
	nsenter --net="$NS_SBX" env --default-signal=INT,QUIT \
		"$EGRESSCTL" run "$@" >"$W/$tag.out" 2>"$W/$tag.err" </dev/null &
	EGR_PID=$!
	PIDS+=("$EGR_PID")
}

# egr_join [SECONDS]: wait for the background egressctl; TERM then KILL it
# when it overstays.  Status in EGR_RC.
egr_join() {
	local i lim=$((20 * ${1:-20}))
	for ((i = 0; i < lim; i++)); do
		kill -0 "$EGR_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$EGR_PID" 2>/dev/null; then
		note "egressctl $EGR_PID overstayed ${1:-20}s: TERM"
		kill -TERM "$EGR_PID" 2>/dev/null
		sleep 2
		kill -KILL "$EGR_PID" 2>/dev/null
	fi
	wait "$EGR_PID" 2>/dev/null
	EGR_RC=$?
}

cg_path() { echo "$CGROOT/egressctl/$CG_PREFIX-$1"; }	# cg_path TAG
cg_name() { echo "$CG_PREFIX-$1"; }

# egr_wait_pins CGDIR: wait until CGDIR exists and its pin dir holds
# map_conns and a link_*; sets CGID and PINDIR.
egr_wait_pins() {
	local dir=$1 i
	CGID=""
	PINDIR=""
	for i in $(seq 200); do
		if [ -z "$CGID" ] && [ -d "$dir" ]; then
			CGID=$(stat -c %i "$dir")
			echo "$CGID $dir" >>"$W/cgids"
			PINDIR=$PIN_ROOT/$CGID
		fi
		if [ -n "$PINDIR" ] && [ -e "$PINDIR/map_conns" ] &&
			compgen -G "$PINDIR/link_*" >/dev/null; then
			return 0
		fi
		kill -0 "$EGR_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# tl_start PORT TAG: start tlisten on 127.0.0.1:PORT for $PINDIR (sbx netns,
# outside the cgroup); output in $W/TAG.tl
tl_start() {
	nsenter --net="$NS_SBX" "$TLISTEN" "$PINDIR" "$1" >"$W/$2.tl" 2>"$W/$2.tl.err" &
	TL_PID=$!
	PIDS+=("$TL_PID")
	wait_for 5 sbx_listening "$1"
}
tl_stop() { kill "$TL_PID" 2>/dev/null; wait "$TL_PID" 2>/dev/null; }

# with_tlisten TAG TPORT ARGS...: run egressctl in the background with
# --cgroup e2e-$$-TAG, wait for its pins, start tlisten on TPORT, then touch
# $W/TAG.go (the CMD waits for it with probe --wait) and wait for the end.
# Returns 1 (after a FAIL line) if the pins or tlisten never came up.
with_tlisten() {
	local tag=$1 port=$2
	shift 2
	egr_bg "$tag" --cgroup "$(cg_name "$tag")" "$@"
	if ! egr_wait_pins "$(cg_path "$tag")"; then
		fail "$tag.setup" "no pins for cgroup $(cg_path "$tag") (id ${CGID:-none}) under $PIN_ROOT; egressctl stderr: $(head -c 600 "$W/$tag.err")"
		touch "$W/$tag.go"
		egr_join 10
		return 1
	fi
	if ! tl_start "$port" "$tag"; then
		fail "$tag.setup" "tlisten did not listen on $port: $(head -c 400 "$W/$tag.tl.err")"
		touch "$W/$tag.go"
		egr_join 10
		return 1
	fi
	[ -n "${WT_BEFORE_GO:-}" ] && "$WT_BEFORE_GO"
	touch "$W/$tag.go"
	egr_join 20
	sleep 0.1
	tl_stop
	return 0
}

# ------------------------------------------------------------- cleanup

# A watcher records the id of every cgroup we name while it exists, so a pin
# dir leaked by a failing run can still be removed after its cgroup is gone
# (clients/cgwatch.py: no fork per pass).
cg_watch() {
	exec "$PY" "$E2E_SRC/clients/cgwatch.py" "$$" "$W/cgids" \
		"$CGROOT/egressctl/$CG_PREFIX-" "$CGROOT/egr-e2e-$$-/+"
}

# cgroupfs files always report size 0: read them (test -s is useless there)
cg_nprocs() { grep -c . "$1/cgroup.procs" 2>/dev/null || true; }
cg_empty() { [ "$(cg_nprocs "$1")" = 0 ]; }
cg_nprocs_ge() { [ "$(cg_nprocs "$1")" -ge "$2" ]; }

cg_remove() {	# cg_remove DIR: kill what runs in DIR (and below), rmdir bottom-up
	local d
	[ -d "$1" ] || return 0
	while read -r d; do
		[ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
	done < <(find "$1" -depth -type d 2>/dev/null)
	while read -r d; do
		wait_for 3 cg_empty "$d"
		rmdir "$d" 2>/dev/null
	done < <(find "$1" -depth -type d 2>/dev/null)
}

e2e_cleanup() {
	local p id dir
	trap - EXIT INT TERM HUP
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	[ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null
	# anything else still in our namespaces is ours too
	for p in $(ip netns pids "$SBX" 2>/dev/null) $(ip netns pids "$INET" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "$CGROOT" ]; then
		for dir in "$CGROOT/egressctl/$CG_PREFIX"-* "$CGROOT/egr-e2e-$$"-*; do
			[ -d "$dir" ] && echo "$(stat -c %i "$dir") $dir" >>"$W/cgids"
		done
		for dir in "$CGROOT/egressctl/$CG_PREFIX"-* "$CGROOT/egr-e2e-$$"-*; do
			cg_remove "$dir"
		done
		# the fresh cgroups of the cleanup test, if egressctl left them
		while read -r dir; do cg_remove "$dir"; done < <(cat "$W/fresh-cgroups" 2>/dev/null)
	fi
	if [ -s "$W/cgids" ]; then
		while read -r id _; do
			[ -n "$id" ] && [ -d "$PIN_ROOT/$id" ] && rm -rf "${PIN_ROOT:?}/$id"
			[ -n "$id" ] && [ -d "$PIN_ROOT/hold-$id" ] && rm -rf "${PIN_ROOT:?}/hold-$id"
		done < <(sort -u "$W/cgids")
	fi
	for dir in "${EXTRA_NETNS[@]}"; do
		for p in $(ip netns pids "$dir" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$dir" 2>/dev/null
	done
	ip netns del "$SBX" 2>/dev/null
	ip netns del "$INET" 2>/dev/null
	e2e_umount_under "$W"
	if [ -z "${E2E_KEEP:-}" ]; then rm -rf --one-file-system "$W"; fi
}

# e2e_umount_under DIR: lazily unmount every mount below DIR, deepest
# first (sudo.sh's pseudo-filesystems): rm must never walk into a procfs,
# a tracefs (its instances/ rmdir) or a pstore (unlink erases records).
e2e_umount_under() {
	local m
	[ -n "$1" ] || return 0
	while read -r m; do
		umount -l "$m" 2>/dev/null
	done < <(awk -v d="$1/" 'substr($5, 1, length(d)) == d { print length($5), $5 }' /proc/self/mountinfo |
		sort -rn | cut -d' ' -f2-)
}

# e2e_base_setup: work dirs, clients, the cgroup watcher and the test
# network, without servers (proxy.sh starts its own, then sensor_start).
e2e_base_setup() {
	mkdir -m 0755 "$W" "$C" && mkdir -m 1777 "$RW" || return 1
	cp "$E2E_SRC"/clients/*.py "$E2E_SRC"/clients/*.js "$C"/ && chmod 0755 "$C"/*.py || return 1
	chmod 0644 "$C"/*.js
	: >"$W/cgids"
	cg_watch &
	WATCH_PID=$!
	net_setup || { echo "network setup failed"; return 1; }
}

e2e_setup() {
	e2e_base_setup || return 1
	servers_setup
}

# ---------------------------------------------------------- assertions

# egr_json TAG [N]: jv the Nth JSON line the confined CMD printed
egr_json() {
	local line
	line=$(nth_json "$W/$1.out" "${2:-1}")
	if [ -z "$line" ]; then
		jv '{"ok": false, "errno": "NOJSON"}'
		P_json="no JSON line #${2:-1} from the confined command (egressctl rc=$EGR_RC, stderr: $(head -c 400 "$W/$1.err" | tr '\n' '|'))"
		return 1
	fi
	jv "$line"
}

a_ok() {	# a_ok NAME: the probe succeeded
	if [ "$P_ok" = true ]; then ok "$1"; else fail "$1" "expected success, got $P_json"; fi
}
a_denied() {	# a_denied NAME: the probe failed with an errno (not a timeout)
	if [ "$P_ok" = false ] && [[ $P_errno =~ ^E[A-Z0-9]+$ ]] && [ "$P_errno" != EOF ]; then
		ok "$1"
	else
		fail "$1" "expected failure with an errno, got $P_json"
	fi
}
a_errno() {	# a_errno NAME ERRNO
	if [ "$P_ok" = false ] && [ "$P_errno" = "$2" ]; then ok "$1"; else
		fail "$1" "expected $2, got $P_json"
	fi
}
a_eq() {	# a_eq NAME WHAT GOT WANT
	if [ "$3" = "$4" ]; then ok "$1"; else fail "$1" "$2: got '$3', want '$4'"; fi
}
a_rc() {	# a_rc NAME WANT TAG: egressctl exit status
	if [ "$EGR_RC" = "$2" ]; then ok "$1"; else
		fail "$1" "egressctl exit status $EGR_RC, want $2 (stderr: $(head -c 400 "$W/$3.err" 2>/dev/null | tr '\n' '|'))"
	fi
}
a_grep() {	# a_grep NAME FILE ERE: FILE has a line matching ERE
	if grep -Eq -- "$3" "$2" 2>/dev/null; then ok "$1"; else
		fail "$1" "no line matching /$3/ in $(basename "$2"): $(tail -c 300 "$2" 2>/dev/null | tr '\n' '|')"
	fi
}
a_nogrep() {	# a_nogrep NAME FILE ERE: FILE has no line matching ERE
	if ! grep -Eq -- "$3" "$2" 2>/dev/null; then ok "$1"; else
		fail "$1" "unexpected line in $(basename "$2"): $(grep -E -- "$3" "$2" | head -2 | tr '\n' '|')"
	fi
}
re() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }	# ERE-quote

# a_jlog NAME FILE KEY=ERE...: some JSON line of the decision log FILE has
# every KEY with a value matching ERE as a whole (Python re; "(?i)..." for
# a case-insensitive match). A line not there yet is waited for up to
# A_JLOG_WAIT seconds (3): a log line can follow what the client saw (an
# ended connection, a reply) by a moment on a loaded machine.
a_jlog() {
	local name=$1 file=$2 r
	shift 2
	r=$(A_JLOG_WAIT=${A_JLOG_WAIT:-3} "$PY" - "$file" "$@" <<'EOF'
import json, os, re, sys, time
path, conds = sys.argv[1], [c.split("=", 1) for c in sys.argv[2:]]
def s(v):
    return v if isinstance(v, str) else json.dumps(v)
end = time.monotonic() + float(os.environ["A_JLOG_WAIT"])
while True:
    lines, bad = [], 0
    try:
        with open(path) as f:
            for ln in f:
                try:
                    lines.append(json.loads(ln))
                except ValueError:
                    bad += 1
    except OSError as e:
        print("cannot read %s: %s" % (path, e))
        sys.exit()
    for d in lines:
        if all(k in d and re.fullmatch(v, s(d[k])) for k, v in conds):
            print("ok")
            sys.exit()
    if time.monotonic() >= end:
        break
    time.sleep(0.2)
want = " ".join("%s=%s" % (k, v) for k, v in conds)
print("no decision %s among %d line(s)%s: %s" % (want, len(lines), " (+%d not JSON)" % bad if bad else "",
      " | ".join(json.dumps(d, sort_keys=True) for d in lines[-4:])[:900]))
EOF
)
	if [ "$r" = ok ]; then ok "$name"; else fail "$name" "$r"; fi
}

# cgid TAG: the cgroup id of TAG's --cgroup (recorded while it existed)
cgid() { awk -v p="$(cg_path "$1")" '$2 == p { print $1; exit }' "$W/cgids"; }

# a_jlog_none NAME FILE KEY=ERE...: NO JSON line of the decision log FILE
# has every KEY matching (as in a_jlog); a missing file counts as no line
a_jlog_none() {
	local name=$1 file=$2 r
	shift 2
	r=$("$PY" - "$file" "$@" <<'EOF'
import json, re, sys
path, conds = sys.argv[1], [c.split("=", 1) for c in sys.argv[2:]]
def s(v):
    return v if isinstance(v, str) else json.dumps(v)
hits = []
try:
    with open(path) as f:
        for ln in f:
            try:
                d = json.loads(ln)
            except ValueError:
                continue
            if all(k in d and re.fullmatch(v, s(d[k])) for k, v in conds):
                hits.append(json.dumps(d, sort_keys=True))
except OSError:
    pass
print("ok" if not hits else "%d decision(s) match: %s" % (len(hits), " | ".join(hits[:2])[:600]))
EOF
)
	if [ "$r" = ok ]; then ok "$name"; else fail "$name" "$r"; fi
}

# ---------------------------------------------------------------------------
# suite_main NAME SETUP "TOOLS" EGRESSCTL: the main of the proxy, DNS and
# audit suites. Skips (77) without root or cgroup2; installs the cleanup and
# signal traps (the summary stays the last line even when interrupted);
# checks the tools, the binary and SETUP; runs test_<t> for every t of
# ${E2E_TESTS:-$ALL_TESTS}; ends with "N passed, M failed".
suite_interrupted() {
	fail interrupted "SIG$1 during the run"
	echo "$PASS passed, $FAILED failed"
	exit "$2"
}

# timed_test T: runs test_T and notes how long it took ("# T: 1.234 s"),
# so a suite's slow cases show in every log.
timed_test() {
	local t0 t1
	t0=$(date +%s%N)
	"test_$1"
	t1=$(date +%s%N)
	printf '# %s: %d.%03d s\n' "$1" $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 1000000 % 1000))
}

suite_main() {
	local name=$1 setup=$2 tools=$3 t tool missing=
	shift 3
	if [ $# -lt 1 ]; then
		echo "usage: $name EGRESSCTL_PATH" >&2
		exit 2
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "$name: the end-to-end tests need root (skipped)"
		exit 77
	fi
	CGROOT=$(cgroup2_mount)
	if [ -z "$CGROOT" ] || [ "$(stat -f -c %T "$CGROOT" 2>/dev/null)" != cgroup2fs ]; then
		echo "$name: no cgroup2 mount (skipped)"
		exit 77
	fi
	EGRESSCTL=$(realpath -m "$1")
	WATCH_PID=
	trap e2e_cleanup EXIT
	trap 'suite_interrupted INT 130' INT
	trap 'suite_interrupted TERM 143' TERM
	trap 'suite_interrupted HUP 129' HUP
	[ -n "${E2E_KEEP:-}" ] && note "keeping $W (E2E_KEEP)"
	for tool in $tools "$PY"; do
		command -v "$tool" >/dev/null || missing="$missing $tool"
	done
	if [ -n "$missing" ]; then
		fail setup "missing tools:$missing (tools/install-deps.sh)"
	elif [ ! -x "$EGRESSCTL" ]; then
		fail egressctl.present "$EGRESSCTL is not executable"
	elif ! "$setup"; then
		fail setup "the test network, servers, resolvers or sensor did not come up"
	else
		for t in ${E2E_TESTS:-$ALL_TESTS}; do
			timed_test "$t"
		done
	fi
	echo "$PASS passed, $FAILED failed"
	[ "$FAILED" = 0 ]
}

# script TAG: the confined script for TAG is read from stdin into $W/TAG.sh,
# after a line that sources the suite's $W/prelude.sh
script() {
	{
		echo ". $W/prelude.sh"
		cat
	} >"$W/$1.sh"
	chmod 0644 "$W/$1.sh"
}

# a_jlog_n NAME FILE N KEY=ERE...: exactly N JSON lines of the decision log
# FILE have every KEY matching (as in a_jlog)
a_jlog_n() {
	local name=$1 file=$2 want=$3 r
	shift 3
	r=$("$PY" - "$file" "$want" "$@" <<'EOF2'
import json, re, sys
path, want, conds = sys.argv[1], int(sys.argv[2]), [c.split("=", 1) for c in sys.argv[3:]]
def s(v):
    return v if isinstance(v, str) else json.dumps(v)
hits = []
try:
    with open(path) as f:
        for ln in f:
            try:
                d = json.loads(ln)
            except ValueError:
                continue
            if all(k in d and re.fullmatch(v, s(d[k])) for k, v in conds):
                hits.append(json.dumps(d, sort_keys=True))
except OSError as e:
    print("cannot read %s: %s" % (path, e))
    sys.exit()
print("ok" if len(hits) == want else "%d decision(s) match, want %d: %s" % (len(hits), want, " | ".join(hits[:3])[:600]))
EOF2
)
	if [ "$r" = ok ]; then ok "$name"; else fail "$name" "$r"; fi
}

# host_svc TAG PROTO ADDR PORT [OPTS [USER [ARGS...]]]: a "host service"
# outside the cgroup, in the sbx netns (clients/servers.py host: an echo
# socket with the socket options OPTS, "reuseaddr,reuseport,v6only"), run
# as root or as the uid USER; every connection and datagram is logged to
# $RW/TAG.host. Waits until it is up (status 1 if it never is, after a FAIL
# line); HOST_PID is its pid, for host_stop.
host_svc() {
	local tag=$1 proto=$2 addr=$3 port=$4 opts=${5:-} user=${6:-} i
	local -a who=() more=("${@:7}")
	[ -n "$user" ] && who=(setpriv --reuid="$user" --regid="$user" --clear-groups --)
	: >"$RW/$tag.host"
	chmod 0666 "$RW/$tag.host"
	nsenter --net="$NS_SBX" "${who[@]}" "$PY" "$C/servers.py" host --log "$RW/$tag.host" \
		--proto "$proto" --addr "$addr" --port "$port" --opts "$opts" "${more[@]}" \
		>"$W/$tag.host.ready" 2>"$W/$tag.host.err" &
	HOST_PID=$!
	PIDS+=("$HOST_PID")
	for i in $(seq 100); do
		grep -q READY "$W/$tag.host.ready" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "$tag.host" "the host service $proto $addr:$port ($opts) did not start: $(head -c 300 "$W/$tag.host.err")"
	return 1
}
host_stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }	# host_stop PID

# jvl LINE / egr_jsonl TAG [N]: jv / egr_json, with the keys of probe.py's
# `bound`, `recv_fd`, `sendmmsg` and DNS lines always defined (set -u):
# P_held P_received P_sent P_local ("" when absent)
jvl() {
	unset P_held P_received P_sent P_local
	jv "$1"
	: "${P_held:=}" "${P_received:=}" "${P_sent:=}" "${P_local:=}"
}
egr_jsonl() {
	local r
	unset P_held P_received P_sent P_local
	egr_json "$@"
	r=$?
	: "${P_held:=}" "${P_received:=}" "${P_sent:=}" "${P_local:=}"
	return $r
}

# The kernel suites (run.sh, loopback.sh): the test network of e2e_setup,
# tlisten, bpftool. kernel_suite_main NAME EGRESSCTL_PATH
interrupted() {	# the summary stays the last line even when interrupted
	fail interrupted "SIG$1 during the run"
	echo "$PASS passed, $FAILED failed"
	exit "$2"
}

kernel_suite_main() {
	local name=$1 t tool
	shift
	if [ $# -lt 1 ]; then
		echo "usage: $name EGRESSCTL_PATH" >&2
		exit 2
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "$name: the end-to-end tests need root (skipped)"
		exit 77
	fi
	CGROOT=$(cgroup2_mount)
	if [ -z "$CGROOT" ] || [ "$(stat -f -c %T "$CGROOT" 2>/dev/null)" != cgroup2fs ]; then
		echo "$name: no cgroup2 mount (skipped)"
		exit 77
	fi
	EGRESSCTL=$(realpath -m "$1")
	TLISTEN=${TLISTEN:-$(dirname "$EGRESSCTL")/helpers/tlisten}
	WATCH_PID=
	trap e2e_cleanup EXIT
	trap 'interrupted INT 130' INT
	trap 'interrupted TERM 143' TERM
	trap 'interrupted HUP 129' HUP

	local missing=
	[ -n "${E2E_KEEP:-}" ] && note "keeping $W (E2E_KEEP)"
	for tool in ip nsenter setpriv tcpdump ss curl dig bpftool timeout "$PY"; do
		command -v "$tool" >/dev/null || missing="$missing $tool"
	done
	if [ -n "$missing" ]; then
		fail setup "missing tools:$missing (tools/install-deps.sh)"
	elif ! e2e_setup; then
		fail setup "the test network, servers or sensor did not come up"
	else
		if [ -z "${E2E_CONTROL_ONLY:-}" ]; then
			[ -x "$EGRESSCTL" ] || fail egressctl.present "$EGRESSCTL is not executable: confined halves skipped"
			[ -x "$TLISTEN" ] || fail tlisten.present "$TLISTEN is not executable: redirect tests will fail"
		fi
		for t in ${E2E_TESTS:-$ALL_TESTS}; do
			timed_test "$t"
		done
	fi
	echo "$PASS passed, $FAILED failed"
	[ "$FAILED" = 0 ]
}
