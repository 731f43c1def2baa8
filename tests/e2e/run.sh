#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of `egressctl run`: every egress bypass vector of
# docs/kernel.md ("The hooks, one by one", "What the hooks alone do not
# stop"), each asserted BOTH ways. Loopback (CMD's own servers, the host's,
# and every way to pass one for the other): loopback.sh.
#
#   sudo tests/e2e/run.sh build/egressctl        (make e2e does this)
#   E2E_TESTS="tcp_redirect dns" ...  run only these test functions
#   E2E_CONTROL_ONLY=1 ...            only the control halves (no binary needed)
#   E2E_KEEP=1 ...                    keep /tmp/egr-e2e-PID (logs, pcap)
#   TLISTEN=path ...                  tlisten helper (default: <egressctl dir>/helpers/tlisten)
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion ("# ..." lines are
# notes), and as the last line "N passed, M failed".  Exit 1 if any failed,
# 77 if not root or no cgroup2.
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
# TCP (IPv4) to an address outside loopback -> transparent listener
# ======================================================================
test_tcp_redirect() {
	local t=tcp_redirect c a b tp np
	new4 c; new4 a; new4 b; new_port tp; new_port np
	jv "$(probe_nobody --token "$t.c" tcp4 "$c" 80)"
	a_ok "$t.control.connect"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	sensor_saw "$t.control.sensor" "tcp and dst host $c"
	have_egr || return 0

	# (tlisten answers and closes without reading the request: curl may then
	# see a RST after the ORIG line and exit 56; its status is not the point)
	with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" -- /bin/sh -c \
		"$PROBE --wait $W/$t.go --token $t.x tcp4 $a 80; curl --noproxy '*' --http0.9 -sS --max-time 3 http://$a:8080/; true" ||
		return 0
	a_rc "$t.exit" 0 "$t"
	egr_json "$t"
	a_ok "$t.connect"
	a_eq "$t.getpeername" "getpeername() in the client" "$P_peer" "$a:80"
	a_eq "$t.orig" "line from tlisten" "$P_data" "ORIG $a:80 pid=$P_pid comm=python3 reason=transparent"
	a_grep "$t.tlisten_saw" "$W/$t.tl" "^$(re "ORIG $a:80 pid=$P_pid comm=python3 reason=transparent")\$"
	a_grep "$t.curl" "$W/$t.out" "^$(re "ORIG $a:8080") pid=[0-9]+ comm=curl reason=transparent\$"
	a_nogrep "$t.inet_saw_nothing" "$W/inet.log" "$(re "local=$a:")"
	sensor_none "$t.sensor" "dst host $a"

	# a --transparent-port nobody listens on: refused at connect()
	egr "${t}_nolistener" --cgroup "$(cg_name "${t}_nol")" --user nobody \
		--transparent-port "$np" -- "${PROBE_ARGV[@]}" tcp4 "$b" 80
	a_rc "$t.nolistener.exit" 0 "${t}_nolistener"
	egr_json "${t}_nolistener"
	a_errno "$t.nolistener.refused" ECONNREFUSED
	sensor_none "$t.nolistener.sensor" "dst host $b"

	# egressctl's own transparent listener, no rule: the proxy resets it
	egr "${t}_norule" --cgroup "$(cg_name "${t}_nor")" --user nobody -- "${PROBE_ARGV[@]}" tcp4 "$b" 80
	a_rc "$t.norule.exit" 0 "${t}_norule"
	egr_json "${t}_norule"
	a_errno "$t.norule.reset" ECONNRESET
	a_grep "$t.norule.line" "$W/${t}_norule.err" "denied python3\\[[0-9]+\\] → ${b//./\\.}:80 \\(no rule allows it, transparent\\)"
	sensor_none "$t.norule.sensor" "dst host $b"
}

# ======================================================================
# native IPv6 (TCP connect, UDP sendto): denied; the denial line; --quiet
# ======================================================================
test_ipv6() {
	local t=ipv6 c d a b e
	new6 c; new6 d; new6 a; new6 b; new6 e
	jv "$(probe_nobody --token "$t.c" tcp6 "$c" 80)"
	a_ok "$t.control.tcp6"
	a_eq "$t.control.tcp6_echo" "reply" "$P_data" "probe $t.c"
	jv "$(probe_nobody --token "$t.d" udp6_sendto "$d" 7)"
	a_ok "$t.control.udp6"
	a_eq "$t.control.udp6_echo" "reply" "$P_data" "probe $t.d"
	sensor_saw "$t.control.sensor_tcp6" "ip6 and tcp and dst host $c"
	sensor_saw "$t.control.sensor_udp6" "ip6 and udp and dst host $d"
	have_egr || return 0

	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- /bin/sh -c \
		"$PROBE tcp6 $a 80; $PROBE udp6_sendto $b 7"
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_denied "$t.tcp6_denied"
	a_grep "$t.denial_line" "$W/$t.err" "^$(re "egressctl: denied python3[$P_pid] → [$a]:80 (")"
	egr_json "$t" 2
	a_denied "$t.udp6_denied"
	sensor_none "$t.sensor_tcp6" "dst host $a"
	sensor_none "$t.sensor_udp6" "dst host $b"

	egr "${t}_quiet" --cgroup "$(cg_name "${t}_q")" --quiet --user nobody -- "${PROBE_ARGV[@]}" tcp6 "$e" 80
	egr_json "${t}_quiet"
	a_denied "$t.quiet.denied"
	a_nogrep "$t.quiet.no_denial_line" "$W/${t}_quiet.err" "egressctl: denied"
	sensor_none "$t.quiet.sensor" "dst host $e"
}

# ======================================================================
# IPv4-mapped IPv6 (AF_INET6 socket to ::ffff:a.b.c.d): connect6 branch
# ======================================================================
test_mapped() {
	local t=mapped c a tp
	new4 c; new4 a; new_port tp
	jv "$(probe_nobody --token "$t.c" tcp_mapped "$c" 80)"
	a_ok "$t.control.connect"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	sensor_saw "$t.control.sensor" "tcp and dst host $c"
	have_egr || return 0

	with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" -- \
		"${PROBE_ARGV[@]}" --wait "$W/$t.go" tcp_mapped "$a" 80 || return 0
	a_rc "$t.exit" 0 "$t"
	egr_json "$t"
	a_ok "$t.connect"
	a_eq "$t.getpeername" "getpeername() in the client" "$P_peer" "[::ffff:$a]:80"
	a_eq "$t.orig" "line from tlisten" "$P_data" "ORIG $a:80 pid=$P_pid comm=python3 reason=transparent"
	sensor_none "$t.sensor" "dst host $a"
}

# ======================================================================
# UDP: sendto, connected send, sendmmsg (DNS port configured: still denied)
# ======================================================================
test_udp() {
	local t=udp c1 c2 c3 a1 a2 a3
	new4 c1; new4 c2; new4 c3; new4 a1; new4 a2; new4 a3
	jv "$(probe_nobody --token "$t.c1" udp_sendto "$c1" 7)"
	a_ok "udp_sendto.control.send"
	a_eq "udp_sendto.control.echo" "reply from $P_peer" "$P_data" "probe $t.c1"
	jv "$(probe_nobody --token "$t.c2" udp_connected_send "$c2" 7)"
	a_ok "udp_connected.control.send"
	a_eq "udp_connected.control.echo" "reply" "$P_data" "probe $t.c2"
	jv "$(probe_nobody --token "$t.c3" sendmmsg "$c3" 7)"
	a_ok "sendmmsg.control.send"
	sensor_saw "udp_sendto.control.sensor" "udp and dst host $c1"
	sensor_saw "udp_connected.control.sensor" "udp and dst host $c2"
	sensor_saw "sendmmsg.control.sensor" "udp and dst host $c3"
	have_egr || return 0

	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-port "$DNS_PORT" -- /bin/sh -c \
		"$PROBE udp_sendto $a1 7; $PROBE udp_connected_send $a2 7; $PROBE sendmmsg $a3 7"
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_denied "udp_sendto.denied"
	a_grep "udp_sendto.denial_line" "$W/$t.err" "^$(re "egressctl: denied python3[$P_pid] → $a1:7 (")"
	egr_json "$t" 2
	a_denied "udp_connected.denied"
	egr_json "$t" 3
	a_denied "sendmmsg.denied"
	sensor_none "udp_sendto.sensor" "dst host $a1"
	sensor_none "udp_connected.sensor" "dst host $a2"
	sensor_none "sendmmsg.sensor" "dst host $a3"
}

# ======================================================================
# DNS over UDP (sendto, connected) and TCP to ANY resolver address
# -> the suite's DNS listener; replies appear to come from the resolver
# ======================================================================
test_dns() {
	local t=dns c1 c2 c3 c4 a1 a2 a3 a4 a5 a6 n
	new4 c1; new4 c2; new4 c3; new4 c4; new4 a1; new4 a2; new4 a3; new4 a4; new4 a5; new4 a6
	jv "$(probe_nobody dns_udp "$c1" "c1-$$.test")"
	a_ok "dns_udp.control.answer"
	a_eq "dns_udp.control.data" "A records" "$P_data" "$INET_ANSWER"
	a_eq "dns_udp.control.source" "reply source" "$P_source" "$c1:53"
	jv "$(probe_nobody dns_udp_connected "$c2" "c2-$$.test")"
	a_ok "dns_udp_connected.control.answer"
	a_eq "dns_udp_connected.control.data" "A records" "$P_data" "$INET_ANSWER"
	jv "$(probe_nobody dns_tcp "$c3" "c3-$$.test")"
	a_ok "dns_tcp.control.answer"
	a_eq "dns_tcp.control.data" "A records" "$P_data" "$INET_ANSWER"
	n=$(timeout 10 nsenter --net="$NS_SBX" setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		dig +short +time=2 +tries=1 @"$c4" "c4-$$.test" A 2>&1)
	a_eq "dns_dig.control.answer" "dig +short" "$n" "$INET_ANSWER"
	sensor_saw "dns_udp.control.sensor" "udp and dst host $c1 and dst port 53"
	sensor_saw "dns_udp_connected.control.sensor" "udp and dst host $c2 and dst port 53"
	sensor_saw "dns_tcp.control.sensor" "tcp and dst host $c3 and dst port 53"
	sensor_saw "dns_dig.control.sensor" "udp and dst host $c4 and dst port 53"
	have_egr || return 0

	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-port "$DNS_PORT" -- /bin/sh -c \
		"$PROBE dns_udp $a1 x1-$$.test; $PROBE dns_udp_connected $a2 x2-$$.test; $PROBE dns_tcp $a3 x3-$$.test;
		 echo DIG4=\$(dig +short +time=2 +tries=1 @$a4 x4-$$.test A 2>&1 | tr '\n' ' ');
		 echo DIG5=\$(dig +tcp +short +time=2 +tries=1 @$a5 x5-$$.test A 2>&1 | tr '\n' ' ')"
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_ok "dns_udp.redirected"
	a_eq "dns_udp.answer" "A records (the listener's)" "$P_data" "$SBX_ANSWER"
	a_eq "dns_udp.reply_source" "recvfrom() source" "$P_source" "$a1:53"
	a_grep "dns_udp.listener_saw" "$W/sbx.log" "^DNS udp .* name=$(re "x1-$$.test") "
	egr_json "$t" 2
	a_ok "dns_udp_connected.redirected"
	a_eq "dns_udp_connected.answer" "A records" "$P_data" "$SBX_ANSWER"
	a_eq "dns_udp_connected.getpeername" "getpeername()" "$P_peer" "$a2:53"
	a_grep "dns_udp_connected.listener_saw" "$W/sbx.log" "^DNS udp .* name=$(re "x2-$$.test") "
	egr_json "$t" 3
	a_ok "dns_tcp.redirected"
	a_eq "dns_tcp.answer" "A records" "$P_data" "$SBX_ANSWER"
	a_eq "dns_tcp.getpeername" "getpeername()" "$P_peer" "$a3:53"
	a_grep "dns_tcp.listener_saw" "$W/sbx.log" "^DNS tcp .* name=$(re "x3-$$.test") "
	a_grep "dns_dig.answer" "$W/$t.out" "^DIG4=$(re "$SBX_ANSWER")\$"
	a_grep "dns_dig_tcp.answer" "$W/$t.out" "^DIG5=$(re "$SBX_ANSWER")\$"
	sensor_none "dns_udp.sensor" "dst host $a1"
	sensor_none "dns_udp_connected.sensor" "dst host $a2"
	sensor_none "dns_tcp.sensor" "dst host $a3"
	sensor_none "dns_dig.sensor" "dst host $a4 or dst host $a5"
	a_nogrep "dns.inet_saw_nothing" "$W/inet.log" "name=x[0-9]-$$\\.test"

	# no --dns-port: egressctl's own responder answers, and with no rule
	# that could allow the name it refuses it (REFUSED), sending nothing on
	egr "${t}_nodns" --cgroup "$(cg_name "${t}_nd")" --user nobody -- "${PROBE_ARGV[@]}" dns_udp "$a6" "x6-$$.test"
	egr_json "${t}_nodns"
	a_eq "dns.no_dns_port.refused" "answer" "$P_errno" "RCODE5"
	a_eq "dns.no_dns_port.source" "reply source" "$P_peer" "$a6:53"
	sensor_none "dns.no_dns_port.sensor" "dst host $a6"
}

# ======================================================================
# unix sockets: abstract connect/sendto EPERM, filesystem sockets work
# ======================================================================
test_unix() {
	local t=unix
	jv "$(probe_nobody --token "$t.c1" abstract_connect "$ABS_NAME")"
	a_ok "abstract_connect.control"
	a_eq "abstract_connect.control.echo" "reply" "$P_data" "probe $t.c1"
	jv "$(probe_nobody --token "$t.c2" abstract_sendto "$ABSD_NAME")"
	a_ok "abstract_sendto.control"
	jv "$(probe_nobody --token "$t.c3" unix_path "$W/fs.sock")"
	a_ok "unix_path.control"
	jv "$(probe_nobody --token "$t.c4" unix_path_sendto "$W/fsd.sock")"
	a_ok "unix_path_sendto.control"
	wait_for 2 grep -q "probe $t.c2" "$W/sbx.log"
	a_grep "abstract_sendto.control.received" "$W/sbx.log" "unix_dgram local=@$ABS_NAME.* probe $t\\.c2\$"
	have_egr || return 0

	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- /bin/sh -c \
		"$PROBE --token $t.x1 abstract_connect $ABS_NAME; $PROBE --token $t.x2 abstract_sendto $ABSD_NAME;
		 $PROBE --token $t.x3 unix_path $W/fs.sock; $PROBE --token $t.x4 unix_path_sendto $W/fsd.sock"
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_errno "abstract_connect.denied" EPERM
	egr_json "$t" 2
	a_errno "abstract_sendto.denied" EPERM
	egr_json "$t" 3
	a_ok "unix_path.works"
	a_eq "unix_path.echo" "reply" "$P_data" "probe $t.x3"
	egr_json "$t" 4
	a_ok "unix_path_sendto.works"
	wait_for 2 grep -q "probe $t.x4" "$W/sbx.log"
	a_grep "unix_path_sendto.received" "$W/sbx.log" "probe $t\\.x4\$"
	a_nogrep "abstract.server_saw_nothing" "$W/sbx.log" "probe $t\\.x[12]\$"
}

# ======================================================================
# raw, packet, ping sockets
# ======================================================================
test_raw() {
	local t=raw c a b
	new4 c; new4 a; new4 b
	jv "$(probe_root raw "$c")"
	a_ok "$t.control.root"
	sensor_saw "$t.control.sensor" "icmp and dst host $c"
	have_egr || return 0
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- "${PROBE_ARGV[@]}" raw "$a"
	egr_json "$t"
	a_denied "$t.nobody.denied"
	egr "${t}_root" --cgroup "$(cg_name "${t}_r")" --user root -- "${PROBE_ARGV[@]}" raw "$b"
	egr_json "${t}_root"
	a_denied "$t.root.denied"
	sensor_none "$t.nobody.sensor" "dst host $a"
	sensor_none "$t.root.sensor" "dst host $b"
}

test_packet() {
	local t=packet
	jv "$(probe_root packet "$SBX_IF" 02:00:00:e2:e2:01)"
	a_ok "$t.control.root"
	sensor_saw "$t.control.sensor" "ether dst 02:00:00:e2:e2:01"
	have_egr || return 0
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- "${PROBE_ARGV[@]}" packet "$SBX_IF" 02:00:00:e2:e2:02
	egr_json "$t"
	a_errno "$t.nobody.eafnosupport" EAFNOSUPPORT
	egr "${t}_root" --cgroup "$(cg_name "${t}_r")" --user root -- "${PROBE_ARGV[@]}" packet "$SBX_IF" 02:00:00:e2:e2:03
	egr_json "${t}_root"
	a_errno "$t.root.eafnosupport" EAFNOSUPPORT
	sensor_none "$t.nobody.sensor" "ether dst 02:00:00:e2:e2:02"
	sensor_none "$t.root.sensor" "ether dst 02:00:00:e2:e2:03"
}

test_ping() {
	local t=ping c a
	new4 c; new4 a
	jv "$(probe_nobody ping "$c")"
	a_ok "$t.control.nobody"
	a_eq "$t.control.reply" "reply" "$P_data" "echo-reply"
	sensor_saw "$t.control.sensor" "icmp and dst host $c"
	have_egr || return 0
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- "${PROBE_ARGV[@]}" ping "$a"
	egr_json "$t"
	a_denied "$t.denied"
	sensor_none "$t.sensor" "dst host $a"
}

# ======================================================================
# The cgroup_skb catch-all on its own: with sock_create left out (the
# EGR_TESTING build's --test-skip-prog), a ping socket can be created, and its
# sendto() has no sock_addr hook -- only the catch-all stands between it and
# the wire.
# ======================================================================
test_catchall() {
	local t=catchall a
	new4 a
	have_egr || return 0
	test_build "$t" || return 0
	EGRESSCTL="$EGRT" egr "$t" --cgroup "$(cg_name "$t")" --user nobody \
		--test-skip-prog sock_create -- "${PROBE_ARGV[@]}" ping "$a"
	egr_json "$t"
	a_denied "$t.denied"
	sensor_none "$t.sensor" "dst host $a"
	a_grep "$t.reported" "$W/$t.err" "denied a socket of cgroup [0-9]+ → ${a//./\\.}:0 \\(dropped by the catch-all\\)"
}

# ======================================================================
# TCP Fast Open: sendto(MSG_FASTOPEN) goes through the same redirect
# ======================================================================
test_tfo() {
	local t=tfo c a tp
	new4 c; new4 a; new_port tp
	jv "$(probe_nobody --token "$t.c" tfo "$c" 80)"
	a_ok "$t.control.sendto"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	sensor_saw "$t.control.sensor" "tcp and dst host $c"
	have_egr || return 0
	with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" -- \
		"${PROBE_ARGV[@]}" --wait "$W/$t.go" tfo "$a" 80 || return 0
	egr_json "$t"
	a_ok "$t.sendto"
	a_eq "$t.getpeername" "getpeername()" "$P_peer" "$a:80"
	a_eq "$t.orig" "line from tlisten" "$P_data" "ORIG $a:80 pid=$P_pid comm=python3 reason=transparent"
	sensor_none "$t.sensor" "dst host $a"
}

# ======================================================================
# io_uring IORING_OP_CONNECT: io_uring is disabled in the sandbox
# ======================================================================
test_io_uring() {
	local t=io_uring c a
	new4 c; new4 a
	jv "$(probe_nobody --token "$t.c" io_uring_connect "$c" 80)"
	a_ok "$t.control.connect"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	sensor_saw "$t.control.sensor" "tcp and dst host $c"
	have_egr || return 0
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- "${PROBE_ARGV[@]}" io_uring_connect "$a" 80
	egr_json "$t"
	a_errno "$t.enosys" ENOSYS
	sensor_none "$t.sensor" "dst host $a"
}

# ======================================================================
# UDP-Lite, MPTCP, vsock (socket creation only: never connect vsock)
# ======================================================================
test_udplite() {
	local t=udplite c a
	new4 c; new4 a
	jv "$(probe_nobody udplite "$c" 7)"
	a_ok "$t.control.sendto"
	sensor_saw "$t.control.sensor" "ip proto 136 and dst host $c"
	have_egr || return 0
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-port "$DNS_PORT" -- "${PROBE_ARGV[@]}" udplite "$a" 53
	egr_json "$t"
	a_denied "$t.denied"
	sensor_none "$t.sensor" "dst host $a"
}

test_mptcp() {
	local t=mptcp c a tp
	new4 c; new4 a; new_port tp
	jv "$(probe_nobody --token "$t.c" mptcp "$c" 80)"
	a_ok "$t.control.connect"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	sensor_saw "$t.control.sensor" "tcp and dst host $c"
	have_egr || return 0
	# with a transparent listener up, so that "redirected" is told from "denied"
	with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" -- \
		"${PROBE_ARGV[@]}" --wait "$W/$t.go" mptcp "$a" 80 || return 0
	egr_json "$t"
	a_denied "$t.denied"
	sensor_none "$t.sensor" "dst host $a"
}

test_vsock() {
	local t=vsock
	jv "$(probe_nobody vsock)"
	a_ok "$t.control.socket_created"
	have_egr || return 0
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody -- "${PROBE_ARGV[@]}" vsock
	egr_json "$t"
	a_errno "$t.eafnosupport" EAFNOSUPPORT
}

# ======================================================================
# a double-forked, setsid grandchild is still confined
# ======================================================================
test_doublefork() {
	local t=doublefork c a tp
	new4 c; new4 a; new_port tp
	jv "$(probe_nobody --token "$t.c" doublefork tcp4 "$c" 80)"
	a_ok "$t.control.connect"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	sensor_saw "$t.control.sensor" "tcp and dst host $c"
	have_egr || return 0
	with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" -- \
		"${PROBE_ARGV[@]}" --wait "$W/$t.go" doublefork tcp4 "$a" 80 || return 0
	egr_json "$t"
	a_ok "$t.connect"
	if [ -n "$P_pid" ] && [ "$P_pid" != "$P_parent_pid" ]; then ok "$t.is_grandchild"; else
		fail "$t.is_grandchild" "result not from a grandchild: $P_json"
	fi
	a_eq "$t.orig" "line from tlisten" "$P_data" "ORIG $a:80 pid=$P_pid comm=python3 reason=transparent"
	sensor_none "$t.sensor" "dst host $a"
}

# ======================================================================
# writing cgroup.procs of another cgroup (as nobody with a delegated
# subtree, and as root without capabilities)
# ======================================================================
test_cgroup_escape() {
	local t=cgroup_escape D=$CGROOT/egr-e2e-$$-deleg a b
	new4 a; new4 b
	if ! mkdir -p "$D/a" "$D/b" "$D/r" || ! chown -R 65534:65534 "$D"; then
		fail "$t.setup" "cannot create delegated cgroups under $D"
		return 0
	fi
	# control, nobody: D is delegated to nobody, so a process of nobody in D/a
	# may move itself to D/b -- if it can see cgroupfs
	jv "$(timeout 20 nsenter --net="$NS_SBX" /bin/sh -c "echo \$\$ >$D/a/cgroup.procs &&
		exec setpriv --reuid=65534 --regid=65534 --clear-groups -- $PY $C/probe.py cgroup_escape $D/b/cgroup.procs" | grep '^{')"
	a_ok "$t.control.nobody_delegated"
	a_eq "$t.control.nobody_moved" "own cgroup after the write" "$P_data" "0::${D#"$CGROOT"}/b"
	# control, uid 0 with no capabilities at all: writes the root cgroup
	jv "$(timeout 20 nsenter --net="$NS_SBX" /bin/sh -c "echo \$\$ >$D/a/cgroup.procs &&
		exec setpriv --bounding-set=-all --inh-caps=-all -- $PY $C/probe.py cgroup_escape $CGROOT/cgroup.procs" | grep '^{')"
	a_ok "$t.control.root_nocaps"
	a_eq "$t.control.root_moved" "own cgroup after the write" "$P_data" "0::/"
	have_egr || return 0

	egr "${t}_nobody" --cgroup "$D/a" --user nobody -- /bin/sh -c \
		"$PROBE cgroup_escape $D/b/cgroup.procs; $PROBE cgroup_escape $CGROOT/cgroup.procs; $PROBE tcp4 $a 80"
	a_rc "$t.nobody.exit" 0 "${t}_nobody"
	egr_json "${t}_nobody" 1
	a_denied "$t.nobody.delegated_write_fails"
	egr_json "${t}_nobody" 2
	a_denied "$t.nobody.root_write_fails"
	egr_json "${t}_nobody" 3
	a_denied "$t.nobody.still_confined"
	sensor_none "$t.nobody.sensor" "dst host $a"

	egr "${t}_root" --cgroup "$D/r" --user root -- /bin/sh -c \
		"$PROBE cgroup_escape $CGROOT/cgroup.procs; $PROBE cgroup_escape $D/b/cgroup.procs; $PROBE tcp4 $b 80"
	a_rc "$t.root.exit" 0 "${t}_root"
	egr_json "${t}_root" 1
	a_denied "$t.root.root_write_fails"
	egr_json "${t}_root" 2
	a_denied "$t.root.delegated_write_fails"
	egr_json "${t}_root" 3
	a_denied "$t.root.still_confined"
	sensor_none "$t.root.sensor" "dst host $b"
}

# ======================================================================
# bpf(): BPF_PROG_DETACH of a legacy attachment, and bpf() at all
# ======================================================================
test_bpf() {
	local t=bpf L=$CGROOT/egr-e2e-$$-legacy a u ubpf
	new4 a
	mkdir -p "$L" || { fail "$t.setup" "mkdir $L"; return 0; }
	jv "$(probe_root bpf_attach_legacy "$L")"
	a_ok "$t.setup.attach_legacy"
	# control: an unprivileged process removes a legacy (non-MULTI)
	# attachment -- where the host lets an unprivileged process call bpf()
	# at all (kernel.unprivileged_bpf_disabled=0); Debian's default 2
	# refuses it before any cgroup check, so there is nothing to show
	ubpf=$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null || echo 0)
	if [ "$ubpf" = 0 ]; then
		jv "$(probe_nobody bpf_detach "$L")"
		if [ "$P_ok" != true ] && [ "$P_errno" = EPERM ]; then
			# 6.18 asks CAP_NET_ADMIN for it (docs/kernel.md)
			note "$t.control.nobody_detaches_legacy skipped: this kernel refuses an unprivileged BPF_PROG_DETACH itself (EPERM without CAP_NET_ADMIN)"
		else
			a_ok "$t.control.nobody_detaches_legacy"
		fi
	else
		note "$t.control.nobody_detaches_legacy skipped: kernel.unprivileged_bpf_disabled=$ubpf refuses every unprivileged bpf() on this host (the confined halves still run)"
	fi
	jv "$(probe_root bpf_any)"
	a_ok "$t.control.root_map_create"
	have_egr || return 0
	jv "$(probe_root bpf_attach_legacy "$L")"
	for u in nobody root; do
		egr "${t}_$u" --cgroup "$(cg_name "${t}_$u")" --user "$u" -- /bin/sh -c \
			"$PROBE bpf_detach $L; $PROBE bpf_any; $PROBE tcp4 $a 80"
		a_rc "$t.$u.exit" 0 "${t}_$u"
		egr_json "${t}_$u" 1
		a_errno "$t.$u.detach_eperm" EPERM
		egr_json "${t}_$u" 2
		a_errno "$t.$u.bpf_eperm" EPERM
		egr_json "${t}_$u" 3
		a_denied "$t.$u.still_confined"
		if bpftool -j cgroup show "$L" 2>/dev/null | grep -q egr_e2e_legacy; then ok "$t.$u.legacy_intact"; else
			fail "$t.$u.legacy_intact" "the legacy program on $L is gone"
		fi
	done
	sensor_none "$t.sensor" "dst host $a"
}

# ======================================================================
# --proxy-port: allowed and indexed (reason=proxy); not for outsiders
# ======================================================================
test_proxy_port() {
	local t=proxy_port tp
	new_port tp
	have_egr || return 0
	# an outside process connecting to the same listener is not indexed
	proxy_outsider() { jv "$(probe_root tcp4 127.0.0.1 "$tp")"; PP_OUT=$P_data; }
	WT_BEFORE_GO=proxy_outsider with_tlisten "$t" "$tp" --user nobody --proxy-port "$tp" -- \
		"${PROBE_ARGV[@]}" --wait "$W/$t.go" tcp4 127.0.0.1 "$tp" || return 0
	a_eq "$t.outsider_not_indexed" "tlisten line for a connection from outside the cgroup" "$PP_OUT" "ORIG none"
	egr_json "$t"
	a_ok "$t.connect"
	if [[ $P_data =~ ^ORIG\ [^\ ]+\ pid=$P_pid\ comm=python3\ reason=proxy$ ]]; then ok "$t.indexed"; else
		fail "$t.indexed" "want 'ORIG <dst> pid=$P_pid comm=python3 reason=proxy', got '$P_data'"
	fi
}

# ======================================================================
# fast path: --allow 198.18.0.1:PORT goes direct; other ports redirected
# ======================================================================
test_fastpath() {
	local t=fastpath tp
	new_port tp
	jv "$(probe_nobody --token "$t.c" tcp4 198.18.0.1 7001)"
	a_ok "$t.control.connect"
	a_grep "$t.control.inet_saw" "$W/inet.log" "local=198\\.18\\.0\\.1:7001 peer=198\\.18\\.0\\.2:[0-9]+ probe $t\\.c\$"
	sensor_saw "$t.control.sensor" "tcp and dst host 198.18.0.1 and dst port 7001"
	have_egr || return 0
	# any-port.test: a rule of any port, so that 7003 goes to the transparent
	# listener rather than being refused at connect (every rule naming a port)
	with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" --allow 198.18.0.1:7002 --allow any-port.test -- /bin/sh -c \
		"$PROBE --wait $W/$t.go --token $t.direct tcp4 198.18.0.1 7002; $PROBE --token $t.other tcp4 198.18.0.1 7003" ||
		return 0
	egr_json "$t" 1
	a_ok "$t.allowed.connect"
	a_eq "$t.allowed.echo_from_inet" "reply" "$P_data" "probe $t.direct"
	a_grep "$t.allowed.inet_saw" "$W/inet.log" "local=198\\.18\\.0\\.1:7002 peer=198\\.18\\.0\\.2:[0-9]+ probe $t\\.direct\$"
	a_nogrep "$t.allowed.tlisten_saw_nothing" "$W/$t.tl" "ORIG 198\\.18\\.0\\.1:7002"
	sensor_saw "$t.allowed.sensor" "tcp and dst host 198.18.0.1 and dst port 7002"
	egr_json "$t" 2
	a_eq "$t.other_port.redirected" "line from tlisten" "$P_data" "ORIG 198.18.0.1:7003 pid=$P_pid comm=python3 reason=transparent"
	sensor_none "$t.other_port.sensor" "dst host 198.18.0.1 and dst port 7003"
}

# ======================================================================
# the same with egr_socks (the per-socket records of connect) full: a held
# fast-path connection takes its one slot, and the next sockets' records go
# to sk_storage: still direct, still redirected with getpeername intact
# ======================================================================
test_fastpath_full() {
	local t=fastpath_full tp hold
	new_port tp
	have_egr || return 0
	test_build "$t" || return 0
	hold="import socket, sys, time
s = socket.create_connection(('198.18.0.1', 7002), timeout=5)
open(sys.argv[1], 'w').close()
time.sleep(1)
s.sendall(b'held\\n')
print('HOLD', s.recv(64).decode().strip())"
	EGRESSCTL="$EGRT" with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" \
		--allow 198.18.0.1:7002 --allow any-port.test --test-socks-max 1 -- /bin/sh -c \
		"$PY -c \"\$0\" $RW/$t.held >$RW/$t.hold 2>&1 & \
		for i in \$(seq 100); do [ -e $RW/$t.held ] && break; sleep 0.05; done; \
		$PROBE --wait $W/$t.go --token $t.direct tcp4 198.18.0.1 7002; \
		$PROBE --token $t.other tcp4 198.18.0.1 7003; wait" "$hold" ||
		return 0
	a_rc "$t.exit" 0 "$t"
	a_grep "$t.held_first" "$RW/$t.hold" "^HOLD held\$"
	egr_json "$t" 1
	a_ok "$t.allowed.connect"
	a_eq "$t.allowed.echo_from_inet" "reply" "$P_data" "probe $t.direct"
	a_nogrep "$t.allowed.tlisten_saw_nothing" "$W/$t.tl" "ORIG 198\\.18\\.0\\.1:7002"
	egr_json "$t" 2
	a_eq "$t.other_port.getpeername" "getpeername()" "$P_peer" "198.18.0.1:7003"
	a_eq "$t.other_port.redirected" "line from tlisten" "$P_data" "ORIG 198.18.0.1:7003 pid=$P_pid comm=python3 reason=transparent"
	sensor_none "$t.other_port.sensor" "dst host 198.18.0.1 and dst port 7003"
}

# ======================================================================
# --map-entries: the kernel maps of connections, names and approvals made
# that small (pinned, as bpftool shows them: egr_conns, egr_fast, egr_vdst,
# egr_vname 1024, egr_socks 512, egr_saved 16384 more), and the run's
# verdicts the same: an allowed address:port reached straight, another
# port of it not, nothing at the sensor
# ======================================================================
map_max() {	# map_max PIN: its max_entries, as bpftool shows it
	bpftool -j map show pinned "$1" 2>/dev/null | "$PY" -c 'import json, sys
try:
    print(json.load(sys.stdin)["max_entries"])
except (ValueError, KeyError):
    print("none")'
}

test_map_entries() {
	local t=map_entries m want
	have_egr || return 0
	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody --map-entries 1024 --allow 198.18.0.1:7002 -- \
		/bin/sh -c "$PROBE --wait $W/$t.go --wait-timeout 30 --token $t.ok tcp4 198.18.0.1 7002; $PROBE --token $t.no tcp4 198.18.0.1 7003"
	if ! egr_wait_pins "$(cg_path "$t")"; then
		fail "$t.setup" "no pins: $(head -c 400 "$W/$t.err")"
		touch "$W/$t.go"; egr_join 5; return 0
	fi
	for m in conns:1024 fast:1024 vdst:1024 vname:1024 socks:512 saved:17408; do
		want=${m#*:}
		a_eq "$t.${m%%:*}" "max_entries of map_${m%%:*}" "$(map_max "$PINDIR/map_${m%%:*}")" "$want"
	done
	touch "$W/$t.go"
	egr_join 20
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_eq "$t.allowed.echo_from_inet" "reply" "$P_data" "probe $t.ok"
	egr_json "$t" 2
	a_denied "$t.other_port.denied"
	sensor_none "$t.other_port.sensor" "dst host 198.18.0.1 and dst port 7003"
}

# ======================================================================
# egr_socks (the per-socket connect records, pinned as map_socks) does not
# leak: 250 connections -- fast path closed normally, closed with unread
# data (RST), half-closed; redirected, read or not -- then 6 held open.
# While egressctl still runs: the map holds the 6 open sockets' records
# only, and none once they are closed too (fast-path records go at
# sock_release + TCP_CLOSE, the others at sock_release)
# ======================================================================
socks_count() {	# socks_count: entries of $PINDIR/map_socks (or "ERR ...")
	bpftool -j map dump pinned "$PINDIR/map_socks" 2>"$W/socks.err" |
		"$PY" -c 'import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = {"error": "no JSON"}
print(len(d) if isinstance(d, list) else "ERR %s" % d.get("error"))'
}
socks_is() { SOCKS_N=$(socks_count); [ "$SOCKS_N" = "$1" ]; }
socks_entries() {	# the records left, decoded: "addr:port flags=0x.. life=0x.."
	bpftool -j map dump pinned "$PINDIR/map_socks" 2>/dev/null | "$PY" -c 'import json, socket, struct, sys
try:
    ents = json.load(sys.stdin)
except ValueError:
    sys.exit()
for e in ents[:4] if isinstance(ents, list) else []:
    v = bytes(int(x, 16) for x in e["value"])
    a = socket.inet_ntop(socket.AF_INET, v[12:16]) if v[:12] == bytes(10) + b"\xff\xff" \
        else socket.inet_ntop(socket.AF_INET6, v[:16])
    port, flags, life = struct.unpack("!H", v[16:18])[0], *struct.unpack("<HI", v[18:24])
    print("%s:%d flags=0x%x life=0x%x;" % (a, port, flags, life), end=" ")'
}

test_socks_leak() {
	local t=socks_leak tp
	new_port tp
	have_egr || return 0
	# shellcheck disable=SC2317 # called by with_tlisten (WT_BEFORE_GO)
	socks_leak_check() {
		touch "$W/$t.go"
		if ! wait_for 25 test -e "$RW/$t.held"; then
			fail "$t.held" "the batch never finished: $(head -c 300 "$W/$t.err")"
			touch "$W/$t.go2" "$W/$t.end"
			return
		fi
		SOCKS_N=$(socks_count)
		if [[ $SOCKS_N =~ ^[0-9]+$ ]] && [ "$SOCKS_N" -ge 6 ]; then ok "$t.map_shows_the_open_sockets"; else
			fail "$t.map_shows_the_open_sockets" "map_socks holds '$SOCKS_N' entries with 6 sockets open, want >= 6 ($(head -c 200 "$W/socks.err"))"
		fi
		# settle: FIN/ACK exchanges of the last closed sockets
		if wait_secs 3 socks_is 6; then ok "$t.batch_records_freed"; else
			fail "$t.batch_records_freed" "map_socks holds $SOCKS_N entries after 250 closed connections with 6 open, want 6: $(socks_entries)"
		fi
		touch "$W/$t.go2"
		wait_secs 10 test -e "$RW/$t.done"
		if wait_secs 3 socks_is 0; then ok "$t.all_records_freed"; else
			fail "$t.all_records_freed" "map_socks holds $SOCKS_N entries with every socket closed, want 0: $(socks_entries)"
		fi
		touch "$W/$t.end"
	}
	WT_BEFORE_GO=socks_leak_check with_tlisten "$t" "$tp" --user nobody --transparent-port "$tp" \
		--allow 198.18.0.1:7002 --allow any-port.test -- "${PROBE_ARGV[@]}" --wait "$W/$t.go" --timeout 40 --token "$t" \
		conn_batch 198.18.0.1 7002 7003 250 "$RW/$t.held" "$W/$t.go2" "$RW/$t.done" "$W/$t.end" || return 0
	a_rc "$t.exit" 0 "$t"
	egr_json "$t"
	a_ok "$t.connections_worked"
	a_eq "$t.counts" "connections that worked, per kind" "$(jq_counts "$P_json")" \
		"fast_close=50 fast_unread=50 fast_halfclose=50 redir_read=50 redir_unread=50 held=6"
	sensor_saw "$t.fast_path.sensor" "tcp and dst host 198.18.0.1 and dst port 7002"
	sensor_none "$t.redirected.sensor" "dst host 198.18.0.1 and dst port 7003"
}
jq_counts() {
	"$PY" -c 'import json, sys
try:
    d = json.loads(sys.argv[1])
except ValueError:
    d = {}
print(" ".join("%s=%s" % kv for kv in d.get("good", {}).items()), "held=%s" % d.get("held"))' "$1"
}

# ======================================================================
# a privileged process (root, all capabilities) placed in the cgroup by
# the test: raw, ping and IPv6 still denied by the BPF layer alone
# ======================================================================
test_privileged() {
	local t=privileged c1 c2 c3 a1 a2 a3 CG
	new4 c1; new4 c2; new6 c3; new4 a1; new4 a2; new6 a3
	jv "$(probe_root raw "$c1")"
	a_ok "$t.control.raw"
	jv "$(probe_root ping "$c2")"
	a_ok "$t.control.ping"
	jv "$(probe_root tcp6 "$c3" 80)"
	a_ok "$t.control.tcp6"
	sensor_saw "$t.control.sensor" "dst host $c1 or dst host $c2 or dst host $c3"
	have_egr || return 0
	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody -- \
		"${PROBE_ARGV[@]}" --wait "$W/$t.go" --wait-timeout 30 noop
	CG=$(cg_path "$t")
	if ! egr_wait_pins "$CG"; then
		fail "$t.setup" "no pins for $CG: $(head -c 400 "$W/$t.err")"
		touch "$W/$t.go"; egr_join 5; return 0
	fi
	in_cg() { timeout 20 nsenter --net="$NS_SBX" /bin/sh -c "echo \$\$ >$CG/cgroup.procs && exec $PY $C/probe.py $*" | grep '^{'; }
	jv "$(in_cg raw "$a1")"
	a_eq "$t.placed_in_cgroup" "cgroup of the privileged probe" "$P_cg" "0::${CG#"$CGROOT"}"
	a_denied "$t.raw.denied"
	jv "$(in_cg ping "$a2")"
	a_denied "$t.ping.denied"
	jv "$(in_cg tcp6 "$a3" 80)"
	a_denied "$t.tcp6.denied"
	touch "$W/$t.go"
	egr_join 10
	sensor_none "$t.sensor" "dst host $a1 or dst host $a2 or dst host $a3"
}

# ======================================================================
# exit status
# ======================================================================
test_exit_status() {
	local t=exit f=$W/noexec.sh
	have_egr || return 0
	printf '#!/bin/sh\nexit 0\n' >"$f" && chmod 0644 "$f"
	egr "${t}_0" --cgroup "$(cg_name "${t}_0")" --user nobody -- /bin/true
	a_rc "$t.true_0" 0 "${t}_0"
	egr "${t}_3" --cgroup "$(cg_name "${t}_3")" --user nobody -- /bin/sh -c 'exit 3'
	a_rc "$t.cmd_status_3" 3 "${t}_3"
	egr "${t}_kill" --cgroup "$(cg_name "${t}_k")" --user nobody -- /bin/sh -c 'kill -KILL $$'
	a_rc "$t.cmd_killed_137" 137 "${t}_kill"
	egr "${t}_127" --cgroup "$(cg_name "${t}_127")" --user nobody -- "/nonexistent/egr-e2e-$$"
	a_rc "$t.missing_path_127" 127 "${t}_127"
	# a PATH every user can search: with dirs nobody cannot enter (root's
	# /root/.cargo/bin here), glibc's execvp() reports EACCES, not ENOENT
	PATH=/usr/local/bin:/usr/bin:/bin egr "${t}_127b" --cgroup "$(cg_name "${t}_127b")" --user nobody -- "egr-e2e-no-such-command-$$"
	a_rc "$t.missing_cmd_127" 127 "${t}_127b"
	egr "${t}_126" --cgroup "$(cg_name "${t}_126")" --user nobody -- "$f"
	a_rc "$t.not_executable_126" 126 "${t}_126"
	egr "${t}_opt" --egr-e2e-no-such-option -- /bin/true
	a_rc "$t.bad_option_2" 2 "${t}_opt" # a usage error, not a failure
	egr "${t}_cgtmp" --cgroup "$W/not-a-cgroup" --user nobody -- /bin/true
	a_rc "$t.cgroup_outside_mount_125" 125 "${t}_cgtmp"
	egr "${t}_cgroot" --cgroup "$CGROOT" --user nobody -- /bin/true
	a_rc "$t.cgroup_mount_itself_125" 125 "${t}_cgroot"
	timeout -k 2 20 nsenter --net="$NS_SBX" setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$EGRESSCTL" run --user nobody -- /bin/true >"$W/${t}_nonroot.out" 2>"$W/${t}_nonroot.err" </dev/null
	EGR_RC=$?
	a_rc "$t.not_root_125" 125 "${t}_nonroot"
}

# ======================================================================
# signals to egressctl are forwarded to CMD
# ======================================================================
test_signals() {
	local t=signals spec sig mode want tag f
	have_egr || return 0
	for spec in "TERM handler 42" "TERM default 143" "INT default 130" "HUP default 129"; do
		read -r sig mode want <<<"$spec"
		tag=sig_${sig}_$mode
		f=$RW/$tag.state
		egr_bg "$tag" --cgroup "$(cg_name "$tag")" --user nobody -- "${PROBE_ARGV[@]}" sigwait "$f" "$mode"
		if ! wait_for 10 grep -sq READY "$f"; then
			fail "$t.$sig.$mode" "CMD never got ready: $(head -c 300 "$W/$tag.err")"
			kill -KILL "$EGR_PID" 2>/dev/null; egr_join 1
			continue
		fi
		kill -"$sig" "$EGR_PID"
		egr_join 10
		a_rc "$t.$sig.$mode.exit_$want" "$want" "$tag"
		[ "$mode" = handler ] && a_grep "$t.$sig.handler_ran" "$f" "^GOT SIG$sig\$"
	done
}

# ======================================================================
# cleanup after a normal exit: no pins, no created cgroup
# ======================================================================
test_cleanup() {
	local t=cleanup CG pid line P
	have_egr || return 0
	# --cgroup NAME (created by egressctl)
	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody -- "${PROBE_ARGV[@]}" --wait "$W/$t.go" noop
	CG=$(cg_path "$t")
	if egr_wait_pins "$CG"; then
		ok "$t.named.pins_while_running"
		for P in map_conns map_fast; do
			if [ -e "$PINDIR/$P" ]; then ok "$t.named.pinned_$P"; else
				fail "$t.named.pinned_$P" "no $P in $PINDIR: $(ls "$PINDIR" | tr '\n' ' ')"
			fi
		done
	else
		fail "$t.named.pins_while_running" "no pins for $CG (id ${CGID:-none}): $(ls "$PIN_ROOT" 2>&1 | tr '\n' ' ')"
	fi
	touch "$W/$t.go"
	egr_join 10
	a_rc "$t.named.exit" 0 "$t"
	expect "$t.named.no_pins" "$PINDIR still exists: $(ls "$PINDIR" 2>/dev/null | tr '\n' ' ')" test ! -e "$PINDIR"
	expect "$t.named.no_cgroup" "$CG still exists" test ! -e "$CG"

	# no --cgroup: a fresh cgroup
	egr_bg "${t}_fresh" --user nobody -- /bin/sh -c "echo PID=\$\$; exec $PROBE --wait $W/${t}_fresh.go noop"
	wait_for 10 grep -sq '^PID=' "$W/${t}_fresh.out"
	pid=$(sed -n 's/^PID=//p' "$W/${t}_fresh.out")
	line=$(grep '^0::' "/proc/$pid/cgroup" 2>/dev/null)
	CG=$CGROOT${line#0::}
	if [ -n "$pid" ] && [ -n "$line" ] && [ "$CG" != "$CGROOT/" ] && egr_wait_pins "$CG"; then
		echo "$CG" >>"$W/fresh-cgroups"
		ok "$t.fresh.pins_while_running"
	else
		fail "$t.fresh.pins_while_running" "CMD pid '$pid' cgroup '$line': no pins (stderr: $(head -c 300 "$W/${t}_fresh.err"))"
	fi
	touch "$W/${t}_fresh.go"
	egr_join 10
	a_rc "$t.fresh.exit" 0 "${t}_fresh"
	expect "$t.fresh.no_pins" "${PINDIR:-?} still exists" test ! -e "${PINDIR:-/nonexistent}"
	expect "$t.fresh.no_cgroup" "$CG still exists" test ! -e "$CG"

	# an existing cgroup given by absolute path: pins go; the cgroup is the user's
	CG=$CGROOT/egr-e2e-$$-pre
	mkdir -p "$CG"
	egr_bg "${t}_pre" --cgroup "$CG" --user nobody -- "${PROBE_ARGV[@]}" --wait "$W/${t}_pre.go" noop
	if egr_wait_pins "$CG"; then ok "$t.abspath.pins_while_running"; else
		fail "$t.abspath.pins_while_running" "no pins for $CG: $(head -c 300 "$W/${t}_pre.err")"
	fi
	touch "$W/${t}_pre.go"
	egr_join 10
	a_rc "$t.abspath.exit" 0 "${t}_pre"
	expect "$t.abspath.no_pins" "$PINDIR still exists" test ! -e "$PINDIR"
	if [ -d "$CG" ]; then note "$t: pre-existing cgroup $CG kept after exit"; else
		note "$t: pre-existing cgroup $CG was REMOVED by egressctl"
	fi
}

# ======================================================================
# SIGKILL of egressctl: pins and cgroup stay, a still-running confined
# process is still denied (fail closed); the next run recovers
# ======================================================================
test_sigkill() {
	local t=sigkill a b CG id pins_before pins_after i
	new4 a; new4 b
	have_egr || return 0
	CG=$(cg_path "$t")
	# the attempt runs in a setsid grandchild: it survives even if egressctl
	# gave its direct child a parent-death signal
	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody -- /bin/sh -c \
		"(setsid $PROBE --wait $W/$t.go --wait-timeout 30 tcp4 $a 80 >$RW/$t.res 2>&1 &); exec $PROBE --wait $W/$t.go2 --wait-timeout 30 noop"
	if ! egr_wait_pins "$CG"; then
		fail "$t.setup" "no pins for $CG: $(head -c 400 "$W/$t.err")"
		touch "$W/$t.go" "$W/$t.go2"; egr_join 5; return 0
	fi
	id=$CGID
	wait_for 5 cg_nprocs_ge "$CG" 2
	pins_before=$(ls "$PINDIR" | tr '\n' ' ')
	{	# (bash would report the SIGKILLed job as "Killed" on stderr)
		kill -KILL "$EGR_PID"
		egr_join 5
	} 2>/dev/null
	sleep 0.3
	pins_after=$(ls "$PINDIR" 2>/dev/null | tr '\n' ' ')
	a_eq "$t.pins_stay" "pins after SIGKILL" "$pins_after" "$pins_before"
	expect "$t.cgroup_stays" "$CG is gone" test -d "$CG"
	expect "$t.confined_process_alive" "nothing left running in $CG" cg_nprocs_ge "$CG" 1
	cg_nprocs_ge "$CG" 2 ||
		note "$t: the direct child of egressctl did not survive its SIGKILL"
	touch "$W/$t.go"
	wait_for 10 grep -sq '^{' "$RW/$t.res"
	jv "$(nth_json "$RW/$t.res")"
	a_denied "$t.still_denied"
	sensor_none "$t.sensor" "dst host $a"
	touch "$W/$t.go2"
	wait_for 10 cg_empty "$CG"

	# the next run on the same cgroup recovers and cleans up
	egr "${t}_recover" --cgroup "$(cg_name "$t")" --user nobody -- "${PROBE_ARGV[@]}" tcp4 "$b" 80
	a_rc "$t.recover.exit" 0 "${t}_recover"
	egr_json "${t}_recover"
	a_errno "$t.recover.enforces" ECONNRESET
	expect "$t.recover.old_pins_gone" "$PIN_ROOT/$id still exists: $(ls "$PIN_ROOT/$id" 2>/dev/null | tr '\n' ' ')" \
		test ! -e "$PIN_ROOT/$id"
	if [ -d "$CG" ]; then
		i=$(stat -c %i "$CG")
		expect "$t.recover.no_pins" "$PIN_ROOT/$i still exists" test ! -e "$PIN_ROOT/$i"
	else
		ok "$t.recover.no_pins"
	fi
	sensor_none "$t.recover.sensor" "dst host $b"
}

# ======================================================================
# Regression: a --user root CMD (uid 0 without any
# capability) could open /proc/sys/kernel/core_pattern for writing (a pipe
# there runs a program as real root, outside the cgroup) and wrote a
# per-netns network sysctl; /proc/sysrq-trigger, /sys and the cgroup v1
# hierarchies of a hybrid host were as open, and it could signal every
# other uid 0 process (egressctl included). In the sandbox the knobs are
# read-only, the v1 hierarchies hidden, and signals stay inside.
# core_pattern, sysrq-trigger, /sys and cgroup v1 files are only ever
# opened, never written; the sysctl written is one of the test's netns.
# ======================================================================
sbp_nocaps() {	# sbp_nocaps ARGS: sandboxprobe.py as uid 0 without capabilities, outside egressctl
	timeout -k 1 20 nsenter --net="$NS_SBX" setpriv --bounding-set=-all --inh-caps=-all -- \
		"$PY" "$C/sandboxprobe.py" "$@" | grep '^{' | tail -1
}

test_kernel_knobs() {
	local t=knobs ttl=/proc/sys/net/ipv4/ip_default_ttl orig new sysf="" v1 holder f sbp
	orig=$(in_sbx cat "$ttl")
	new=$((orig == 64 ? 65 : 64))
	for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/module/printk/parameters/time \
		/sys/kernel/uevent_helper; do
		[ -e "$f" ] && { sysf=$f; break; }
	done
	v1=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup") print $5; break } }' \
		/proc/self/mountinfo | head -1)
	in_sbx sleep 60 &
	holder=$!
	PIDS+=("$holder")

	# controls: uid 0 without capabilities, outside egressctl
	jv "$(sbp_nocaps write "$ttl" "$new")"
	a_ok "$t.control.sysctl_write"
	a_eq "$t.control.sysctl_changed" "ip_default_ttl in the test netns" "$(in_sbx cat "$ttl")" "$new"
	in_sbx sh -c "echo $orig >$ttl"
	jv "$(sbp_nocaps open-w /proc/sys/kernel/core_pattern)"
	a_ok "$t.control.core_pattern_writable"
	if [ -n "$sysf" ]; then
		jv "$(sbp_nocaps open-w "$sysf")"
		a_ok "$t.control.sys_writable"
	else
		note "$t: none of the /sys files tried exists here"
	fi
	if [ -n "$v1" ]; then
		jv "$(sbp_nocaps open-w "$v1/tasks")"
		a_ok "$t.control.cgroup_v1_writable"
	else
		note "$t: no cgroup v1 hierarchy mounted here"
	fi
	jv "$(sbp_nocaps kill "$holder")"
	a_ok "$t.control.signal_root_process"
	if [ -e /proc/sysrq-trigger ]; then
		jv "$(sbp_nocaps open-w /proc/sysrq-trigger)"
		a_ok "$t.control.sysrq_writable"
	else
		note "$t: this kernel has no /proc/sysrq-trigger"
	fi
	have_egr || { kill "$holder"; return 0; }

	sbp="$PY $W/clients/sandboxprobe.py"
	egr "$t" --cgroup "$(cg_name "$t")" --user root -- /bin/sh -c "
		$sbp write $ttl $new; $sbp open-w /proc/sys/kernel/core_pattern; $sbp kill $holder
		$sbp kill \$PPID; $sbp open-w ${sysf:-/nonexistent}; $sbp open-w ${v1:-/nonexistent}/tasks
		$sbp open-w /proc/sysrq-trigger"
	kill "$holder" 2>/dev/null
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_errno "$t.sysctl_write_erofs" EROFS
	a_eq "$t.sysctl_unchanged" "ip_default_ttl in the test netns" "$(in_sbx cat "$ttl")" "$orig"
	egr_json "$t" 2
	a_errno "$t.core_pattern_erofs" EROFS
	egr_json "$t" 3
	a_errno "$t.signal_root_process_eperm" EPERM
	egr_json "$t" 4
	a_errno "$t.signal_egressctl_eperm" EPERM
	if [ -n "$sysf" ]; then
		egr_json "$t" 5
		a_errno "$t.sys_erofs" EROFS
	fi
	if [ -n "$v1" ]; then
		egr_json "$t" 6
		a_errno "$t.cgroup_v1_hidden" ENOENT
	fi
	if [ -e /proc/sysrq-trigger ]; then
		egr_json "$t" 7
		a_errno "$t.sysrq_erofs" EROFS
	fi
}

# ======================================================================

ALL_TESTS="tcp_redirect map_entries ipv6 mapped udp dns unix raw packet ping catchall tfo io_uring udplite mptcp vsock
doublefork cgroup_escape bpf proxy_port fastpath fastpath_full socks_leak privileged exit_status signals cleanup sigkill
kernel_knobs"

kernel_suite_main run.sh "$@"
