#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of `egressctl run --ipv6`: native IPv6 TCP goes to
# egressctl's listeners on [::1] (transparent, HTTP, CONNECT, SOCKS5) and
# is judged by the same rules as IPv4; exact [ADDR6]:PORT rules and tcp://
# rules answered with AAAA take the kernel fast path; DNS to an IPv6
# resolver lands on the responder, which answers AAAA for allowed names
# only; UDP other than DNS stays refused; host services on [::1],
# link-local targets and IPv4 carried in IPv6 (NAT64, 6to4, Teredo) stay
# out of reach; without --ipv6 nothing changes (and `check` says so); a
# host without IPv6 on lo makes --ipv6 fail at start-up.
#
#   sudo tests/e2e/ipv6.sh build/egressctl   (make e2e does this)
#   E2E_TESTS="transparent dns" ...           only these test functions
#   E2E_KEEP=1 ...                            keep /tmp/egr-e2e-PID
#
# The test network: lib.sh's (drawn in docs/testing.md), and in the
# "internet" netns
#   2001:db8:2::/64 AnyIP (every attempt its own address), TCP echo on
#     [::]:7,22,53,80,443,7000-7031, DNS on [::]:53 answering A 203.0.113.99
#     and AAAA 2001:db8:2::99 for every name
#   webservers.py HTTP on [::]:8080, banner+echo on [::]:2222
#   AnyIP for the IPv6 forms of 203.0.113.0/24 (NAT64 64:ff9b::/120, 6to4
#     2002:cb00:71xx::/48, Teredo 2001:0:cb00:71xx::/64): the smuggling
#     controls reach them; nothing outside the two namespaces ever sees them
#   LEAK SENSOR: tcpdump -Q in on "vi"
#
# Every escape: the control (same attempt, same netns, no egressctl)
# works; confined (egressctl run --ipv6 --user nobody ...) it is refused,
# with a decision line, and the sensor sees none of its packets.

set -u
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
. "$(dirname "$0")/lib.sh"
e2e_reexec "$@"

INET_ANSWER=203.0.113.99,2001:db8:2::99	# A and AAAA of the inet DNS server
AAAA=2001:db8:2::99
INET_DNS=198.18.0.1		# egressctl's --dns-upstream
RESOLV6=2001:db8:2::53		# an IPv6 resolver address nothing serves DNS on... but the echo
WEBLOG=$W/web.log
V4DENY=203.0.113.7		# the IPv4 the smuggling tests carry (denied by rule)
NAT64=64:ff9b::cb00:7107	# 64:ff9b::203.0.113.7
SIXTOFOUR=2002:cb00:7107::1	# 6to4 of 203.0.113.7
TEREDO=2001:0:cb00:7107::1	# Teredo with server 203.0.113.7

v6_setup() {
	local i
	e2e_base_setup || return 1
	# the IPv6 forms of 203.0.113.7, owned by the "internet" (AnyIP)
	ip -n "$INET" -6 route add local 64:ff9b::cb00:7100/120 dev lo || return 1
	ip -n "$INET" -6 route add local 2002:cb00:7107::/48 dev lo || return 1
	ip -n "$INET" -6 route add local 2001:0:cb00:7107::/64 dev lo || return 1
	servers_setup || return 1
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$WEBLOG" --bind :: --http 8080 --banner 2222 \
		>"$W/web.ready" 2>"$W/web.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/web.ready" 2>/dev/null && break
		sleep 0.05
	done
	grep -q READY "$W/web.ready" || { echo "webservers failed: $(cat "$W/web.err")"; return 1; }
	cat >"$W/prelude.sh" <<EOF
RW=$RW
pc() { k=\$1; shift; $PY $C/pclient.py --tag "\$k" --timeout 5 "\$@"; }
dg() { k=\$1; shift; dig +time=3 +tries=1 "\$@" >"\$RW/\$k.dig" 2>&1; echo "DIG \$k rc=\$?"; }
EOF
	chmod 0644 "$W/prelude.sh"
}

# vrun TAG ARGS... -- CMD: egressctl run --ipv6, confined as nobody,
# decision log in $W/TAG.jlog
vrun() {
	local tag=$1
	shift
	egr "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" \
		--log "$W/$tag.jlog" "$@"
}

# pj TAG KEY: jv the pclient JSON line tagged KEY in TAG's output
pj() {
	local line
	line=$(grep -m1 -E "^\\{\"tag\": ?\"$(re "$2")\"" "$W/$1.out" 2>/dev/null)
	P_status="" P_code="" P_data="" P_body=""
	if [ -z "$line" ]; then
		jv '{"ok": false, "errno": "NOJSON"}'
		P_json="no JSON line tagged $2 (egressctl rc=$EGR_RC, stderr: $(head -c 300 "$W/$1.err" | tr '\n' '|'))"
		return 1
	fi
	jv "$line"
}
a_pj() {	# a_pj NAME WHAT GOT ERE
	if [[ $3 =~ ^($4)$ ]]; then ok "$1"; else fail "$1" "$2: got '$3', want /$4/ ($P_json)"; fi
}
# dig_of KEY: dig's +short answer lines (or its status line) for KEY
dig_of() { grep -v '^;' "$RW/$1.dig" 2>/dev/null | grep . | tr '\n' ' ' | sed 's/ $//'; }
dig_status() { sed -n 's/.*status: \([A-Z]*\).*/\1/p' "$RW/$1.dig" | head -1; }

# ======================================================================
# check: an IPv6 target is denied without --ipv6 whatever the rules say;
# with it, the rules decide; IPv4 carried in IPv6 is refused even when a
# rule names it; link-local and ULA only when a rule names them
# ======================================================================
test_check() {
	local t=check out rc
	out=$("$EGRESSCTL" check --allow '[2001:db8:1::1]:80' '[2001:db8:1::1]:80'); rc=$?
	a_eq "$t.off.words" "check" "$out" "deny: [2001:db8:1::1]:80 — IPv6 is denied (use --ipv6)"
	a_eq "$t.off.exit" "exit status" "$rc" 1
	out=$("$EGRESSCTL" check --ipv6 --allow '[2001:db8:1::1]:80' '[2001:db8:1::1]:80'); rc=$?
	a_eq "$t.on.words" "check" "$out" "allow: [2001:db8:1::1]:80 — rule 1 \"[2001:db8:1::1]:80\""$'\n'"  path: kernel fast path (direct; the address alone is checked)"
	a_eq "$t.on.exit" "exit status" "$rc" 0
	out=$("$EGRESSCTL" check --ipv6 --allow '[2001:db8:1::1]:80' '[2001:db8:1::2]:80'); rc=$?
	a_eq "$t.on.no_rule" "check" "$rc ${out%% *}" "1 deny:"
	out=$("$EGRESSCTL" check --allow '198.51.100.1:80' '[::ffff:198.51.100.1]:80'); rc=$?
	a_eq "$t.mapped_is_ipv4" "check" "$rc ${out%% *}" "0 allow:"
	for a in "$NAT64" "$SIXTOFOUR" "$TEREDO" "::cb00:7107" "::ffff:0:cb00:7107"; do
		out=$("$EGRESSCTL" check --ipv6 --allow "[$a]:80" --allow '::/0' "[$a]:80"); rc=$?
		a_eq "$t.v4_in_v6.$a" "check" "$rc $out" \
			"1 deny: [$a]:80 — IPv4 carried in IPv6 (NAT64, 6to4, Teredo) is refused"
	done
	for a in fe80::1 fd00:db8::1 ff02::1; do
		out=$("$EGRESSCTL" check --ipv6 --allow '::/0' "tcp://[$a]:80"); rc=$?
		a_eq "$t.local.$a.denied" "check" "$rc ${out#* — }" \
			"1 local or private address (name it in a rule to allow it)"
		out=$("$EGRESSCTL" check --ipv6 --allow "[$a]:80" "tcp://[$a]:80"); rc=$?
		a_eq "$t.local.$a.named" "check" "$rc ${out%% *}" "0 allow:"
	done
}

# ======================================================================
# off: without --ipv6 nothing changed: native IPv6 is refused by the
# kernel whatever the rules, AAAA answers are empty
# ======================================================================
test_off() {
	local t=off c a x
	new6 c; new6 a; new6 x
	jv "$(probe_nobody --token "$t.c" tcp6 "$c" 80)"
	a_eq "$t.control.tcp6" "reply" "$P_data" "probe $t.c"
	have_egr || return 0
	script "$t" <<EOF
$PROBE --token $t.a tcp6 $a 80
dg $t.aaaa @198.51.100.53 AAAA v6.test +short
pc $t.get http http req GET http://[$x]:8080/$t.get
pc $t.connect http http connect [$x]:7002
pc $t.socks socks socks $x 7003 --atyp ip6 --send 'v6-echo\n' --until v6-echo
EOF
	vrun "$t" --allow '2001:db8:2::/64' --allow v6.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	# the IPv6 rule is said to allow nothing (not silently void)
	a_grep "$t.rule_said" "$W/$t.err" '^egressctl: 1 IPv6 allow rule \(2001:db8:2::/64, --allow\) allows nothing without --ipv6: IPv6 is denied$'
	egr_json "$t" 1
	a_errno "$t.tcp6.refused" ENETUNREACH
	a_jlog "$t.tcp6.logged" "$W/$t.jlog" decision=deny source=bpf "ip=$a" port=80 "reason=ipv6 denied"
	sensor_none "$t.tcp6.sensor" "dst host $a"
	a_eq "$t.aaaa.empty" "dig +short AAAA" "$(dig_of "$t.aaaa")" ""
	a_eq "$t.aaaa.noerror" "status" "$(dig_status "$t.aaaa")" ""
	# the proxies say what the kernel does (test_proxy: the same requests
	# served with --ipv6), not connect out over IPv6 for the client
	pj "$t" "$t.get"
	a_pj "$t.proxy.http_denied" "status" "$P_status" 403
	a_jlog "$t.proxy.http_logged" "$W/$t.jlog" decision=deny source=http "ip=$x" port=8080 \
		"reason=IPv6 is denied \(use --ipv6\)"
	pj "$t" "$t.connect"
	a_pj "$t.proxy.connect_denied" "status" "$P_status" 403
	a_jlog "$t.proxy.connect_logged" "$W/$t.jlog" decision=deny source=connect "ip=$x" port=7002 \
		"reason=IPv6 is denied \(use --ipv6\)"
	pj "$t" "$t.socks"
	a_pj "$t.proxy.socks_refused" "SOCKS reply code" "$P_code" 2
	a_pj "$t.proxy.socks_no_echo" "data" "$P_data" ""
	a_nogrep "$t.proxy.server_saw_nothing" "$WEBLOG" "target=/$t\\.get "
	sensor_none "$t.proxy.sensor" "dst host $x"
}

# ======================================================================
# transparent: TCP to any IPv6 address goes to the transparent listener
# on [::1], judged by the rules; getpeername says the original
# ======================================================================
test_transparent() {
	local t=transparent a b c
	new6 a; new6 b; new6 c
	jv "$(probe_nobody --token "$t.c" tcp6 "$c" 7001)"
	a_eq "$t.control.denied_port" "reply" "$P_data" "probe $t.c"
	sensor_saw "$t.control.sensor" "dst host $c and tcp dst port 7001"
	have_egr || return 0
	script "$t" <<EOF
$PROBE --token $t.a tcp6 $a 7000
$PROBE --token $t.b tcp6 $b 7001
EOF
	# any-port.test: a rule of any port, so that 7001 reaches the transparent
	# listener rather than being refused at connect (every rule naming a port)
	vrun "$t" --ipv6 --allow '[2001:db8:2::]/64:7000' --allow any-port.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_eq "$t.allowed.echo" "reply" "$P_data" "probe $t.a"
	a_eq "$t.allowed.getpeername" "peer" "$P_peer" "[$a]:7000"
	a_grep "$t.allowed.inet_saw" "$W/inet.log" "local=\\[$(re "$a")\\]:7000 peer=\\[2001:db8:1::2\\]:[0-9]+ probe $(re "$t.a")\$"
	a_jlog "$t.allowed.logged" "$W/$t.jlog" decision=allow source=transparent "ip=$a" port=7000 \
		"pid=$P_pid" comm=python3
	egr_json "$t" 2
	a_pj "$t.denied.no_echo" "data" "$P_data" ""
	a_jlog "$t.denied.logged" "$W/$t.jlog" decision=deny source=transparent "ip=$a|$b" port=7001
	a_grep "$t.denied.line" "$W/$t.err" "^egressctl: denied python3\\[[0-9]+\\] → \\[$(re "$b")\\]:7001 "
	a_nogrep "$t.denied.inet_saw_nothing" "$W/inet.log" "probe $(re "$t.b")\$"
	sensor_none "$t.denied.sensor" "dst host $b"
}

# ======================================================================
# proxy: HTTP, CONNECT and SOCKS5 to IPv6 literals, the proxy reached at
# 127.0.0.1 and at [::1]; a denied target never leaves
# ======================================================================
test_proxy() {
	local t=proxy a b c d
	new6 a; new6 b; new6 c; new6 d
	have_egr || return 0
	script "$t" <<EOF
HP=\${HTTP_PROXY##*:}
SP=\${ALL_PROXY##*:}
pc $t.get http http req GET http://[$a]:8080/$t.get
pc $t.connect http http connect [$b]:7002 
pc $t.connect6 http ::1:\$HP connect [$b]:7002
pc $t.socks socks socks $c 7003 --atyp ip6 --send 'v6-echo\\n' --until v6-echo
pc $t.socks6 socks ::1:\$SP $c 7003 --atyp ip6 --send 'v6-echo\\n' --until v6-echo
pc $t.denied http http connect [$d]:7004
EOF
	vrun "$t" --ipv6 --allow "[$a]:8080" --allow "[$b]:7002" --allow "[$c]/128:7003" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	pj "$t" "$t.get"
	a_pj "$t.http.status" "status" "$P_status" 200
	a_grep "$t.http.server_saw" "$WEBLOG" "^HTTP local=\\[$(re "$a")\\]:8080 .* target=/$t\\.get "
	a_jlog "$t.http.logged" "$W/$t.jlog" decision=allow source=http "ip=$a" port=8080 method=GET
	pj "$t" "$t.connect"
	a_pj "$t.connect.status" "status" "$P_status" 200
	pj "$t" "$t.connect6"
	a_pj "$t.connect_via_v6_listener.status" "status" "$P_status" 200
	a_jlog "$t.connect.logged" "$W/$t.jlog" decision=allow source=connect port=7002
	pj "$t" "$t.socks"
	a_pj "$t.socks.reply" "SOCKS reply code" "$P_code" 0
	a_pj "$t.socks.echo" "data" "$P_data" "v6-echo"$'\n'
	pj "$t" "$t.socks6"
	a_pj "$t.socks_via_v6_listener.reply" "SOCKS reply code" "$P_code" 0
	a_grep "$t.socks.server_saw" "$W/inet.log" "local=\\[$(re "$c")\\]:7003 .* v6-echo\$"
	pj "$t" "$t.denied"
	a_pj "$t.denied.status" "status" "$P_status" 403
	a_jlog "$t.denied.logged" "$W/$t.jlog" decision=deny source=connect port=7004
	sensor_none "$t.denied.sensor" "dst host $d"
}

# ======================================================================
# fast path: an exact [ADDR6]:PORT rule goes direct (no proxy decision),
# another port of the same address is judged and refused
# ======================================================================
test_fastpath() {
	local t=fastpath a
	new6 a
	have_egr || return 0
	script "$t" <<EOF
$PROBE --token $t.direct tcp6 $a 7005
$PROBE --token $t.other tcp6 $a 7006
EOF
	vrun "$t" --ipv6 --allow "[$a]:7005" --allow any-port.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_eq "$t.direct.echo" "reply" "$P_data" "probe $t.direct"
	a_eq "$t.direct.getpeername" "peer" "$P_peer" "[$a]:7005"
	a_jlog_none "$t.direct.not_proxied" "$W/$t.jlog" source=transparent port=7005
	a_grep "$t.direct.inet_saw" "$W/inet.log" "local=\\[$(re "$a")\\]:7005 peer=\\[2001:db8:1::2\\]:[0-9]+ probe $(re "$t.direct")\$"
	egr_json "$t" 2
	a_pj "$t.other.no_echo" "data" "$P_data" ""
	a_jlog "$t.other.logged" "$W/$t.jlog" decision=deny source=transparent port=7006
	sensor_none "$t.other.sensor" "dst host $a and tcp dst port 7006"
}

# ======================================================================
# dns: queries to IPv6 resolvers (UDP, connected UDP, TCP) land on the
# responder; AAAA answered for allowed names only; a tcp:// rule opens
# the fast path for the AAAA answer
# ======================================================================
test_dns() {
	local t=dns n
	n=$(in_sbx dig +short +time=2 +tries=1 @2001:db8:1::1 AAAA control.test)
	a_eq "$t.control.aaaa" "dig" "$n" "$AAAA"
	have_egr || return 0
	: >"$W/inet.log.mark"
	script "$t" <<EOF
dg $t.udp @$RESOLV6 AAAA v6.test +short
dg $t.tcp @$RESOLV6 AAAA v6.test +short +tcp
dg $t.a @$RESOLV6 A v6.test +short
dg $t.other @$RESOLV6 AAAA other.test
dg $t.v4res @198.51.100.53 AAAA v6.test +short
$PROBE --token $t.fast tcp6 $AAAA 7007
EOF
	vrun "$t" --ipv6 --allow v6.test --allow tcp://v6.test:7007 -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_eq "$t.udp.aaaa" "dig +short" "$(dig_of "$t.udp")" "$AAAA"
	a_eq "$t.tcp.aaaa" "dig +short +tcp" "$(dig_of "$t.tcp")" "$AAAA"
	a_eq "$t.a" "dig +short A" "$(dig_of "$t.a")" "203.0.113.99"
	a_eq "$t.v4_resolver.aaaa" "dig +short" "$(dig_of "$t.v4res")" "$AAAA"
	a_eq "$t.other.refused" "status" "$(dig_status "$t.other")" REFUSED
	a_grep "$t.upstream_asked" "$W/inet.log" "^DNS (udp|tcp) local=198\\.18\\.0\\.1:53 .* name=v6\\.test qtype=28"
	a_nogrep "$t.other.upstream_not_asked" "$W/inet.log" "name=other\\.test"
	a_nogrep "$t.resolver6_never_reached" "$W/inet.log" "local=\\[$(re "$RESOLV6")\\]:53"
	sensor_none "$t.sensor" "dst host $RESOLV6"
	egr_json "$t" 1
	a_eq "$t.fast.echo" "reply" "$P_data" "probe $t.fast"
	a_jlog_none "$t.fast.not_proxied" "$W/$t.jlog" source=transparent port=7007
}

# ======================================================================
# udp: UDP other than DNS stays refused under --ipv6
# ======================================================================
test_udp() {
	local t=udp c a
	new6 c; new6 a
	jv "$(probe_nobody --token "$t.c" udp6_sendto "$c" 7)"
	a_eq "$t.control.echo" "reply" "$P_data" "probe $t.c"
	have_egr || return 0
	vrun "$t" --ipv6 --allow '2001:db8:2::/64' -- "${PROBE_ARGV[@]}" udp6_sendto "$a" 7
	egr_json "$t"
	a_errno "$t.refused" EPERM
	a_jlog "$t.logged" "$W/$t.jlog" decision=deny source=bpf "ip=$a" port=7 "reason=udp other than dns denied"
	sensor_none "$t.sensor" "dst host $a"
	# ICMPv6: a ping socket (nobody) and a raw one (root) reach the test
	# internet unconfined; confined with --ipv6 neither can be made
	local p r
	new6 p; new6 r
	jv "$(probe_nobody ping6 "$p")"
	a_eq "$t.control.ping6" "reply" "$P_data" "echo-reply"
	jv "$(probe_root raw6 "$r")"
	a_eq "$t.control.raw6" "reply" "$P_data" "echo-reply"
	new6 p; new6 r
	vrun "${t}_ping" --ipv6 --allow '2001:db8:2::/64' -- "${PROBE_ARGV[@]}" ping6 "$p"
	egr_json "${t}_ping"
	a_errno "$t.ping6.refused" EPERM
	a_jlog "$t.ping6.logged" "$W/${t}_ping.jlog" decision=deny source=bpf "reason=icmp sockets denied"
	a_eq "$t.ping6.step" "step" "$P_step" socket
	egr "${t}_raw" --cgroup "$(cg_name "${t}_raw")" --user root --ipv6 --allow '2001:db8:2::/64' \
		-- "${PROBE_ARGV[@]}" raw6 "$r"
	egr_json "${t}_raw"
	a_denied "$t.raw6.refused"
	a_eq "$t.raw6.step" "step" "$P_step" socket
	sensor_none "$t.icmp6.sensor" "dst host $p or dst host $r"
}

# ======================================================================
# smuggle: IPv4 carried in IPv6 is no way around an IPv4 deny: v4-mapped
# is judged as the IPv4 it is; NAT64, 6to4, Teredo are refused even with
# an allow rule for all of IPv6
# ======================================================================
test_smuggle() {
	local t=smuggle a k
	jv "$(probe_nobody --token "$t.c.mapped" tcp_mapped "$V4DENY" 7008)"
	a_eq "$t.control.mapped" "reply" "$P_data" "probe $t.c.mapped"
	for a in "$NAT64" "$SIXTOFOUR" "$TEREDO"; do
		jv "$(probe_nobody --token "$t.c.$a" tcp6 "$a" 7008)"
		a_eq "$t.control.$a" "reply" "$P_data" "probe $t.c.$a"
	done
	sensor_saw "$t.control.sensor" "dst host $NAT64"
	have_egr || return 0
	script "$t" <<EOF
$PROBE --token $t.mapped tcp_mapped $V4DENY 7009
$PROBE --token $t.nat64 tcp6 $NAT64 7009
$PROBE --token $t.6to4 tcp6 $SIXTOFOUR 7009
$PROBE --token $t.teredo tcp6 $TEREDO 7009
EOF
	vrun "$t" --ipv6 --allow '::/0' --allow '0.0.0.0/0' --deny 203.0.113.0/24 -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	egr_json "$t" 1
	a_pj "$t.mapped.no_echo" "data" "$P_data" ""
	a_jlog "$t.mapped.logged" "$W/$t.jlog" decision=deny source=transparent "ip=$V4DENY" port=7009
	k=2
	for a in "$NAT64" "$SIXTOFOUR" "$TEREDO"; do
		egr_json "$t" "$k"
		a_errno "$t.$a.refused" ENETUNREACH
		a_jlog "$t.$a.logged" "$W/$t.jlog" decision=deny source=bpf "ip=$a" port=7009 \
			"reason=ipv4 carried in ipv6 \\(nat64, 6to4, teredo\\) denied"
		k=$((k + 1))
	done
	a_nogrep "$t.inet_saw_nothing" "$W/inet.log" "probe $t\\.[a-z0-9]+\$"
	sensor_none "$t.sensor" "tcp dst port 7009"
}

# ======================================================================
# local: host services on [::1] stay out of reach (v6only, [::] dual,
# SO_REUSEPORT join, ::, v4-mapped next to a [::] bind); CMD's own server
# on [::1] is reachable; a link-local target is refused
# ======================================================================
test_local() {
	local t=local p1 p2 p3 lladdr base
	new_port p1; new_port p2; new_port p3
	lladdr=$(ip -n "$INET" -6 addr show dev "$INET_IF" scope link | awk '/inet6/ { sub("/.*", "", $2); print $2; exit }')
	host_svc "$t.h1" tcp ::1 "$p1" v6only || return 0
	local h1=$HOST_PID
	host_svc "$t.h2" tcp :: "$p2" reuseport 65534 || { host_stop "$h1"; return 0; }
	local h2=$HOST_PID
	jvl "$(probe_nobody --token "$t.c.v6" tcp6 ::1 "$p1")"
	a_eq "$t.control.v6" "reply" "$P_data" "probe $t.c.v6"
	jvl "$(probe_nobody --token "$t.c.zero" tcp6 :: "$p1")"
	a_eq "$t.control.unspecified" "reply" "$P_data" "probe $t.c.zero"
	jvl "$(probe_nobody --token "$t.c.dual" tcp_mapped 127.0.0.1 "$p2")"
	a_eq "$t.control.mapped_to_dual" "reply" "$P_data" "probe $t.c.dual"
	jvl "$(probe_nobody --token "$t.c.join" bound "tcp/6/::1/$p2/reuseport,listen" -- noop)"
	a_eq "$t.control.reuseport_join" "held" "$P_held" "[\"OK [::1]:$p2\"]"
	jvl "$(probe_nobody --token "$t.c.ll" tcp6_scoped "$lladdr" "$SBX_IF" 80)"
	a_eq "$t.control.link_local" "reply ($lladdr: $P_json)" "$P_data" "probe $t.c.ll"
	if ! have_egr; then host_stop "$h1"; host_stop "$h2"; return 0; fi
	base=$(sensor_now "dst host $lladdr and tcp dst port 80")
	script "$t" <<EOF
$PROBE --token $t.v6 tcp6 ::1 $p1
$PROBE --token $t.zero tcp6 :: $p1
$PROBE --token $t.dual tcp_mapped 127.0.0.1 $p2
$PROBE --token $t.join bound tcp/6/::1/$p2/reuseport,listen -- tcp6 ::1 $p2
$PROBE --token $t.own bound tcp/6/::1/$p3/v6only,serve -- tcp6 ::1 $p3
$PROBE --token $t.ll tcp6_scoped $lladdr $SBX_IF 80
EOF
	vrun "$t" --ipv6 --allow '::/0' -- /bin/sh "$W/$t.sh"
	host_stop "$h1"
	host_stop "$h2"
	a_rc "$t.exit" 0 "$t"
	egr_jsonl "$t" 1
	a_errno "$t.v6.refused" ECONNREFUSED
	a_jlog "$t.v6.logged" "$W/$t.jlog" decision=deny source=bpf ip=::1 "port=$p1" \
		"reason=loopback port not served by this sandbox"
	egr_jsonl "$t" 2
	a_errno "$t.unspecified.refused" ECONNREFUSED
	egr_jsonl "$t" 3
	a_errno "$t.mapped_to_dual.refused" ECONNREFUSED
	egr_jsonl "$t" 4
	a_eq "$t.reuseport_join.bind_refused" "bind" "$P_held" "[\"bind:EADDRINUSE\"]"
	a_errno "$t.reuseport_join.refused" ECONNREFUSED
	a_nogrep "$t.hosts_saw_nothing" "$RW/$t.h1.host" "probe $t\\.(v6|zero)"
	a_nogrep "$t.host2_saw_nothing" "$RW/$t.h2.host" "probe $t\\.(dual|join)"
	egr_jsonl "$t" 5
	a_eq "$t.own.bound" "bind" "$P_held" "[\"OK [::1]:$p3\"]"
	a_eq "$t.own.reached" "reply" "$P_data" "own-echo probe $t.own"
	egr_jsonl "$t" 6
	a_pj "$t.link_local.no_echo" "data" "$P_data" ""
	a_jlog "$t.link_local.logged" "$W/$t.jlog" decision=deny source=transparent port=80 \
		"reason=local or private address"
	a_nogrep "$t.link_local.inet_saw_nothing" "$W/inet.log" "probe $t\\.ll\$"
	sensor_none_since "$t.link_local.sensor" "$base" "dst host $lladdr and tcp dst port 80"
}

# ======================================================================
# catchall: with connect6 skipped (the test build), IPv6 packets of the
# sandbox that no connect approved are dropped by cgroup_skb
# ======================================================================
test_catchall() {
	local t=catchall a
	new6 a
	have_egr || return 0
	test_build "$t" || return 0
	EGRESSCTL="$EGRT" vrun "$t" --ipv6 --allow '2001:db8:2::/64' --test-skip-prog connect6 -- \
		"${PROBE_ARGV[@]}" --timeout 4 tcp6 "$a" 7010
	egr_json "$t"
	a_eq "$t.no_connection" "errno" "$P_errno" TIMEOUT
	sensor_none "$t.sensor" "dst host $a"
	a_grep "$t.reported" "$W/$t.err" "denied .*→ \\[$(re "$a")\\]:7010 \\(dropped by the catch-all\\)"
}

# ======================================================================
# startup: --ipv6 on a host without IPv6 on lo fails at start-up (no
# silent downgrade); combinations it cannot serve are refused
# ======================================================================
test_startup() {
	local t=startup
	have_egr || return 0
	in_sbx sysctl -qw net.ipv6.conf.lo.disable_ipv6=1
	vrun "$t" --ipv6 -- /bin/true
	in_sbx sysctl -qw net.ipv6.conf.lo.disable_ipv6=0
	a_rc "$t.no_ipv6.exit" 125 "$t"
	a_grep "$t.no_ipv6.words" "$W/$t.err" "cannot open .* on \\[::1\\].*--ipv6 needs IPv6 on the loopback device"
	vrun "${t}_tp" --ipv6 --transparent-port 15999 -- /bin/true
	a_rc "$t.transparent_port.exit" 125 "${t}_tp"
	a_grep "$t.transparent_port.words" "$W/${t}_tp.err" "--ipv6 cannot be combined with --transparent-port"
	# status (from outside, as root) says where the listeners are
	egr_bg "${t}_ok" --cgroup "$(cg_name "${t}_ok")" --user nobody --ipv6 -- sleep 4
	wait_secs 5 sh -c "'$EGRESSCTL' status 2>/dev/null | grep -q 'same ports on'"
	"$EGRESSCTL" status >"$W/$t.status" 2>&1
	egr_join 10
	a_rc "$t.with_ipv6.exit" 0 "${t}_ok"
	a_grep "$t.with_ipv6.status" "$W/$t.status" "^  proxy: .*\(http 127\.0\.0\.1:[0-9]+, socks 127\.0\.0\.1:[0-9]+; the same ports on \[::1\]\)"
}

# ======================================================================
# daemon: a target with --ipv6 serves IPv6; killed with -9 and restarted,
# the daemon takes the programs over (IPv6 state in their .rodata and the
# maps) and IPv6 is served again, with nothing leaking in the gap; a
# target with ipv6 and containers is refused at start; its kernel-verified
# approvals of AAAA answers are taken back after a restart (daemon_kv)
# ======================================================================
tcg() { echo "$CGROOT/egr-e2e-$$-$1"; }
# dstart TAG ARGS...: the daemon in the sbx netns until it says ready (D_PID)
dstart() {
	local tag=$1 n
	shift
	n=$(grep -cs "ready:" "$W/$tag.dout")
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/$tag.ctl" "$@" \
		>>"$W/$tag.dout" 2>&1 </dev/null &
	D_PID=$!
	PIDS+=("$D_PID")
	wait_secs 15 d_ready "$W/$tag.dout" "${n:-0}" ||
		{ fail "$tag.daemon_ready" "no daemon: $(tail -c 400 "$W/$tag.dout" | tr '\n' '|')"; return 1; }
}
d_ready() { [ "$(grep -cs "ready:" "$1")" -gt "$2" ]; }

test_daemon() {
	local t=daemon a b c base cfg
	new6 a; new6 b; new6 c
	have_egr || return 0
	mkdir -p "$(tcg "$t")"
	dstart "$t" --cgroup "$(tcg "$t")" --ipv6 --allow "[2001:db8:2::]/64:7012" \
		--allow "[$c]:2222" --dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	# a confined loop: one probe every 0.2 s to an allowed and a denied target
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"' \
		"$(tcg "$t")" sh -c "while :; do $PROBE --timeout 2 tcp6 $a 7012; $PROBE --timeout 2 tcp6 $b 7013; sleep 0.2; done" \
		>"$W/$t.cg.out" 2>&1 </dev/null &
	PIDS+=($!)
	wait_secs 10 grep -qs '"data": "probe ' "$W/$t.cg.out"
	a_grep "$t.served_before" "$W/$t.cg.out" '"peer": "\['"$(re "$a")"'\]:7012", "data": "probe '
	kill -KILL "$D_PID"
	wait "$D_PID" 2>/dev/null
	: >"$W/$t.cg.out"
	base=$(sensor_now "dst host $a or dst host $b")
	sleep 2
	a_nogrep "$t.gap.nothing_served" "$W/$t.cg.out" '"data": "probe '
	sensor_none_since "$t.gap.sensor" "$base" "dst host $a or dst host $b"
	dstart "$t" --cgroup "$(tcg "$t")" --ipv6 --allow "[2001:db8:2::]/64:7012" \
		--allow "[$c]:2222" --dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	a_grep "$t.took_over" "$W/$t.dout" "took over the programs pinned on $(re "$(tcg "$t")")"
	: >"$W/$t.cg.out"
	wait_secs 10 grep -qs '"data": "probe ' "$W/$t.cg.out"
	a_grep "$t.served_after" "$W/$t.cg.out" '"peer": "\['"$(re "$a")"'\]:7012", "data": "probe '
	base=$(sensor_now "dst host $b")
	sleep 1
	sensor_none_since "$t.denied_after.sensor" "$base" "dst host $b"
	# a direct (fast-path) IPv6 connection, ended when a runtime deny
	# revokes its destination
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"' \
		"$(tcg "$t")" "$PY" "$C/longconn.py" banner "$c" 2222 --hold-for 60 --every 0.3 \
		>"$W/$t.held.out" 2>&1 </dev/null &
	PIDS+=($!)
	wait_secs 10 grep -qs '"echo"' "$W/$t.held.out"
	a_grep "$t.direct.held" "$W/$t.held.out" '"held": true, "local": "\[2001:db8:1::2\]:[0-9]+", "peer": "\['"$(re "$c")"'\]:2222"'
	a_jlog_none "$t.direct.not_proxied" "$W/$t.jlog" port=2222 source='transparent|connect|http|socks5'
	a_jlog "$t.direct.allow_line" "$W/$t.jlog" port=2222 source=bpf decision=allow \
		reason='approved target' comm=python3
	timeout 20 "$EGRESSCTL" deny --control "$W/$t.ctl" "[$c]:2222" >"$W/$t.deny.out" 2>&1
	a_eq "$t.revoke.deny_exit" "egressctl deny" "$?" 0
	wait_secs 5 grep -qs '"errno"' "$W/$t.held.out"
	a_grep "$t.revoke.ended" "$W/$t.held.out" '"errno": "ECONNABORTED", "step": "echo"'
	kill -TERM "$D_PID"
	wait "$D_PID" 2>/dev/null
	cfg=$W/$t.json
	printf '{"targets": [{"cgroup": "%s", "ipv6": true, "containers": "198.18.0.2"}]}\n' "$(tcg "$t")" >"$cfg"
	timeout 10 nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/$t.ctl2" --config "$cfg" \
		>"$W/$t.ctr.out" 2>&1 </dev/null
	a_eq "$t.containers.exit" "exit status" "$?" 125
	a_grep "$t.containers.words" "$W/$t.ctr.out" 'targets\[0\]: --ipv6 cannot be combined with --containers'
}

# A daemon target's kernel-verified approvals of AAAA answers survive a
# kill -9 as its IPv4 ones do: the daemon after takes them back, and the
# address still goes direct with its first bytes judged (the echo on :443
# is no TLS server: the kernel refuses the probe's bytes, its line says so),
# and the refused connection is ended at once (the pinned iterator).
test_daemon_kv() {
	local t=daemon_kv cg
	cg=$(tcg "$t")
	have_egr || return 0
	mkdir -p "$cg"
	dstart "$t" --cgroup "$cg" --ipv6 --allow kv6.test --dns-upstream "$INET_DNS" \
		--log "$W/$t.jlog" || return 0
	in_cg6() { nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"' "$cg" "$@"; }
	a_eq "$t.answered" "AAAA of kv6.test" "$(in_cg6 dig +short +time=2 +tries=1 @"$RESOLV6" AAAA kv6.test)" "$AAAA"
	kill -KILL "$D_PID"
	wait "$D_PID" 2>/dev/null
	dstart "$t" --cgroup "$cg" --ipv6 --allow kv6.test --dns-upstream "$INET_DNS" \
		--log "$W/$t.jlog" || return 0
	a_grep "$t.restored" "$W/$t.dout" 'took over the programs pinned on .*; [0-9]+ learned names, 0 fast-path entries and 1 kernel-verified approvals the policy still allows'
	jv "$(in_cg6 $PROBE --timeout 3 tcp6 "$AAAA" 443 | grep '^{' | tail -1)"
	# ended by egr_kv_kill, whose link the daemon took over with the pins
	# (the backstop's timeout would say ETIMEDOUT)
	a_errno "$t.probe_ended" ECONNABORTED
	a_nogrep "$t.kill_link" "$W/$t.dout" 'cannot end refused connections'

	wait_secs 5 grep -qs '"source": "kernel"' "$W/$t.jlog"
	a_jlog "$t.kernel_line" "$W/$t.jlog" source=kernel decision=deny ip="$AAAA" port=443 \
		reason="kernel-verified: neither a TLS.*"
	kill -TERM "$D_PID"
	wait "$D_PID" 2>/dev/null
}

ALL_TESTS="check off transparent proxy fastpath dns udp smuggle local catchall startup daemon daemon_kv"
kernel_suite_main() { :; }
suite_main ipv6.sh v6_setup "ip nsenter setpriv tcpdump ss dig" "$@"
