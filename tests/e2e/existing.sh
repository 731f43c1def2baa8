#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of the pre-existing pass (kernel/existing.c,
# bpf/existing.bpf.c): the programs are attached to a cgroup whose process
# already holds connections to the test internet (runner mode). Without the
# pass those connections stall (the catch-all drops their packets: the
# control half); with it they are listed with their process and keep working
# ("pre-existing, not confined"), or, with kill, are ended and send nothing
# more. Connections made after the attach are the programs' to decide. Same
# network and output as run.sh (tests/e2e/lib.sh, docs/testing.md); the
# attaching is done by build/helpers/existing_scan (the loader as `run` uses
# it), the holder is clients/holder.py.
#
#   sudo tests/e2e/existing.sh build/egressctl   (make e2e does this)
#
#   netns egr-sbx-PID                          netns egr-inet-PID
#   cgroup egr-e2e-PID-TAG[/job]:              TCP echo on 7100 (holder.py serve), UDP echo
#     holder.py (nobody): TCP and connected      on 7 (servers.py inet); every
#     UDP sockets opened before the attach       connection gets its own address
#   existing_scan (root, outside the cgroup)   LEAK SENSOR on the veth
#
# Everything (netns, cgroups, pins, processes) is named with the suite's pid
# and removed by the EXIT trap, by id.

set -u
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
. "$(dirname "$0")/lib.sh"
e2e_reexec "$@"

ALL_TESTS="stall keep recorded kill netns many"
ECHO_PORT=7100	# holder.py serve in the inet netns: TCP echo, no idle timeout
declare -A HFD SFD

# echo_start: the suite's own TCP echo server (once): a stalled connection
# must stay open at the server (servers.py ends idle ones after 3 s)
echo_start() {
	[ -n "${ECHO_PID:-}" ] && return 0
	nsenter --net="$NS_INET" "$PY" "$C/holder.py" serve --log "$W/echo.log" --port "$ECHO_PORT" \
		>"$W/echo.ready" 2>"$W/echo.err" &
	ECHO_PID=$!
	PIDS+=("$ECHO_PID")
	wait_for 5 grep -qs READY "$W/echo.ready" ||
		{ fail echo.server "did not start: $(head -c 300 "$W/echo.err")"; return 1; }
}

ex_cg() { echo "$CGROOT/egr-e2e-$$-$1"; }	# ex_cg TAG: the cgroup TAG attaches to

# jget JSON PATH: the value at PATH (keys joined by dots) of one JSON line;
# "" when absent, JSON for lists and objects, true/false for booleans
jget() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
try:
    v = json.loads(sys.argv[1])
    for k in sys.argv[2].split("."):
        v = v[k]
except (ValueError, KeyError, TypeError, IndexError):
    v = ""
print(("true" if v else "false") if isinstance(v, bool) else
      v if isinstance(v, str) else json.dumps(v))
EOF
}

lines() { grep -c . "$1" 2>/dev/null || echo 0; }

# hold_start TAG CGDIR ARGS...: holder.py ARGS as nobody in the sbx netns,
# inside CGDIR (made here) before its first socket; commands go to
# ${HFD[TAG]}, output to $W/TAG.hold. HOLD_LINE: its ready line.
hold_start() {
	local tag=$1 cg=$2 fd
	shift 2
	echo_start || return 1
	mkdir -p "$cg" && mkfifo "$W/$tag.hcmd" || return 1
	exec {fd}<>"$W/$tag.hcmd"
	HFD[$tag]=$fd
	# sh writes its own pid into the cgroup, then execs: the holder is that pid
	nsenter --net="$NS_SBX" /bin/sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh \
		"$cg" setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" "$C/holder.py" "$@" \
		<"$W/$tag.hcmd" >"$W/$tag.hold" 2>"$W/$tag.hold.err" &
	HOLD_PID=$!
	PIDS+=("$HOLD_PID")
	wait_for 10 grep -qs '"ready"' "$W/$tag.hold" || {
		fail "$tag.holder" "holder did not start: $(head -c 300 "$W/$tag.hold.err")"
		return 1
	}
	HOLD_LINE=$(head -1 "$W/$tag.hold")
}

# hold_cmd TAG CMD...: one command to TAG's holder; HOLD_LINE: its answer
hold_cmd() {
	local tag=$1 n
	shift
	n=$(lines "$W/$tag.hold")
	echo "$*" >&"${HFD[$tag]}"
	wait_for 15 eval '[ "$(lines "$W/$tag.hold")" -gt '"$n"' ]'
	HOLD_LINE=$(sed -n "$((n + 1))p" "$W/$tag.hold")
}

hold_stop() {	# hold_stop TAG PID
	echo quit >&"${HFD[$1]}"
	wait_for 5 eval '! kill -0 '"$2"' 2>/dev/null'
	kill "$2" 2>/dev/null
	exec {HFD[$1]}>&-
}

# scan_start TAG WHERE ARGS... CGDIR: existing_scan --hold ARGS CGDIR (WHERE:
# "sbx" = in the sbx netns, "host" = in this one), commands on ${SFD[TAG]},
# output in $W/TAG.scan; waits for the first pass (or the attach, with
# --no-pass). SCAN_PID.
scan_start() {
	local tag=$1 where=$2 fd
	local -a pre=()
	shift 2
	[ "$where" = sbx ] && pre=(nsenter --net="$NS_SBX")
	mkfifo "$W/$tag.scmd" || return 1
	exec {fd}<>"$W/$tag.scmd"
	SFD[$tag]=$fd
	"${pre[@]}" "$EXISTING_SCAN" --hold "$@" <"$W/$tag.scmd" >"$W/$tag.scan" 2>"$W/$tag.scan.err" &
	SCAN_PID=$!
	PIDS+=("$SCAN_PID")
	wait_for 15 grep -Eqs '"done":true|"attached":true' "$W/$tag.scan" || {
		fail "$tag.scan" "existing_scan did not attach: $(head -c 400 "$W/$tag.scan.err")"
		return 1
	}
	local cgdir=${*: -1}
	echo "$(stat -c %i "$cgdir") $cgdir" >>"$W/cgids"
}

# scan_cmd TAG CMD: a command to TAG's existing_scan; waits for one more line
scan_cmd() {
	local tag=$1 n
	shift
	n=$(lines "$W/$tag.scan")
	echo "$*" >&"${SFD[$tag]}"
	if [ "$1" = scan ]; then
		wait_for 15 eval '[ "$(grep -c "\"done\":true" "$W/$tag.scan")" -gt "$(sed -n "1,'"$n"'p" "$W/$tag.scan" | grep -c "\"done\":true")" ]'
	else
		wait_for 15 eval '[ "$(lines "$W/$tag.scan")" -gt '"$n"' ]'
	fi
}

# scan_stop TAG: it detaches (pins removed) and exits
scan_stop() {
	echo quit >&"${SFD[$1]}"
	exec {SFD[$1]}>&-
	wait_for 10 eval '! kill -0 '"$SCAN_PID"' 2>/dev/null'
	kill "$SCAN_PID" 2>/dev/null
	wait "$SCAN_PID" 2>/dev/null
	a_grep "$1.detached" "$W/$1.scan" '"detached":true'
}

# scan_entry TAG PASS PEER: jv the connection line of pass PASS for PEER
# (ip:port as printed); P_json names what was there when there is none
scan_entry() {
	local line
	line=$(grep -F "\"pass\":$2," "$W/$1.scan" | grep -F "\"peer\":\"$3\"" | head -1)
	if [ -z "$line" ]; then
		jv '{"action": "NONE"}'
		P_json="no line for $3 in pass $2: $(grep -F "\"pass\":$2," "$W/$1.scan" | head -c 600 | tr '\n' '|')"
		return 1
	fi
	jv "$line"
}

# scan_done TAG PASS: jv pass PASS's summary line
scan_done() { jv "$(grep -F "\"pass\":$2,\"done\":true" "$W/$1.scan" | head -1)"; }

# payload FAMILY LADDR LPORT RADDR RPORT: tcpdump filter for the TCP segments
# with payload from LADDR:LPORT to RADDR:RPORT
payload() {
	if [ "$1" = 6 ]; then
		echo "ip6 and src host $2 and tcp src port $3 and dst host $4 and tcp dst port $5 and (ip6[4:2] - ((ip6[52] & 0xf0) >> 2)) > 0"
	else
		echo "ip and src host $2 and tcp src port $3 and dst host $4 and tcp dst port $5 and (ip[2:2] - ((ip[0] & 0xf) << 2) - ((tcp[12] & 0xf0) >> 2)) > 0"
	fi
}
hostport() { echo "${1%:*}" | tr -d '[]'; }	# "[a]:p" or "a:p" -> a
portof() { echo "${1##*:}"; }

# a_entry NAME PEER PROTO ACTION STATE: the entry jv'd by scan_entry is PEER's,
# with the holder's pid and command and ACTION
a_entry() {
	local name=$1 want_pid=$2 action=$3 state=$4
	if [ "$P_pid" = "$want_pid" ] && [ "$P_comm" = python3 ] && [ "$P_action" = "$action" ] &&
		[ "$P_state" = "$state" ] && [ "$P_in_cgroup" = true ]; then
		ok "$name"
	else
		fail "$name" "want pid $want_pid comm python3 action $action state $state in_cgroup, got $P_json"
	fi
}

# ======================================================================
# stall: the bug the pass fixes. Without it, a connection opened before the
# attach stalls: the catch-all drops its segments (TCP: the reply never comes,
# nothing of it reaches the sensor) and its datagrams (EPERM). After the
# detach, TCP's retransmission delivers what was held back.
# ======================================================================
test_stall() {
	local t=stall cg t4 u4 tl ul base f
	cg=$(ex_cg $t)
	new4 t4
	new4 u4
	hold_start $t "$cg" --tcp "$t4:$ECHO_PORT" --udp "$u4:7" || return
	a_eq "$t.control.tcp_before" "round trip before the attach" "$(jget "$HOLD_LINE" conns.t0.ok)" true
	a_eq "$t.control.udp_before" "round trip before the attach" "$(jget "$HOLD_LINE" conns.u0.ok)" true
	tl=$(jget "$HOLD_LINE" conns.t0.local)
	sensor_saw "$t.control.sensor_saw" "$(payload 4 198.18.0.2 "$(portof "$tl")" "$t4" "$ECHO_PORT")"
	have_egr || { hold_stop $t "$HOLD_PID"; return 0; }
	local hp=$HOLD_PID tp
	new_port tp

	f=$(payload 4 198.18.0.2 "$(portof "$tl")" "$t4" "$ECHO_PORT")
	base=$(sensor_now "$f")
	scan_start $t sbx --no-pass --tproxy-port "$tp" "$cg" || { hold_stop $t "$hp"; return; }
	hold_cmd $t ping $t.1
	a_eq "$t.tcp_stalls" "TCP round trip after the attach, without the pass" \
		"$(jget "$HOLD_LINE" results.t0.errno)" TIMEOUT
	a_eq "$t.udp_dropped" "UDP send after the attach, without the pass" \
		"$(jget "$HOLD_LINE" results.u0.errno)" EPERM
	sensor_none_since "$t.nothing_left" "$base" "$f"
	a_nogrep "$t.server_saw_nothing" "$W/echo.log" "$t\\.1 t0\$"
	scan_stop $t
	hold_cmd $t ping $t.2 12
	a_eq "$t.tcp_after_detach" "TCP round trip after the detach (retransmitted)" \
		"$(jget "$HOLD_LINE" results.t0.ok)" true
	a_grep "$t.retransmitted" "$W/echo.log" "$t\\.1 t0\$"
	hold_stop $t "$hp"
}

# ======================================================================
# keep: without kill, the pass lists every pre-existing connection of the
# cgroup tree (here a child cgroup) with its pid, command and peer --
# TCP and connected UDP, over IPv4 and IPv6; not the loopback one -- and they
# keep working both ways after the attach; the last bytes and the FIN of a
# socket closed afterwards still leave. New connections, even of the same
# process, are the programs': redirected to a listener that is not there,
# refused, and nothing of them reaches the sensor.
# ======================================================================
test_keep() {
	local t=keep cg t4 u4 t6 u6 n4 n4u tp hp tl ul t6l f
	cg=$(ex_cg $t)
	new4 t4
	new4 u4
	new6 t6
	new6 u6
	new4 n4
	new4 n4u
	hold_start $t "$cg/job" --tcp "$t4:$ECHO_PORT" --udp "$u4:7" --tcp "[$t6]:$ECHO_PORT" \
		--udp "[$u6]:7" --tcp "127.0.0.1:$LO_PORT" || return
	hp=$HOLD_PID
	a_eq "$t.control.before" "every round trip before the attach" \
		"$(jget "$HOLD_LINE" conns.t0.ok)$(jget "$HOLD_LINE" conns.u0.ok)$(jget "$HOLD_LINE" conns.t1.ok)$(jget "$HOLD_LINE" conns.u1.ok)$(jget "$HOLD_LINE" conns.t2.ok)" \
		truetruetruetruetrue
	tl=$(jget "$HOLD_LINE" conns.t0.local)
	ul=$(jget "$HOLD_LINE" conns.u0.local)
	t6l=$(jget "$HOLD_LINE" conns.t1.local)
	have_egr || { hold_stop $t "$hp"; return 0; }
	new_port tp

	scan_start $t sbx --tproxy-port "$tp" "$cg" || { hold_stop $t "$hp"; return; }
	scan_entry $t 1 "$t4:$ECHO_PORT"
	a_entry "$t.listed.tcp4" "$hp" marked established
	a_eq "$t.listed.tcp4.local" "local address" "$P_local" "$tl"
	a_eq "$t.listed.tcp4.cgroup" "the socket's cgroup" "$P_cgroup" "$(stat -c %i "$cg/job")"
	scan_entry $t 1 "$u4:7"
	a_entry "$t.listed.udp4" "$hp" marked connected
	scan_entry $t 1 "[$t6]:$ECHO_PORT"
	a_entry "$t.listed.tcp6" "$hp" marked established
	a_eq "$t.listed.tcp6.local" "local address" "$P_local" "$t6l"
	scan_entry $t 1 "[$u6]:7"
	a_entry "$t.listed.udp6" "$hp" marked connected
	scan_done $t 1
	a_eq "$t.listed.only_these" "connections listed (loopback left out)" "$P_n" 4
	note "pass over $P_visited sockets in $P_netns netns: $((P_pass_ns / 1000)) us (with /proc: $((P_total_ns / 1000)) us); attach to end of pass: $((P_window_ns / 1000)) us"

	hold_cmd $t ping $t.1
	a_eq "$t.works.tcp4" "TCP round trip after the pass" "$(jget "$HOLD_LINE" results.t0.ok)" true
	a_eq "$t.works.udp4" "UDP round trip after the pass" "$(jget "$HOLD_LINE" results.u0.ok)" true
	a_eq "$t.works.tcp6" "TCP/IPv6 round trip after the pass" "$(jget "$HOLD_LINE" results.t1.ok)" true
	a_eq "$t.works.udp6" "UDP/IPv6 round trip after the pass" "$(jget "$HOLD_LINE" results.u1.ok)" true
	a_grep "$t.server_got.tcp4" "$W/echo.log" "DATA tcp .*peer=$(re "$tl") $t\\.1 t0\$"
	a_grep "$t.server_got.udp4" "$W/inet.log" "DATA udp .*peer=$(re "$ul") $t\\.1 u0\$"

	# the same process, a new socket: decided by the programs
	hold_cmd $t new tcp "$n4" "$ECHO_PORT" t9
	a_eq "$t.new.tcp_redirected_refused" "new TCP connection after the attach" \
		"$(jget "$HOLD_LINE" errno)" ECONNREFUSED
	hold_cmd $t new udp "$n4u" 7 u9
	a_eq "$t.new.udp_refused" "new connected UDP socket after the attach" \
		"$(jget "$HOLD_LINE" errno)" EPERM
	# ... and a new process of the cgroup
	jv "$(timeout -k 1 20 nsenter --net="$NS_SBX" /bin/sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh \
		"$cg/job" setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$PY" "$C/probe.py" --token "$t.new" tcp4 "$n4" "$ECHO_PORT" | grep '^{' | tail -1)"
	a_errno "$t.new.process_refused" ECONNREFUSED
	sensor_none "$t.new.sensor_none" "host $n4 or host $n4u"

	# a round trip, then close(): the FIN leaves after the socket's file is
	# gone (sock_release), and must not be dropped
	hold_cmd $t close t0 $t.bye
	a_eq "$t.close.round_trip" "round trip before close()" "$(jget "$HOLD_LINE" ok)" true
	sensor_saw "$t.close.fin_left" "ip and src port $(portof "$tl") and dst host $t4 and tcp[tcpflags] & tcp-fin != 0"

	scan_stop $t
	hold_stop $t "$hp"
}

# ======================================================================
# recorded: a connection made after the attach and let through by the
# programs (the fast path: a record with EGR_SK_DIRECT) is theirs: a second
# pass leaves it out, and lists the pre-existing one as marked before.
# ======================================================================
test_recorded() {
	local t=recorded cg t4 f4 hp tp
	cg=$(ex_cg $t)
	new4 t4
	new4 f4
	hold_start $t "$cg" --tcp "$t4:$ECHO_PORT" || return
	hp=$HOLD_PID
	a_eq "$t.control.before" "round trip before the attach" "$(jget "$HOLD_LINE" conns.t0.ok)" true
	have_egr || { hold_stop $t "$hp"; return 0; }
	new_port tp
	scan_start $t sbx --tproxy-port "$tp" "$cg" || { hold_stop $t "$hp"; return; }
	scan_cmd $t fast "$f4" "$ECHO_PORT"
	hold_cmd $t new tcp "$f4" "$ECHO_PORT" t5
	a_eq "$t.fast.connected" "a fast-path connection after the attach" "$(jget "$HOLD_LINE" ok)" true
	scan_cmd $t scan
	scan_done $t 2
	a_eq "$t.rescan.one" "connections in the second pass" "$P_n" 1
	scan_entry $t 2 "$t4:$ECHO_PORT"
	a_entry "$t.rescan.preexisting" "$hp" marked-before established
	scan_entry $t 2 "$f4:$ECHO_PORT"
	a_eq "$t.rescan.fast_left_out" "the fast-path connection" "$P_action" NONE
	hold_cmd $t ping $t.1
	a_eq "$t.both_work" "round trips on both" \
		"$(jget "$HOLD_LINE" results.t0.ok)$(jget "$HOLD_LINE" results.t5.ok)" truetrue
	scan_stop $t
	hold_stop $t "$hp"
}

# ======================================================================
# kill: with kill, the pre-existing connections are ended: listed as
# killed, the process sees ECONNABORTED, and from the kill on nothing of
# them reaches the sensor -- not a byte, and not the reset either: a killed
# socket is not marked, so the catch-all drops its RST.
# ======================================================================
test_kill() {
	local t=kill cg t4 u4 hp tp tl ul bt bu ft fu
	cg=$(ex_cg $t)
	new4 t4
	new4 u4
	hold_start $t "$cg" --tcp "$t4:$ECHO_PORT" --udp "$u4:7" || return
	hp=$HOLD_PID
	a_eq "$t.control.before" "round trips before the attach" \
		"$(jget "$HOLD_LINE" conns.t0.ok)$(jget "$HOLD_LINE" conns.u0.ok)" truetrue
	tl=$(jget "$HOLD_LINE" conns.t0.local)
	ul=$(jget "$HOLD_LINE" conns.u0.local)
	have_egr || { hold_stop $t "$hp"; return 0; }
	new_port tp
	ft="ip and src port $(portof "$tl") and dst host $t4"
	fu="ip and udp src port $(portof "$ul") and dst host $u4"
	bt=$(sensor_now "$ft")
	bu=$(sensor_count "$fu")

	scan_start $t sbx --kill --tproxy-port "$tp" "$cg" || { hold_stop $t "$hp"; return; }
	scan_entry $t 1 "$t4:$ECHO_PORT"
	a_entry "$t.listed.tcp" "$hp" killed established
	scan_entry $t 1 "$u4:7"
	a_entry "$t.listed.udp" "$hp" killed connected
	hold_cmd $t ping $t.1
	a_eq "$t.tcp_aborted" "TCP after the kill" "$(jget "$HOLD_LINE" results.t0.errno)" ECONNABORTED
	a_eq "$t.udp_aborted" "UDP after the kill" "$(jget "$HOLD_LINE" results.u0.errno)" ECONNABORTED
	hold_cmd $t ping $t.2
	sensor_none_since "$t.tcp.nothing_after_kill" "$bt" "$ft"
	sensor_none_since "$t.udp.nothing_after_kill" "$bu" "$fu"
	a_nogrep "$t.server_saw_nothing" "$W/echo.log" "$t\\.[12] t0\$"
	a_nogrep "$t.server_saw_nothing.udp" "$W/inet.log" "$t\\.[12] u0\$"
	scan_cmd $t scan
	scan_done $t 2
	a_eq "$t.rescan.none" "connections in the second pass" "$P_n" 0
	scan_stop $t
	hold_stop $t "$hp"
}

# ======================================================================
# netns: the pass started from another network namespace (the daemon's,
# here the host's) still finds the connections: it runs the iterators in the
# namespace of each process of the cgroup.
# ======================================================================
test_netns() {
	local t=netns cg t4 hp tp
	cg=$(ex_cg $t)
	new4 t4
	hold_start $t "$cg" --tcp "$t4:$ECHO_PORT" || return
	hp=$HOLD_PID
	a_eq "$t.control.before" "round trip before the attach" "$(jget "$HOLD_LINE" conns.t0.ok)" true
	have_egr || { hold_stop $t "$hp"; return 0; }
	new_port tp
	scan_start $t host --tproxy-port "$tp" "$cg" || { hold_stop $t "$hp"; return; }
	scan_entry $t 1 "$t4:$ECHO_PORT"
	a_entry "$t.listed" "$hp" marked established
	a_eq "$t.netns" "the namespace it was found in" "$P_netns" "$(stat -L -c %i "$NS_SBX")"
	scan_done $t 1
	a_eq "$t.two_namespaces" "namespaces searched" "$P_netns" 2
	hold_cmd $t ping $t.1
	a_eq "$t.works" "round trip after the pass" "$(jget "$HOLD_LINE" results.t0.ok)" true
	scan_stop $t
	hold_stop $t "$hp"
}

# ======================================================================
# many: more pre-existing connections than one read() of the iterator
# carries (368 records): every one is listed once, with its process, and
# every one keeps working.
# ======================================================================
test_many() {
	local t=many cg m4 hp tp i r
	local -a args=()
	cg=$(ex_cg $t)
	new4 m4
	for ((i = 0; i < 600; i++)); do args+=(--tcp "$m4:$ECHO_PORT"); done
	hold_start $t "$cg" "${args[@]}" || return
	hp=$HOLD_PID
	r=$(jget "$HOLD_LINE" conns | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(sum(1 for v in d.values() if v["ok"]))')
	a_eq "$t.control.before" "round trips before the attach" "$r" 600
	have_egr || { hold_stop $t "$hp"; return 0; }
	new_port tp
	scan_start $t sbx --tproxy-port "$tp" "$cg" || { hold_stop $t "$hp"; return; }
	scan_done $t 1
	note "pass over $P_visited sockets, 600 of them listed: $((P_pass_ns / 1000)) us (with /proc: $((P_total_ns / 1000)) us)"
	r=$("$PY" - "$W/$t.scan" "$hp" <<'EOF2'
import json, sys
seen, bad = set(), []
for ln in open(sys.argv[1]):
    d = json.loads(ln)
    if d.get("pass") != 1 or "cookie" not in d:
        continue
    if d["cookie"] in seen or d["pid"] != int(sys.argv[2]) or d["action"] != "marked":
        bad.append(ln.strip())
    seen.add(d["cookie"])
print(len(seen) if not bad else "%d listed, bad: %s" % (len(seen), " | ".join(bad[:2])[:400]))
EOF2
)
	a_eq "$t.listed_once_each" "connections listed once, with the holder's pid" "$r" 600
	hold_cmd $t ping $t.1 10
	r=$(jget "$HOLD_LINE" results | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(sum(1 for v in d.values() if v["ok"]))')
	a_eq "$t.all_work" "round trips after the pass" "$r" 600
	scan_stop $t
	hold_stop $t "$hp"
}

existing_main() {
	EXISTING_SCAN=$(dirname "$(realpath -m "$1")")/helpers/existing_scan
	if [ -z "${E2E_CONTROL_ONLY:-}" ] && [ ! -x "$EXISTING_SCAN" ] && [ "$(id -u)" = 0 ]; then
		echo "FAIL existing_scan.present: $EXISTING_SCAN missing (make helpers)"
		echo "0 passed, 1 failed"
		exit 1
	fi
	kernel_suite_main existing.sh "$@"
}

existing_main "$@"
