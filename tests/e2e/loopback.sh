#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of loopback under `egressctl run`: a server CMD starts is
# reachable from CMD, a host service on loopback is not (unless a rule names
# it), and "CMD's own" is the socket that would receive: wildcard and
# v6-only binds, v4-mapped destinations, SO_REUSEPORT groups, ports reused,
# IP_FREEBIND/IP_TRANSPARENT, device binds, passed descriptors
# (docs/security-loopback.md). Same network, options and output as run.sh.
#
#   sudo tests/e2e/loopback.sh build/egressctl   (make e2e does this)
#
# The test network: lib.sh's e2e_setup, drawn in docs/testing.md (nothing
# ever leaves the machine). In the sandbox host's namespace, where
# egressctl runs: the DNS listener on 127.0.0.1:5353 (--dns-port, answers
# 192.0.2.53), a TCP echo on :5432 (a host service outside the cgroup), a
# tlisten per test on :150xx (--transparent-port), abstract and unix
# sockets of the suite's own. The "internet" owns 198.51.100.0/24,
# 203.0.113.0/24 and 2001:db8:2::/64 (every attempt its own address),
# echoes TCP and UDP and answers DNS (203.0.113.99); the leak sensor
# listens on its veth.
#
# Every vector: the control (same attempt, same netns, no egressctl) succeeds
# and the sensor sees its packets; the confined attempt (egressctl run --user
# nobody ...) fails with an errno or is redirected, and the sensor sees NONE
# of its packets.  Clients: clients/probe.py (one JSON line per attempt),
# curl, dig.  Servers: clients/servers.py.  Everything (netns, cgroups, pins,
# processes) is named with the suite's pid and removed by an EXIT trap.

set -u
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
. "$(dirname "$0")/lib.sh"
e2e_reexec "$@"

# ======================================================================
# loopback: a server inside the cgroup is reachable, one outside is not
# (ECONNREFUSED), unless --allow'ed; the transparent listener is not used
# ======================================================================
test_loopback() {
	local t=loopback tp
	new_port tp
	jv "$(probe_nobody --token "$t.c" tcp4 127.0.0.1 "$LO_PORT")"
	a_ok "$t.control.outside_server"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	have_egr || return 0

	# the confined command starts its own loopback server, then connects
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- /bin/sh -c \
		"$PROBE listen_local 6001 $RW/$t.ready >$RW/$t.listen &
		 $PROBE --wait $RW/$t.ready --token $t.in tcp4 127.0.0.1 6001; wait;
		 $PROBE --token $t.out tcp4 127.0.0.1 $LO_PORT"
	a_rc "$t.exit" 0 "$t"
	jv "$(nth_json "$RW/$t.listen")"
	a_ok "$t.inside.server_accepted"
	egr_json "$t" 1
	a_ok "$t.inside.reachable"
	a_eq "$t.inside.echo" "reply" "$P_data" "local-echo probe $t.in"
	egr_json "$t" 2
	a_errno "$t.outside.refused" ECONNREFUSED
	a_nogrep "$t.outside.server_saw_nothing" "$W/sbx.log" "probe $t\\.out\$"

	egr "${t}_allow" --cgroup "$(cg_name "${t}_a")" --user nobody --allow "127.0.0.1:$LO_PORT" -- \
		"${PROBE_ARGV[@]}" --token "$t.allow" tcp4 127.0.0.1 "$LO_PORT"
	egr_json "${t}_allow"
	a_ok "$t.allowed.reachable"
	a_eq "$t.allowed.echo" "reply" "$P_data" "probe $t.allow"

	# with a transparent listener up: still refused, never redirected
	with_tlisten "${t}_tl" "$tp" --user nobody --transparent-port "$tp" -- \
		"${PROBE_ARGV[@]}" --wait "$W/${t}_tl.go" --token "$t.tl" tcp4 127.0.0.1 "$LO_PORT" || return 0
	egr_json "${t}_tl"
	a_errno "$t.with_transparent.refused" ECONNREFUSED
	a_nogrep "$t.with_transparent.tlisten_saw_nothing" "$W/${t}_tl.tl" "ORIG"
}

# ======================================================================
# Regression: a socket bound to [::]:P -- with
# IPV6_V6ONLY, or without it next to a SO_REUSEADDR host service -- made
# 127.0.0.1:P look like the sandbox's own loopback server, so CMD reached
# a host service there over TCP and UDP, and nothing was logged ("no
# network attempts"). The socket that would receive decides now.
# ======================================================================
test_loopback_wildcard() {
	local t=loopback_wildcard u1 u2 h1 h2
	new_port u1; new_port u2
	host_svc "$t.u1" udp 127.0.0.1 "$u1" || return 0
	h1=$HOST_PID
	host_svc "$t.u2" udp 127.0.0.1 "$u2" reuseaddr || { host_stop "$h1"; return 0; }
	h2=$HOST_PID
	# control: the same binds and attempts outside egressctl reach the
	# host services (the [::] sockets do not stand in the way)
	jvl "$(probe_nobody --token "$t.c1" bound "tcp/6/::/$LO_PORT/v6only" -- tcp4 127.0.0.1 "$LO_PORT")"
	a_eq "$t.control.tcp_v6only.held" "bind" "$P_held" "[\"OK [::]:$LO_PORT\"]"
	a_eq "$t.control.tcp_v6only.echo" "reply" "$P_data" "probe $t.c1"
	jvl "$(probe_nobody --token "$t.c2" bound "udp/6/::/$u1/v6only" -- udp_sendto 127.0.0.1 "$u1")"
	a_eq "$t.control.udp_v6only.echo" "reply" "$P_data" "probe $t.c2"
	jvl "$(probe_nobody --token "$t.c3" bound "udp/6/::/$u2/dual,reuseaddr" -- udp_sendto 127.0.0.1 "$u2")"
	a_eq "$t.control.udp_dual.held" "bind" "$P_held" "[\"OK [::]:$u2\"]"
	a_eq "$t.control.udp_dual.echo" "reply" "$P_data" "probe $t.c3"
	if ! have_egr; then host_stop "$h1"; host_stop "$h2"; return 0; fi

	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --log "$W/$t.jlog" -- /bin/sh -c \
		"$PROBE --token $t.tcp bound tcp/6/::/$LO_PORT/v6only -- tcp4 127.0.0.1 $LO_PORT;
		 $PROBE --token $t.udp bound udp/6/::/$u1/v6only -- udp_sendto 127.0.0.1 $u1;
		 $PROBE --token $t.dual bound udp/6/::/$u2/dual,reuseaddr -- udp_sendto 127.0.0.1 $u2"
	host_stop "$h1"
	host_stop "$h2"
	a_rc "$t.exit" 0 "$t"
	egr_jsonl "$t" 1
	a_eq "$t.tcp.held" "the [::] bind" "$P_held" "[\"OK [::]:$LO_PORT\"]"
	a_errno "$t.tcp.refused" ECONNREFUSED
	a_nogrep "$t.tcp.host_saw_nothing" "$W/sbx.log" "probe $t\\.tcp\$"
	a_jlog "$t.tcp.logged" "$W/$t.jlog" decision=deny source=bpf ip=127.0.0.1 "port=$LO_PORT" \
		"reason=loopback port not served by this sandbox" "pid=$P_pid"
	a_grep "$t.tcp.denial_line" "$W/$t.err" "^$(re "egressctl: denied python3[$P_pid] → 127.0.0.1:$LO_PORT (loopback port not served")"
	egr_jsonl "$t" 2
	a_errno "$t.udp.refused" EPERM
	a_nogrep "$t.udp.host_saw_nothing" "$RW/$t.u1.host" "probe $t\\.udp"
	a_jlog "$t.udp.logged" "$W/$t.jlog" decision=deny source=bpf ip=127.0.0.1 "port=$u1" "pid=$P_pid"
	egr_jsonl "$t" 3
	a_eq "$t.dual.held" "the dual-stack [::] bind" "$P_held" "[\"OK [::]:$u2\"]"
	a_errno "$t.dual.refused" EPERM
	a_nogrep "$t.dual.host_saw_nothing" "$RW/$t.u2.host" "probe $t\\.dual"
	a_jlog "$t.dual.logged" "$W/$t.jlog" decision=deny source=bpf ip=127.0.0.1 "port=$u2" "pid=$P_pid"
	a_nogrep "$t.summary.not_empty" "$W/$t.err" "no network attempts"
	a_grep "$t.summary.denied" "$W/$t.err" "^  denied +1  127\\.0\\.0\\.1:$LO_PORT +python3"
}

# ======================================================================
# the class of the [::] bind hole above: every way a bind could make a loopback port that a
# socket outside the sandbox serves look like the sandbox's own. Each
# attempt: control outside egressctl reaches the host service; confined,
# refused, the host service saw nothing, a deny line in the log. Those
# that got through before the fix: a v4-mapped destination next to a
# [::] bind, a 0.0.0.0 bind (UDP next to SO_REUSEADDR, TCP in front of a
# SO_REUSEPORT host listener), joining a host SO_REUSEPORT group (before
# or after the host socket), a port freed by shutdown() while the socket
# stays open. Refused before too: IP_FREEBIND binds elsewhere, connect to
# 0.0.0.0, a port freed by close(), a listener passed in from outside,
# IP_TRANSPARENT (no CAP_NET_ADMIN).
# ======================================================================
test_loopback_class() {
	local t=loopback_class u t1 t2 t3 t4 t5 t6 hu h1 h2 h6 hs=() n
	new_port u; new_port t1; new_port t2; new_port t3; new_port t4; new_port t5; new_port t6
	host_svc "$t.u" udp 127.0.0.1 "$u" reuseaddr || return 0
	hu=$HOST_PID
	host_svc "$t.t1" tcp 127.0.0.1 "$t1" reuseport 65534 || { host_stop "$hu"; return 0; }
	h1=$HOST_PID
	host_svc "$t.t2" tcp 127.0.0.1 "$t2" reuseport 65534 || { host_stop "$hu"; host_stop "$h1"; return 0; }
	h2=$HOST_PID
	host_svc "$t.t6" tcp 127.0.0.1 "$t6" "" "" --pass "$W/$t.pass.sock" ||
		{ host_stop "$hu"; host_stop "$h1"; host_stop "$h2"; return 0; }
	h6=$HOST_PID
	jvl "$(probe_nobody --token "$t.c.mapped" bound "tcp/6/::/$LO_PORT/v6only" -- tcp_mapped 127.0.0.1 "$LO_PORT")"
	a_eq "$t.control.mapped" "reply" "$P_data" "probe $t.c.mapped"
	jvl "$(probe_nobody --token "$t.c.zu" bound "udp/4/0.0.0.0/$u/reuseaddr" -- udp_sendto 127.0.0.1 "$u")"
	a_eq "$t.control.zero_bind_udp" "held, reply" "$P_held, $P_data" "[\"OK 0.0.0.0:$u\"], probe $t.c.zu"
	jvl "$(probe_nobody --token "$t.c.zt" bound "tcp/4/0.0.0.0/$t1/reuseport,listen" -- tcp4 127.0.0.1 "$t1")"
	a_eq "$t.control.zero_bind_tcp" "held, reply" "$P_held, $P_data" "[\"OK 0.0.0.0:$t1\"], probe $t.c.zt"
	jvl "$(probe_nobody --token "$t.c.join" bound "tcp/4/127.0.0.1/$t2/reuseport,listen" -- noop)"
	a_eq "$t.control.reuseport_join" "held" "$P_held" "[\"OK 127.0.0.1:$t2\"]"
	jvl "$(probe_nobody --token "$t.c.fb" bound "tcp/4/198.51.100.77/$LO_PORT/freebind" -- tcp4 127.0.0.1 "$LO_PORT")"
	a_eq "$t.control.freebind" "held, reply" "$P_held, $P_data" "[\"OK 198.51.100.77:$LO_PORT\"], probe $t.c.fb"
	jvl "$(probe_nobody --token "$t.c.zd" tcp4 0.0.0.0 "$LO_PORT")"
	a_eq "$t.control.zero_dst" "reply" "$P_data" "probe $t.c.zd"
	jvl "$(probe_nobody --token "$t.c.pass" recv_fd "$W/$t.pass.sock" -- tcp4 127.0.0.1 "$t6")"
	a_eq "$t.control.passed" "received, reply" "$P_received, $P_data" "127.0.0.1:$t6, probe $t.c.pass"
	if ! have_egr; then host_stop "$hu"; host_stop "$h1"; host_stop "$h2"; host_stop "$h6"; return 0; fi

	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody --log "$W/$t.jlog" -- /bin/sh -c \
		"$PROBE --token $t.mapped bound tcp/6/::/$LO_PORT/v6only -- tcp_mapped 127.0.0.1 $LO_PORT
		 $PROBE --token $t.zu bound udp/4/0.0.0.0/$u/reuseaddr -- udp_sendto 127.0.0.1 $u
		 $PROBE --token $t.zt bound tcp/4/0.0.0.0/$t1/reuseport,listen -- tcp4 127.0.0.1 $t1
		 $PROBE --token $t.join bound tcp/4/127.0.0.1/$t2/reuseport,listen -- tcp4 127.0.0.1 $t2
		 $PROBE --token $t.fb bound tcp/4/198.51.100.77/$LO_PORT/freebind -- tcp4 127.0.0.1 $LO_PORT
		 $PROBE --token $t.zd tcp4 0.0.0.0 $LO_PORT
		 $PROBE --token $t.pass recv_fd $W/$t.pass.sock -- tcp4 127.0.0.1 $t6
		 $PROBE ip_transparent
		 $PROBE --timeout 20 --token $t.late bound tcp/4/127.0.0.1/$t3/reuseport,listen ready=$RW/$t.late.ready wait=$W/$t.late.go -- tcp4 127.0.0.1 $t3
		 $PROBE --timeout 20 --token $t.sd bound tcp/4/127.0.0.1/$t4/reuseaddr,shutdown ready=$RW/$t.sd.ready wait=$W/$t.sd.go -- tcp4 127.0.0.1 $t4
		 $PROBE --timeout 20 --token $t.cl bound tcp/4/127.0.0.1/$t5/reuseaddr,listen,close ready=$RW/$t.cl.ready wait=$W/$t.cl.go -- tcp4 127.0.0.1 $t5"
	# the host service comes after the sandbox's socket: joins its
	# SO_REUSEPORT group (same uid), takes the port shutdown() or close() freed
	for n in "late $t3 reuseport 65534" "sd $t4 reuseaddr" "cl $t5 reuseaddr"; do
		set -- $n
		if ! wait_for 20 test -e "$RW/$t.$1.ready"; then
			fail "$t.$1.ready" "the sandbox never bound $2: $(head -c 300 "$W/$t.err")"
			touch "$W/$t.$1.go"
			continue
		fi
		host_svc "$t.$1" tcp 127.0.0.1 "$2" "$3" "${4:-}" && hs+=("$HOST_PID")
		touch "$W/$t.$1.go"
	done
	egr_join 30
	for n in "$hu" "$h1" "$h2" "$h6" "${hs[@]}"; do host_stop "$n"; done
	a_rc "$t.exit" 0 "$t"
	egr_jsonl "$t" 1
	a_errno "$t.mapped.refused" ECONNREFUSED
	a_nogrep "$t.mapped.host_saw_nothing" "$W/sbx.log" "probe $t\\.mapped\$"
	a_jlog "$t.mapped.logged" "$W/$t.jlog" decision=deny ip=127.0.0.1 "port=$LO_PORT" "pid=$P_pid"
	egr_jsonl "$t" 2
	a_eq "$t.zero_bind_udp.held" "bind" "$P_held" "[\"OK 0.0.0.0:$u\"]"
	a_errno "$t.zero_bind_udp.refused" EPERM
	a_nogrep "$t.zero_bind_udp.host_saw_nothing" "$RW/$t.u.host" "probe $t\\.zu"
	a_jlog "$t.zero_bind_udp.logged" "$W/$t.jlog" decision=deny ip=127.0.0.1 "port=$u" "pid=$P_pid"
	egr_jsonl "$t" 3
	a_eq "$t.zero_bind_tcp.held" "bind" "$P_held" "[\"OK 0.0.0.0:$t1\"]"
	a_errno "$t.zero_bind_tcp.refused" ECONNREFUSED
	a_nogrep "$t.zero_bind_tcp.host_saw_nothing" "$RW/$t.t1.host" "probe $t\\.zt"
	egr_jsonl "$t" 4
	a_eq "$t.reuseport_join.bind_refused" "bind" "$P_held" "[\"bind:EADDRINUSE\"]"
	a_errno "$t.reuseport_join.refused" ECONNREFUSED
	a_nogrep "$t.reuseport_join.host_saw_nothing" "$RW/$t.t2.host" "probe $t\\.join"
	a_jlog "$t.reuseport_join.bind_logged" "$W/$t.jlog" decision=deny "port=$t2" \
		"reason=address and port held outside the sandbox" "pid=$P_pid"
	egr_jsonl "$t" 5
	a_eq "$t.freebind.held" "bind" "$P_held" "[\"OK 198.51.100.77:$LO_PORT\"]"
	a_errno "$t.freebind.refused" ECONNREFUSED
	a_nogrep "$t.freebind.host_saw_nothing" "$W/sbx.log" "probe $t\\.fb\$"
	egr_jsonl "$t" 6
	a_errno "$t.zero_dst.refused" ECONNREFUSED
	a_nogrep "$t.zero_dst.host_saw_nothing" "$W/sbx.log" "probe $t\\.zd\$"
	a_jlog "$t.zero_dst.logged_as_loopback" "$W/$t.jlog" decision=deny ip=127.0.0.1 "port=$LO_PORT" "pid=$P_pid"
	egr_jsonl "$t" 7
	a_eq "$t.passed.received" "the passed listener" "$P_received" "127.0.0.1:$t6"
	a_errno "$t.passed.refused" ECONNREFUSED
	a_nogrep "$t.passed.host_saw_nothing" "$RW/$t.t6.host" "probe $t\\.pass"
	egr_jsonl "$t" 8
	a_errno "$t.ip_transparent.refused" EPERM
	egr_jsonl "$t" 9
	a_eq "$t.reuseport_joined_later.held" "bind" "$P_held" "[\"OK 127.0.0.1:$t3\"]"
	a_errno "$t.reuseport_joined_later.refused" ECONNREFUSED
	a_nogrep "$t.reuseport_joined_later.host_saw_nothing" "$RW/$t.late.host" "probe $t\\.late"
	egr_jsonl "$t" 10
	a_eq "$t.shutdown_reused.held" "bind" "$P_held" "[\"OK 127.0.0.1:$t4\"]"
	a_errno "$t.shutdown_reused.refused" ECONNREFUSED
	a_nogrep "$t.shutdown_reused.host_saw_nothing" "$RW/$t.sd.host" "probe $t\\.sd"
	egr_jsonl "$t" 11
	a_errno "$t.close_reused.refused" ECONNREFUSED
	a_nogrep "$t.close_reused.host_saw_nothing" "$RW/$t.cl.host" "probe $t\\.cl"
	a_jlog "$t.close_reused.logged" "$W/$t.jlog" decision=deny ip=127.0.0.1 "port=$t5" "pid=$P_pid"

	# --user root: no capability either, IP_TRANSPARENT stays refused
	egr "${t}_root" --cgroup "$(cg_name "${t}_r")" --user root -- "${PROBE_ARGV[@]}" ip_transparent
	egr_jsonl "${t}_root"
	a_errno "$t.ip_transparent_as_root.refused" EPERM
}

# ======================================================================
# the class of the [::] bind hole above, one more member: a host socket bound to the device
# "lo" (SO_BINDTODEVICE) receives in front of the sandbox's own socket on
# the same address and port, and connect/sendmsg cannot see it (their
# receive lookup has no device). The catch-all's lookup has the packet's
# device: the datagram is dropped there, the host service sees nothing.
# ======================================================================
test_loopback_device() {
	local t=loopback_device u h
	new_port u
	host_svc "$t.u" udp 127.0.0.1 "$u" reuseaddr,bindlo || return 0
	h=$HOST_PID
	# control: with the sandbox's socket bound too, the datagram reaches
	# the device-bound host service (plain echo, not "own-echo")
	jvl "$(probe_nobody --token "$t.c" bound "udp/4/127.0.0.1/$u/reuseaddr,serve" -- udp_sendto 127.0.0.1 "$u")"
	a_eq "$t.control.held" "bind" "$P_held" "[\"OK 127.0.0.1:$u\"]"
	a_eq "$t.control.host_answers" "reply" "$P_data" "probe $t.c"
	if ! have_egr; then host_stop "$h"; return 0; fi
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --log "$W/$t.jlog" -- \
		"${PROBE_ARGV[@]}" --token "$t.s" bound "udp/4/127.0.0.1/$u/reuseaddr,serve" -- udp_sendto 127.0.0.1 "$u"
	host_stop "$h"
	a_rc "$t.exit" 0 "$t"
	egr_jsonl "$t" 1
	a_eq "$t.held" "bind" "$P_held" "[\"OK 127.0.0.1:$u\"]"
	expect "$t.no_host_reply" "reply '$P_data'" test "$P_data" != "probe $t.s"
	a_nogrep "$t.host_saw_nothing" "$RW/$t.u.host" "probe $t\\.s"
	a_jlog "$t.dropped_logged" "$W/$t.jlog" decision=deny source=bpf ip=127.0.0.1 "port=$u" \
		"reason=loopback port not served by this sandbox"
}

# ======================================================================
# the sandbox's own loopback servers stay reachable -- TCP and UDP, IPv4
# and IPv6, specific, wildcard and dual-stack binds, 0.0.0.0 and :: as
# the destination, a server in a cgroup below the sandbox's -- and each is
# in the decision log and the summary as a local allow (an unconnected
# UDP socket: once per destination, not per datagram)
# ======================================================================
test_loopback_own() {
	local t=loopback_own p=() i sub pid
	for i in $(seq 14); do new_port "p[$i]"; done
	have_egr || return 0
	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody --log "$W/$t.jlog" -- /bin/sh -c \
		"$PROBE --token $t.v4 bound tcp/4/127.0.0.1/${p[1]}/serve -- tcp4 127.0.0.1 ${p[1]}
		 $PROBE --token $t.any4 bound tcp/4/0.0.0.0/${p[2]}/serve -- tcp4 127.0.0.2 ${p[2]}
		 $PROBE --token $t.zero bound tcp/4/127.0.0.1/${p[3]}/serve -- tcp4 0.0.0.0 ${p[3]}
		 $PROBE --token $t.v6 bound tcp/6/::1/${p[4]}/serve -- tcp6 ::1 ${p[4]}
		 $PROBE --token $t.any6 bound tcp/6/::/${p[5]}/v6only,serve -- tcp6 ::1 ${p[5]}
		 $PROBE --token $t.dual bound tcp/6/::/${p[6]}/dual,serve -- tcp4 127.0.0.1 ${p[6]}
		 $PROBE --token $t.mapped bound tcp/6/::/${p[7]}/dual,serve -- tcp_mapped 127.0.0.1 ${p[7]}
		 $PROBE --token $t.unspec bound tcp/6/::1/${p[8]}/serve -- tcp6 :: ${p[8]}
		 $PROBE --token $t.u4 bound udp/4/127.0.0.1/${p[9]}/serve -- udp_sendto 127.0.0.1 ${p[9]}
		 $PROBE --token $t.uconn bound udp/4/0.0.0.0/${p[10]}/serve -- udp_connected_send 127.0.0.1 ${p[10]}
		 $PROBE --token $t.u6 bound udp/6/::/${p[11]}/v6only,serve -- udp6_sendto ::1 ${p[11]}
		 $PROBE --token $t.udual bound udp/6/::/${p[12]}/dual,serve -- udp_sendto 127.0.0.1 ${p[12]}
		 $PROBE --token $t.mmsg bound udp/4/127.0.0.1/${p[13]}/serve -- sendmmsg 127.0.0.1 ${p[13]}
		 $PROBE --timeout 20 --wait $W/$t.moved bound tcp/4/127.0.0.1/${p[14]}/serve ready=$RW/$t.sub.ready -- hold_until $W/$t.sub.end >$RW/$t.sub.out &
		 echo \$! >$RW/$t.sub.pid
		 $PROBE --wait $RW/$t.sub.ready --token $t.sub tcp4 127.0.0.1 ${p[14]}
		 touch $W/$t.sub.end; wait"
	# a server in a cgroup below the sandbox's: its process is moved there
	# before it makes its socket
	sub=$(cg_path "$t")/sub
	if wait_for 20 test -s "$RW/$t.sub.pid" && mkdir "$sub" &&
		pid=$(cat "$RW/$t.sub.pid") && echo "$pid" >"$sub/cgroup.procs"; then
		ok "$t.sub.moved"
	else
		fail "$t.sub.moved" "could not move the server into $sub"
	fi
	touch "$W/$t.moved"
	egr_join 30
	a_rc "$t.exit" 0 "$t"
	for i in "1 v4" "2 any4" "3 zero" "4 v6" "5 any6" "6 dual" "7 mapped" "8 unspec" "9 u4" "10 uconn" "11 u6" "12 udual"; do
		set -- $i
		egr_jsonl "$t" "$1"
		a_eq "$t.$2.reached" "reply" "$P_data" "own-echo probe $t.$2"
	done
	egr_jsonl "$t" 13
	a_eq "$t.mmsg.sent" "datagrams sent" "$P_sent" 2
	expect "$t.mmsg.reached" "first reply '$P_data', want own-echo probe $t.mmsg..." \
		test "${P_data#"own-echo probe $t.mmsg"}" != "$P_data"
	egr_jsonl "$t" 14
	a_eq "$t.sub.reached" "reply" "$P_data" "own-echo probe $t.sub"
	a_grep "$t.sub.server_was_below" "$RW/$t.sub.out" "\"cg\": \"0::(/.*)?/sub\""
	a_jlog "$t.v4.logged" "$W/$t.jlog" decision=allow source=bpf ip=127.0.0.1 "port=${p[1]}" \
		"reason=loopback socket of this sandbox"
	a_jlog "$t.zero.logged_as_loopback" "$W/$t.jlog" decision=allow ip=127.0.0.1 "port=${p[3]}"
	a_jlog "$t.v6.logged" "$W/$t.jlog" decision=allow ip=::1 "port=${p[4]}"
	a_jlog "$t.u4.logged" "$W/$t.jlog" decision=allow ip=127.0.0.1 "port=${p[9]}"
	a_jlog_n "$t.mmsg.logged_once" "$W/$t.jlog" 1 decision=allow "port=${p[13]}"
	a_jlog_none "$t.nothing_denied" "$W/$t.jlog" "decision=(deny|would-deny)"
	a_nogrep "$t.summary.not_empty" "$W/$t.err" "no network attempts"
	a_grep "$t.summary.allowed" "$W/$t.err" "^  allowed +1  127\\.0\\.0\\.1:${p[1]}\$"
}

# ======================================================================
# audit mode: a loopback would-deny must be reported once. While the catch-all
# learnt to check loopback packets (this branch) it reported it a second time,
# without the task, after connect/sendmsg had. The attempt goes through (audit denies
# nothing): the host service saw it.
# ======================================================================
test_loopback_audit() {
	local t=loopback_audit u h
	new_port u
	host_svc "$t.u" udp 127.0.0.1 "$u" || return 0
	h=$HOST_PID
	have_egr || { host_stop "$h"; return 0; }
	egr "$t" --audit --cgroup "$(cg_name "$t")" --user nobody --log "$W/$t.jlog" -- /bin/sh -c \
		"$PROBE --token $t.tcp tcp4 127.0.0.1 $LO_PORT; $PROBE --token $t.udp udp_sendto 127.0.0.1 $u"
	host_stop "$h"
	a_rc "$t.exit" 0 "$t"
	egr_jsonl "$t" 1
	a_eq "$t.tcp.passed" "reply" "$P_data" "probe $t.tcp"
	egr_jsonl "$t" 2
	a_eq "$t.udp.passed" "reply" "$P_data" "probe $t.udp"
	a_grep "$t.udp.host_saw_it" "$RW/$t.u.host" "probe $t\\.udp"
	a_jlog_n "$t.tcp.reported_once" "$W/$t.jlog" 1 decision=would-deny ip=127.0.0.1 "port=$LO_PORT"
	a_jlog_n "$t.udp.reported_once" "$W/$t.jlog" 1 decision=would-deny ip=127.0.0.1 "port=$u"
	a_jlog "$t.tcp.with_its_task" "$W/$t.jlog" decision=would-deny "port=$LO_PORT" "comm=python3" \
		"reason=loopback port not served by this sandbox"
}


# ======================================================================
# loopback_serve: a server CMD starts on 0.0.0.0 answers a client of this
# host that comes from one of the host's own addresses other than
# loopback (the sandbox host's 198.18.0.2: a test that opens the
# machine's own name), and a client elsewhere (the internet) gets
# nothing: no SYN-ACK leaves (the sensor), and the drop is logged. The
# control: the same server outside egressctl answers that client. Before,
# the host's own address got nothing either (the catch-all dropped every
# answer of an accepted socket that did not go over loopback).
# ======================================================================
test_loopback_serve() {
	local t=loopback_serve p c cp
	new_port p
	new_port c
	in_sbx "$PY" "$C/probe.py" --timeout 20 bound "tcp/4/0.0.0.0/$c/serve" ready="$W/$t.c.ready" \
		-- hold_until "$W/$t.c.end" >"$W/$t.c.out" 2>&1 &
	cp=$!
	wait_for 10 test -e "$W/$t.c.ready"
	jv "$(timeout -k 1 20 nsenter --net="$NS_INET" "$PY" "$C/probe.py" --timeout 5 \
		--token "$t.ctl" tcp4 198.18.0.2 "$c" | grep '^{' | tail -1)"
	a_eq "$t.control.outside_answered" "reply" "$P_data" "own-echo probe $t.ctl"
	touch "$W/$t.c.end"
	wait "$cp"
	sensor_saw "$t.control.sensor" "src host 198.18.0.2 and src port $c"
	have_egr || return 0
	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody --log "$W/$t.jlog" -- \
		"${PROBE_ARGV[@]}" --timeout 25 bound "tcp/4/0.0.0.0/$p/serve" ready="$RW/$t.ready" \
		-- hold_until "$RW/$t.end"
	wait_for 20 test -e "$RW/$t.ready"
	jv "$(probe_root --token "$t.host" tcp4 198.18.0.2 "$p")"
	a_eq "$t.host.answered" "reply" "$P_data" "own-echo probe $t.host"
	jv "$(timeout -k 1 20 nsenter --net="$NS_INET" "$PY" "$C/probe.py" --timeout 4 \
		--token "$t.out" tcp4 198.18.0.2 "$p" | grep '^{' | tail -1)"
	expect "$t.outside.not_answered" "the internet's client got '$P_data' ($P_json)" \
		test "$P_ok" != true
	touch "$RW/$t.end"
	egr_join 30
	a_rc "$t.exit" 0 "$t"
	sensor_none "$t.outside.sensor" "src host 198.18.0.2 and src port $p"
	a_jlog "$t.outside.logged" "$W/$t.jlog" decision=deny ip=198\\.18\\.0\\.1 \
		"reason=dropped by the catch-all"
}


ALL_TESTS="loopback loopback_wildcard loopback_class loopback_device loopback_own loopback_serve loopback_audit"

kernel_suite_main loopback.sh "$@"
