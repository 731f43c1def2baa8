#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of egressctl's DNS responder: every query of the confined
# command -- UDP sendto, connected UDP or TCP, to any address:53 -- lands on
# egressctl's own responder, which refuses names no rule could allow (no
# upstream query), resolves the rest at --dns-upstream, filters, caches and
# coalesces the answers, learns address -> name for the transparent path and
# opens the kernel fast path for tcp:// rules.  Each test asserts the
# client's result AND the world's: the upstream dnsmasq's query log, the
# leak sensor, egressctl's JSON decision log and denial lines, the BPF map.
#
#   tests/e2e/dns.sh build/egressctl          (as root; make e2e does this)
#   E2E_TESTS="cache fastpath" ...     run only these test functions
#   E2E_MEASURE=1 ...                  also run "measure" (queries per second,
#                                      latency; printed as "# measure" notes,
#                                      never asserted)
#   E2E_KEEP=1 ...                     keep /tmp/egr-e2e-PID (logs, pcap)
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion ("# ..." lines are
# notes), and as the last line "N passed, M failed".  Exit 1 if any failed,
# 77 if not root or no cgroup2.
#
# The test network: lib.sh's, drawn in docs/testing.md (nothing ever
# leaves the machine). In the sandbox host's namespace: egressctl outside
# the cgroup (--dns-upstream 198.18.0.1; its responder on 127.0.0.1 at a
# random port); the confined commands as nobody, their /etc/resolv.conf
# naming 198.51.100.53, where nothing serves DNS (the suite runs in a
# private mount namespace with that file bind-mounted); 198.18.0.3 on the
# veth besides .2, the controls' source, so that dnsmasq's log tells them
# from egressctl's upstream queries. In the "internet" (AnyIP for
# 198.51.100.0/24, 203.0.113.0/24, 2001:db8:2::/64): dnsmasq on
# 198.18.0.1:53 (names below, --log-queries: what arrived), and on
# 198.18.0.4 one without a query log (for "measure" only); a slow server
# on 198.51.100.200:53 for *.slow.test (dnsq.py serve, 0.4 s per answer,
# every query logged: coalescing); webservers.py banner+echo on :22 and
# :2222 (git.test); 192.0.2.0/24 blackholed (an upstream that never
# answers). The leak sensor listens on the internet's veth.
#
# Names (dnsmasq; .test is local, unknown .test names are NXDOMAIN;
# --local-ttl 60 unless given):
#   allowed.test 203.0.113.10 (TTL 300)   www.allowed.test .12
#   short.allowed.test .14 (TTL 1)        long.allowed.test .15 (TTL 86400)
#   local.allowed.test 127.0.0.1          private.allowed.test 10.0.0.5
#   mixed.allowed.test 10.0.0.5 + 203.0.113.16
#   mail.allowed.test .17, mx.allowed.test MX 10 mail.allowed.test
#   txt.allowed.test TXT "v=egr1 hello" "second string"
#   big.allowed.test TXT 4 x 200 bytes (truncation without EDNS)
#   _ssh._tcp.allowed.test SRV 0 5 22 git.test
#   https.allowed.test HTTPS 1 . alpn=h2 (--dns-rr)
#   www.chain.test CNAME mid.chain.test CNAME end.chain.test A 203.0.113.41
#   other.test 203.0.113.20 (never allowed)   git.test 203.0.113.22 (TTL 5)
#   *.wild.test 203.0.113.30 (fresh names on demand)
#   *.slow.test 203.0.113.31 via the slow server     ctl.test 203.0.113.99
# Resolver addresses the confined commands use, none of which serves DNS:
# 198.51.100.53 (resolv.conf), 203.0.113.53, 198.51.100.7.

# shellcheck disable=SC2154,SC2034 # P_* are assigned by jv (lib.sh) through eval
set -u
. "$(dirname "$0")/lib.sh"
# A private mount namespace: the confined commands' /etc/resolv.conf names
# a test address, bind-mounted over the host's file for this run only.
# cgroupfs and bpffs stay the host's (same superblocks).
e2e_reexec --mntns "$@"

INET_DNS=198.18.0.1		# dnsmasq: the "internet's" resolver
SLOW_DNS=198.51.100.200		# slow server for *.slow.test (behind dnsmasq)
RESOLV_NS=198.51.100.53		# what /etc/resolv.conf names (nothing serves it)
OTHER_NS=203.0.113.53		# another resolver address nothing serves
OTHER_NS2=198.51.100.7		# ... and one more, for TCP
CTL_NS=203.0.113.54		# the control's copy of OTHER_NS (hygiene ignores it)
CTL_SRC=198.18.0.3		# controls query dnsmasq from here; egressctl from .2
DOWN_NS=192.0.2.1		# blackholed: an upstream that never answers
A_ALLOWED=203.0.113.10
A_WWW=203.0.113.12
A_SHORT=203.0.113.14
A_LONG=203.0.113.15
A_MIXED=203.0.113.16
A_MAIL=203.0.113.17
A_OTHER=203.0.113.20
A_GIT=203.0.113.22
A_WILD=203.0.113.30
A_SLOW=203.0.113.31
A_CHAIN=203.0.113.41
A_CTL=203.0.113.99
DNSLOG=$W/dns-inet.log		# dnsmasq's query log
SLOWLOG=$W/slow.log		# the slow server's query log
WEBLOG=$W/web.log		# banner servers
SYNCN=0
BIGTXT=$(printf 'x%.0s' $(seq 200))	# 4 of these: an 800-byte TXT answer
MUSL=""				# a static musl getaddrinfo client, if musl-gcc exists

# ------------------------------------------------------------------ setup

dns_setup() {
	local i n
	e2e_base_setup || return 1
	ip -n "$INET" route add blackhole 192.0.2.0/24 || return 1
	ip -n "$SBX" addr add "$CTL_SRC/24" dev "$SBX_IF" || return 1
	awk '$1 == "nameserver" { print $2 }' /etc/resolv.conf >"$W/host-nameservers" 2>/dev/null
	printf 'nameserver %s\noptions timeout:3 attempts:1\n' "$RESOLV_NS" >"$W/resolv.conf"
	chmod 0644 "$W/resolv.conf"
	# never over the host's own file: only in the namespace unshare made
	if ! e2e_private_mntns; then
		echo "not in a private mount namespace: resolv.conf left alone"
		return 1
	fi
	mount --bind "$W/resolv.conf" /etc/resolv.conf || { echo "cannot bind-mount resolv.conf"; return 1; }
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dns-inet.pid" \
		--no-resolv --no-hosts --no-poll --bind-interfaces --listen-address="$INET_DNS" --port=53 \
		--local=/test/ --server=/slow.test/"$SLOW_DNS" --no-negcache --cache-size=0 \
		--local-ttl=60 --log-queries --log-facility="$DNSLOG" \
		--host-record=allowed.test,$A_ALLOWED,300 --host-record=www.allowed.test,$A_WWW \
		--host-record=short.allowed.test,$A_SHORT,1 --host-record=long.allowed.test,$A_LONG,86400 \
		--host-record=local.allowed.test,127.0.0.1 --host-record=private.allowed.test,10.0.0.5 \
		--host-record=mixed.allowed.test,10.0.0.5 --host-record=mixed.allowed.test,$A_MIXED \
		--host-record=mail.allowed.test,$A_MAIL --mx-host=mx.allowed.test,mail.allowed.test,10 \
		"--txt-record=txt.allowed.test,v=egr1 hello,second string" \
		"--txt-record=big.allowed.test,$BIGTXT,$BIGTXT,$BIGTXT,$BIGTXT" \
		--srv-host=_ssh._tcp.allowed.test,git.test,22,0,5 \
		--dns-rr=https.allowed.test,65,00010000010003026832 \
		--cname=www.chain.test,mid.chain.test --cname=mid.chain.test,end.chain.test \
		--host-record=end.chain.test,$A_CHAIN \
		--host-record=other.test,$A_OTHER --host-record=git.test,$A_GIT,5 \
		--address=/wild.test/$A_WILD --host-record=ctl.test,$A_CTL \
		>"$W/dns-inet.out" 2>&1 &
	PIDS+=($!)
	nsenter --net="$NS_INET" "$PY" "$C/dnsq.py" serve "$SLOW_DNS" 53 "$A_SLOW" 0.4 "$SLOWLOG" \
		>"$W/slow.ready" 2>"$W/slow.err" &
	PIDS+=($!)
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$WEBLOG" --bind 0.0.0.0 \
		--banner 22,2222 >"$W/web.ready" 2>"$W/web.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/web.ready" 2>/dev/null && grep -q READY "$W/slow.ready" 2>/dev/null && break
		sleep 0.05
	done
	grep -q READY "$W/web.ready" || { echo "webservers failed: $(cat "$W/web.err")"; return 1; }
	grep -q READY "$W/slow.ready" || { echo "slow DNS server failed: $(cat "$W/slow.err")"; return 1; }
	sensor_start || return 1
	for i in $(seq 40); do
		n=$(in_sbx dig +short +time=1 +tries=1 @"$INET_DNS" ctl.test A 2>/dev/null)
		[ "$n" = "$A_CTL" ] && break
		sleep 0.1
	done
	[ "$n" = "$A_CTL" ] || { echo "dnsmasq: ctl.test gave '$n': $(cat "$W/dns-inet.out")"; return 1; }
	n=$(in_sbx dig +short +time=2 +tries=1 @"$INET_DNS" warm.slow.test A 2>/dev/null)
	[ "$n" = "$A_SLOW" ] || { echo "slow server via dnsmasq: warm.slow.test gave '$n': $(cat "$W/slow.err")"; return 1; }
	if command -v musl-gcc >/dev/null; then
		cat >"$W/musl-gai.c" <<'EOF'
#include <netdb.h>
#include <stdio.h>
#include <arpa/inet.h>
int main(int argc, char **argv) {
	struct addrinfo h = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *r, *p;
	char b[64];
	int e = getaddrinfo(argv[1], "80", &h, &r);
	if (e) { printf("EAI %d\n", e); return 2; }
	for (p = r; p; p = p->ai_next)
		printf("%s\n", inet_ntop(AF_INET, &((struct sockaddr_in *)p->ai_addr)->sin_addr, b, sizeof b));
	return 0;
}
EOF
		if musl-gcc -static -O2 -o "$W/musl-gai" "$W/musl-gai.c" >"$W/musl.out" 2>&1; then
			chmod 0755 "$W/musl-gai"
			MUSL=$W/musl-gai
		else
			note "musl-gcc could not build the musl client: $(head -c 200 "$W/musl.out")"
		fi
	fi
	# what confined scripts source
	cat >"$W/prelude.sh" <<EOF
RW=$RW
DQ="$PY $C/dnsq.py"
# dq KEY ARGS...: one dnsq JSON line tagged KEY
dq() { k=\$1; shift; \$DQ --tag "\$k" "\$@"; }
# dg KEY DIGARGS...: dig's output in \$RW/KEY.dig, "DIG KEY rc=N" on stdout
dg() { k=\$1; shift; dig +time=3 +tries=1 "\$@" >"\$RW/\$k.dig" 2>&1; echo "DIG \$k rc=\$?"; }
# pc KEY ARGS...: one pclient JSON line tagged KEY (a plain TCP client)
pc() { k=\$1; shift; $PY $C/pclient.py --tag "\$k" --timeout 5 "\$@"; }
# await FILE: wait (up to 30 s) until the suite creates FILE
await() { i=0; while [ ! -e "\$1" ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done; }
EOF
	chmod 0644 "$W/prelude.sh"
}

# ------------------------------------------------------------- helpers

# drun TAG EGRESSCTL-RUN-ARGS... -- CMD...: egressctl run, confined as
# nobody, resolving at $UPSTREAM (default: the dnsmasq), decision log in
# $W/TAG.jlog
drun() {
	local tag=$1
	shift
	egr "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "${UPSTREAM:-$INET_DNS}" \
		--log "$W/$tag.jlog" "$@"
}
drun_bg() {
	local tag=$1
	shift
	egr_bg "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "${UPSTREAM:-$INET_DNS}" \
		--log "$W/$tag.jlog" "$@"
}


# jvd LINE: jv, every P_ variable this suite reads defined (set -u)
jvd() {
	local v
	for v in ${!P_@}; do unset "$v"; done
	P_rcode="" P_rr="" P_an="" P_ttls="" P_add="" P_from="" P_ms="" P_addrs="" P_id_ok=""
	P_data="" P_nbytes="" P_tc="" P_cases="{}" P_ids="{}" P_closed="" P_replies="" P_qps=0 P_sent=""
	P_answered="" P_rcodes="" P_median_us="" P_p90_us=""
	jv "$1"
}

# dj TAG KEY: jvd the dnsq/pclient JSON line tagged KEY in TAG's output
dj() {
	local line
	line=$(grep -m1 -E "^\\{\"tag\": ?\"$(re "$2")\"" "$W/$1.out" 2>/dev/null)
	if [ -z "$line" ]; then
		jvd '{"ok": false, "errno": "NOJSON"}'
		P_json="no JSON line tagged $2 (egressctl rc=$EGR_RC, stderr: $(head -c 300 "$W/$1.err" | tr '\n' '|'))"
		return 1
	fi
	jvd "$line"
}

# pj TAG N: jvd the Nth JSON line (a probe.py line) of TAG's output; the
# fields of the fast-path lifetime probes are defined even when missing
pj() {
	local line
	line=$(nth_json "$W/$1.out" "$2")
	jvd "${line:-"{\"ok\": false, \"errno\": \"NOJSON\"}"}"
	[ -n "$line" ] || P_json="no JSON line #$2 (egressctl rc=$EGR_RC, stderr: $(head -c 300 "$W/$1.err" | tr '\n' '|'))"
	: "${P_local:=}" "${P_peer:=}" "${P_unread:=}" "${P_banner:=}" "${P_echo:=}" "${P_echo_errno:=}"
	: "${P_local2:=}" "${P_peer2:=}" "${P_banner2:=}"
}

# sensor_no_text NAME TEXT: no packet the sensor captured carries TEXT
# (case-insensitive) in its first 256 bytes
sensor_no_text() {
	local n
	sensor_sync
	n=$(tcpdump -r "$PCAP" -n -A 2>/dev/null | grep -Fic -- "$2")
	if [ "$n" = 0 ]; then ok "$1"; else fail "$1" "LEAK: $n packet line(s) carry '$2'"; fi
}

# a_pj NAME WHAT GOT ERE: GOT (a P_ value) matches ERE as a whole
a_pj() {
	if [[ $3 =~ ^($4)$ ]]; then ok "$1"; else fail "$1" "$2: got '$3', want /$4/ ($P_json)"; fi
}

# a_dq NAME TAG KEY RCODE RR-ERE: dnsq line KEY answered RCODE with an
# answer section ("TYPE DATA,...") matching RR-ERE
a_dq() {
	dj "$2" "$3"
	a_pj "$1" "rcode / answers" "$P_rcode / $P_rr" "$4 / $5"
}

# a_dig NAME TAG KEY STATUS [ANSWER-ERE]: dig's output for KEY has
# "status: STATUS" and, if given, an answer line matching ANSWER-ERE
a_dig() {
	local f=$RW/$3.dig
	if ! grep -q "status: $4," "$f" 2>/dev/null; then
		fail "$1" "dig $3: no 'status: $4' ($(grep -m1 -E 'status:|connection|timed out|error' "$f" 2>/dev/null || echo "no output; $(head -c 200 "$W/$2.err" | tr '\n' '|')"))"
	elif [ -n "${5:-}" ] && ! grep -Eq -- "$5" "$f"; then
		fail "$1" "dig $3: no answer line /$5/: $(grep -v '^;' "$f" | grep . | head -3 | tr '\n' '|')"
	else
		ok "$1"
	fi
}

# qcount ERE: lines of dnsmasq's query log matching ERE
qcount() { grep -Ec -- "$1" "$DNSLOG" 2>/dev/null; }

# dns_sync: a control query for a fresh name straight to dnsmasq, waited
# for in its log: every query that reached dnsmasq before is logged by then
dns_sync() {
	local n
	SYNCN=$((SYNCN + 1))
	n=sync$SYNCN.ctl.test
	in_sbx dig -b "$CTL_SRC" +time=2 +tries=1 @"$INET_DNS" "$n" A >/dev/null 2>&1
	wait_for 3 grep -q "query\\[A\\] $(re "$n") from" "$DNSLOG"
}

# a_never NAME ERE: dnsmasq never saw a query whose line matches ERE (-i)
a_never() {
	dns_sync
	if ! grep -Eiq -- "$2" "$DNSLOG" 2>/dev/null; then ok "$1"; else
		fail "$1" "dnsmasq saw: $(grep -Ei -- "$2" "$DNSLOG" | head -2 | tr '\n' '|')"
	fi
}

# a_qcount NAME ERE N: dnsmasq's log has exactly N lines matching ERE
a_qcount() {
	local n
	dns_sync
	n=$(qcount "$2")
	if [ "$n" = "$3" ]; then ok "$1"; else
		fail "$1" "dnsmasq logged $n line(s) matching /$2/, want $3: $(grep -E -- "$2" "$DNSLOG" | head -3 | tr '\n' '|')"
	fi
}

# fastmap PATH: the egr_fast entries of the pinned map PATH, one per line:
# "IP PORT PROTO expires_in_ms hits" (expires_in_ms "-" for no deadline)
fastmap() {
	bpftool -j map dump pinned "$1" 2>"$W/bpftool.err" | "$PY" -c '
import json, socket, struct, sys, time
now = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
def raw(v):
    return bytes(int(x, 16) for x in v)
try:
    ents = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for e in ents:
    k, v = raw(e["key"]), raw(e["value"])
    ip = socket.inet_ntop(socket.AF_INET, k[12:16]) if k[:12] == b"\0" * 10 + b"\xff\xff" \
        else socket.inet_ntop(socket.AF_INET6, k[:16])
    port = struct.unpack(">H", k[16:18])[0]
    exp, hits = struct.unpack("<QQ", v[:16])
    print(ip, port, k[18], "-" if not exp else (exp - now) // 1000000, hits)
'
}

# fast_has IP PORT: the map dump in $FASTDUMP has a TCP entry for IP:PORT
fast_has() { grep -q "^$(re "$1") $2 6 " <<<"$FASTDUMP"; }
fast_lacks() { ! fast_has "$1" "$2"; }
fast_gone() {	# fast_gone IP PORT: re-dump $FASTMAP; true when no entry
	FASTDUMP=$(fastmap "$FASTMAP")
	! fast_has "$1" "$2"
}

# fast_start TAG SECONDS READY GO...: after drun_bg TAG, wait for its pins
# (FASTMAP is then its fast-path map) and for the script's READY file, and
# dump the map into FASTDUMP; without pins, release the script (touch GO...),
# reap egressctl and return 1
fast_start() {
	local t=$1 secs=$2 ready=$3 dir
	shift 3
	dir=$(cg_path "$t")
	if ! egr_wait_pins "$dir"; then
		fail "$t.setup" "no pins for $dir: $(head -c 400 "$W/$t.err")"
		touch "$@"
		egr_join 10
		return 1
	fi
	FASTMAP=$PINDIR/map_fast
	if ! wait_for "$secs" test -e "$ready"; then
		fail "$t.ready" "the confined script never got past its first connects: $(head -c 400 "$W/$t.err")"
	fi
	FASTDUMP=$(fastmap "$FASTMAP")
}

# fast_gone_live IP PORT: fast_gone, and egressctl still runs with its map
# pinned (an empty dump of a vanished map is no proof of removal)
fast_gone_live() {
	kill -0 "$EGR_PID" 2>/dev/null && bpftool map show pinned "$FASTMAP" >/dev/null 2>&1 &&
		fast_gone "$1" "$2"
}

# ======================================================================
# 1, 3, 4. an allowed name resolves for getent, dig, python (and musl),
# over UDP sendto, connected UDP and TCP, whatever resolver address the
# client uses; the reply comes from the address asked; nothing reaches the
# wire for those addresses; dnsmasq is asked once (the answer is cached)
# ======================================================================
test_resolve() {
	local t=resolve base
	# control: the addresses serve nothing, and the sensor sees attempts
	in_sbx dig +time=2 +tries=1 @"$CTL_NS" allowed.test A >"$W/$t.control.dig" 2>&1
	a_nogrep "$t.control.nobody_answers" "$W/$t.control.dig" "status:"
	sensor_saw "$t.control.sensor" "udp and dst host $CTL_NS and dst port 53"
	base=$(sensor_now "dst host $OTHER_NS or dst host $RESOLV_NS or dst host $OTHER_NS2")
	local musl_line=""
	[ -n "$MUSL" ] && musl_line="$MUSL allowed.test >\$RW/$t.musl; echo \"MUSL rc=\$?\""
	script "$t" <<EOF
getent hosts allowed.test >\$RW/$t.getent; echo "GETENT rc=\$?"
getent ahostsv4 www.allowed.test >\$RW/$t.getent2; echo "GETENT2 rc=\$?"
dg $t.dig allowed.test A
dg $t.dig_other @$OTHER_NS allowed.test A
dg $t.dig_tcp +tcp allowed.test A
dg $t.dig_tcp_other +tcp @$OTHER_NS2 www.allowed.test A
dq $t.gai gai allowed.test
dq $t.sendto q allowed.test A --server $OTHER_NS
dq $t.connected q allowed.test A --server $OTHER_NS --connected
dq $t.tcp q allowed.test A --server $OTHER_NS --tcp
dq $t.upstream_addr q www.allowed.test A --server $INET_DNS
$musl_line
EOF
	drun "$t" --allow '**.allowed.test' -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_grep "$t.getent.rc" "$W/$t.out" "^GETENT rc=0\$"
	a_grep "$t.getent.addr" "$RW/$t.getent" "^$(re "$A_ALLOWED") +allowed\\.test\$"
	a_grep "$t.getent_ahostsv4.addr" "$RW/$t.getent2" "^$(re "$A_WWW") +STREAM www\\.allowed\\.test\$"
	a_dig "$t.dig.resolv_conf" "$t" "$t.dig" NOERROR "^allowed\\.test\\.[[:space:]]+[0-9]+[[:space:]]+IN[[:space:]]+A[[:space:]]+$(re "$A_ALLOWED")\$"
	a_grep "$t.dig.server_seen" "$RW/$t.dig.dig" "^;; SERVER: $(re "$RESOLV_NS")#53\\($(re "$RESOLV_NS")\\) \\(UDP\\)"
	a_dig "$t.dig.other_address" "$t" "$t.dig_other" NOERROR "IN[[:space:]]+A[[:space:]]+$(re "$A_ALLOWED")\$"
	a_grep "$t.dig.other_address_server" "$RW/$t.dig_other.dig" "^;; SERVER: $(re "$OTHER_NS")#53"
	a_dig "$t.dig_tcp.resolv_conf" "$t" "$t.dig_tcp" NOERROR "IN[[:space:]]+A[[:space:]]+$(re "$A_ALLOWED")\$"
	a_grep "$t.dig_tcp.over_tcp" "$RW/$t.dig_tcp.dig" "^;; SERVER: $(re "$RESOLV_NS")#53\\($(re "$RESOLV_NS")\\) \\(TCP\\)"
	a_dig "$t.dig_tcp.other_address" "$t" "$t.dig_tcp_other" NOERROR "IN[[:space:]]+A[[:space:]]+$(re "$A_WWW")\$"
	dj "$t" "$t.gai"
	a_pj "$t.python_getaddrinfo" "addresses" "$P_addrs" "\\[\"$(re "$A_ALLOWED")\"\\]"
	a_dq "$t.udp_sendto" "$t" "$t.sendto" NOERROR "A $(re "$A_ALLOWED")"
	a_pj "$t.udp_sendto.reply_from_address_asked" "reply source" "$P_from" "$(re "$OTHER_NS"):53"
	a_dq "$t.udp_connected" "$t" "$t.connected" NOERROR "A $(re "$A_ALLOWED")"
	a_pj "$t.udp_connected.peer" "getpeername" "$P_from" "$(re "$OTHER_NS"):53"
	a_dq "$t.tcp" "$t" "$t.tcp" NOERROR "A $(re "$A_ALLOWED")"
	a_pj "$t.tcp.peer" "getpeername" "$P_from" "$(re "$OTHER_NS"):53"
	a_dq "$t.to_upstream_address" "$t" "$t.upstream_addr" NOERROR "A $(re "$A_WWW")"
	if [ -n "$MUSL" ]; then
		a_grep "$t.musl_getaddrinfo" "$RW/$t.musl" "^$(re "$A_ALLOWED")\$"
	else
		note "$t: no musl-gcc: the musl resolver is not exercised"
	fi
	a_jlog "$t.log_allow" "$W/$t.jlog" decision=allow source=dns host=allowed.test comm=python3 \
		"pid=[0-9]+" "cgroup=$(cgid "$t")"
	# one upstream query per name for the whole run, from egressctl (cache)
	a_qcount "$t.upstream_asked_once" "query\\[A\\] allowed\\.test from 198\\.18\\.0\\.2" 1
	a_qcount "$t.upstream_asked_once_www" "query\\[A\\] www\\.allowed\\.test from 198\\.18\\.0\\.2" 1
	sensor_none_since "$t.sensor_nothing_to_the_addresses_asked" "$base" \
		"dst host $OTHER_NS or dst host $RESOLV_NS or dst host $OTHER_NS2"
}

# ======================================================================
# 2. a name no rule allows: REFUSED at once, the denial line, the JSON
# record; neither it nor an exfiltration-style name reaches dnsmasq
# ======================================================================
test_denied() {
	local t=denied exfil
	exfil=$(head -c 30 /dev/urandom | base32 | tr -d =).evil.test
	# control: upstream, other.test exists (from the control address)
	a_eq "$t.control.upstream_knows_the_name" "dig -b $CTL_SRC @$INET_DNS other.test" \
		"$(in_sbx dig -b "$CTL_SRC" +short +time=2 +tries=1 @"$INET_DNS" other.test A 2>&1)" "$A_OTHER"
	script "$t" <<EOF
dg $t.dig other.test A
dq $t.udp q other.test A
dq $t.tcp q other.test A --tcp
dq $t.exfil q $exfil TXT --server $OTHER_NS
dq $t.exfil_tcp q x1.$exfil A --tcp
dq $t.gai gai other.test
getent hosts other.test; echo "GETENT rc=\$?"
dq $t.allowed q allowed.test A
EOF
	drun "$t" --allow '**.allowed.test' -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_dig "$t.dig_refused" "$t" "$t.dig" REFUSED
	a_dq "$t.udp_refused" "$t" "$t.udp" REFUSED ""
	a_dq "$t.tcp_refused" "$t" "$t.tcp" REFUSED ""
	a_dq "$t.exfil_refused" "$t" "$t.exfil" REFUSED ""
	a_dq "$t.exfil_tcp_refused" "$t" "$t.exfil_tcp" REFUSED ""
	dj "$t" "$t.gai"
	a_pj "$t.getaddrinfo_fails" "getaddrinfo" "$P_ok/$P_errno" "false/EAI:.*"
	a_grep "$t.getent_fails" "$W/$t.out" "^GETENT rc=[1-9]"
	a_dq "$t.allowed_still_answered" "$t" "$t.allowed" NOERROR "A $(re "$A_ALLOWED")"
	# (dig's queries are sent by its thread "isc-net-0000": the comm is the thread's)
	a_grep "$t.denial_line" "$W/$t.err" "^egressctl: denied (dig|isc-[a-z]+-[0-9]+)\\[[0-9]+\\] → other\\.test \\(no rule allows this name( \\(type [0-9]+\\))?, dns\\)"
	a_grep "$t.denial_line_python" "$W/$t.err" "^egressctl: denied python3\\[[0-9]+\\] → other\\.test \\(no rule allows this name( \\(type [0-9]+\\))?, dns\\)"
	a_grep "$t.denial_line_getent" "$W/$t.err" "^egressctl: denied getent\\[[0-9]+\\] → other\\.test \\(no rule allows this name( \\(type [0-9]+\\))?, dns\\)"
	a_grep "$t.denial_line_exfil" "$W/$t.err" "^egressctl: denied python3\\[[0-9]+\\] → $(re "${exfil,,}") \\(no rule allows this name( \\(type [0-9]+\\))?, dns\\)"
	a_jlog "$t.log" "$W/$t.jlog" decision=deny source=dns host=other.test comm=python3 \
		"pid=[0-9]+" "cgroup=$(cgid "$t")" "reason=no rule allows this name.*"
	a_jlog "$t.log_exfil" "$W/$t.jlog" decision=deny source=dns "host=(?i)$(re "$exfil")" comm=python3
	a_never "$t.upstream_never_asked" "other\\.test from 198\\.18\\.0\\.2"
	a_never "$t.exfil_never_reached_upstream" "evil\\.test|${exfil%%.*}"
	sensor_no_text "$t.exfil_never_on_the_wire" "${exfil%%.*}"
}

# ======================================================================
# 5. an allowed name answered with loopback / private addresses: those A
# records are stripped unless a rule names the address
# ======================================================================
test_local_answers() {
	local t=local_answers u=local_named
	script "$t" <<EOF
dq $t.lo q local.allowed.test A
dq $t.priv q private.allowed.test A
dq $t.mixed q mixed.allowed.test A
dq $t.priv_tcp q private.allowed.test A --tcp
getent hosts local.allowed.test; echo "GETENT rc=\$?"
EOF
	drun "$t" --allow '**.allowed.test' -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_dq "$t.loopback_stripped" "$t" "$t.lo" NOERROR ""
	a_dq "$t.private_stripped" "$t" "$t.priv" NOERROR ""
	a_dq "$t.private_stripped_tcp" "$t" "$t.priv_tcp" NOERROR ""
	a_dq "$t.mixed_public_kept" "$t" "$t.mixed" NOERROR "A $(re "$A_MIXED")"
	a_grep "$t.getent_finds_nothing" "$W/$t.out" "^GETENT rc=[1-9]"
	# and said so: one decision per name, no --allow of the name suggested
	a_jlog "$t.said_loopback" "$W/$t.jlog" decision=deny source=dns host=local.allowed.test \
		reason="resolves only to local or private addresses"
	a_jlog "$t.said_private" "$W/$t.jlog" decision=deny source=dns host=private.allowed.test
	a_jlog_none "$t.mixed_not_denied" "$W/$t.jlog" decision=deny host=mixed.allowed.test
	a_grep "$t.denial_line" "$W/$t.err" \
		"^egressctl: denied [^ ]+\\[[0-9]+\\] → local\\.allowed\\.test \\(resolves only to local or private addresses, dns\\)"
	# the upstream did answer with them: the responder stripped them
	a_grep "$t.upstream_answered_loopback" "$DNSLOG" "local\\.allowed\\.test is 127\\.0\\.0\\.1"
	a_grep "$t.upstream_answered_private" "$DNSLOG" "private\\.allowed\\.test is 10\\.0\\.0\\.5"
	script "$u" <<EOF
dq $u.priv q private.allowed.test A
dq $u.lo q local.allowed.test A
EOF
	drun "$u" --allow '**.allowed.test' --allow 10.0.0.5 -- /bin/sh "$W/$u.sh"
	a_rc "$u.exit" 0 "$u"
	a_dq "$u.named_private_kept" "$u" "$u.priv" NOERROR "A 10\\.0\\.0\\.5"
	a_dq "$u.loopback_still_stripped" "$u" "$u.lo" NOERROR ""
	sensor_none "$t.sensor_nothing_to_10.0.0.5" "dst host 10.0.0.5"
}

# ======================================================================
# 6, 7. AAAA: empty, never asked upstream; ANY: REFUSED; CNAME chains,
# TXT, MX, SRV, HTTPS pass through; TTLs bounded to [5, 300]; NXDOMAIN
# ======================================================================
test_types() {
	local t=types
	# control: dnsmasq logs AAAA and ANY queries when it gets them
	in_sbx dig -b "$CTL_SRC" +time=2 +tries=1 @"$INET_DNS" allowed.test AAAA >"$W/$t.control_aaaa.dig" 2>&1
	in_sbx dig -b "$CTL_SRC" +time=2 +tries=1 @"$INET_DNS" allowed.test ANY >"$W/$t.control_any.dig" 2>&1
	a_grep "$t.control.any_answered_upstream" "$W/$t.control_any.dig" "status: NOERROR,"
	dns_sync
	a_grep "$t.control.aaaa_logged" "$DNSLOG" "query\\[AAAA\\] allowed\\.test from $(re "$CTL_SRC")"
	a_grep "$t.control.any_logged" "$DNSLOG" "query\\[ANY\\] allowed\\.test from $(re "$CTL_SRC")"
	script "$t" <<EOF
dq $t.aaaa q allowed.test AAAA
dq $t.aaaa_tcp q www.allowed.test AAAA --tcp
dg $t.dig_aaaa long.allowed.test AAAA
dq $t.any q allowed.test ANY
dg $t.dig_any allowed.test ANY
dq $t.cname q www.chain.test A
dg $t.dig_cname www.chain.test A
dq $t.txt q txt.allowed.test TXT
dq $t.mx q mx.allowed.test MX
dq $t.srv q _ssh._tcp.allowed.test SRV
dq $t.https q https.allowed.test HTTPS
dq $t.short q short.allowed.test A
dq $t.long q long.allowed.test A
dq $t.nx q nx.allowed.test A
dq $t.big_noedns q big.allowed.test TXT --noedns
dq $t.big_edns q big.allowed.test TXT
dq $t.big_tcp q big.allowed.test TXT --tcp
EOF
	drun "$t" --allow '**.allowed.test' --allow www.chain.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_dq "$t.aaaa_empty" "$t" "$t.aaaa" NOERROR ""
	a_dq "$t.aaaa_empty_tcp" "$t" "$t.aaaa_tcp" NOERROR ""
	a_dig "$t.dig_aaaa_empty" "$t" "$t.dig_aaaa" NOERROR
	a_grep "$t.dig_aaaa_answer_0" "$RW/$t.dig_aaaa.dig" "ANSWER: 0,"
	a_never "$t.aaaa_never_upstream" "query\\[AAAA\\] .* from 198\\.18\\.0\\.2"
	a_dq "$t.any_refused" "$t" "$t.any" REFUSED ""
	a_dig "$t.dig_any_refused" "$t" "$t.dig_any" REFUSED
	a_never "$t.any_never_upstream" "query\\[ANY\\] .* from 198\\.18\\.0\\.2"
	a_dq "$t.cname_chain" "$t" "$t.cname" NOERROR \
		"CNAME mid\\.chain\\.test,CNAME end\\.chain\\.test,A $(re "$A_CHAIN")"
	a_dig "$t.dig_cname_chain" "$t" "$t.dig_cname" NOERROR "^end\\.chain\\.test\\.[[:space:]]+[0-9]+[[:space:]]+IN[[:space:]]+A[[:space:]]+$(re "$A_CHAIN")\$"
	a_dq "$t.txt" "$t" "$t.txt" NOERROR "TXT v=egr1 hello\\|second string"
	a_dq "$t.mx" "$t" "$t.mx" NOERROR "MX 10 mail\\.allowed\\.test"
	a_pj "$t.mx_no_additional_glue" "additional records" "$P_add" ""
	a_dq "$t.srv" "$t" "$t.srv" NOERROR "SRV 0 5 22 git\\.test"
	a_dq "$t.https" "$t" "$t.https" NOERROR "HTTPS 00010000010003026832"
	a_dq "$t.short_ttl.answer" "$t" "$t.short" NOERROR "A $(re "$A_SHORT")"
	a_pj "$t.ttl_raised_to_5" "TTL (upstream 1)" "$P_ttls" 5
	a_dq "$t.long_ttl.answer" "$t" "$t.long" NOERROR "A $(re "$A_LONG")"
	a_pj "$t.ttl_capped_at_300" "TTL (upstream 86400)" "$P_ttls" "300|29[0-9]"
	a_dq "$t.nxdomain" "$t" "$t.nx" NXDOMAIN ""
	# 800 bytes of TXT: truncated (TC) for a client without EDNS (512),
	# whole with EDNS (1232) and over TCP
	dj "$t" "$t.big_noedns"
	a_pj "$t.big.udp_no_edns_truncated" "rcode / tc / size" "$P_rcode/$P_tc/$P_nbytes" "NOERROR/true/([0-9]{1,2}|[1-4][0-9]{2}|50[0-9]|51[0-2])"
	a_dq "$t.big.udp_edns_whole" "$t" "$t.big_edns" NOERROR "TXT ($BIGTXT\\|){3}$BIGTXT"
	a_dq "$t.big.tcp_whole" "$t" "$t.big_tcp" NOERROR "TXT ($BIGTXT\\|){3}$BIGTXT"
	a_jlog "$t.log_any" "$W/$t.jlog" decision=deny source=dns host=allowed.test "reason=ANY.*"
}

# ======================================================================
# 8. cache and coalescing: the second query, in any letter case, is not
# asked upstream; 20 concurrent identical queries for a fresh name (whose
# upstream takes 0.4 s) make one upstream query
# ======================================================================
test_cache() {
	local t=cache
	script "$t" <<EOF
dq $t.first q c1.wild.test A
dq $t.second q c1.wild.test A
dq $t.case q C1.Wild.TEST A --tcp
dq $t.burst burst co1.slow.test A 20
dq $t.after q co1.slow.test A
EOF
	drun "$t" --allow '**.wild.test' --allow '**.slow.test' -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_dq "$t.first" "$t" "$t.first" NOERROR "A $(re "$A_WILD")"
	a_pj "$t.first.ttl" "TTL (dnsmasq: 60)" "$P_ttls" "60|59"
	a_dq "$t.second" "$t" "$t.second" NOERROR "A $(re "$A_WILD")"
	a_pj "$t.second.ttl_not_above" "TTL" "$P_ttls" "60|5[0-9]"
	a_dq "$t.other_case" "$t" "$t.case" NOERROR "A $(re "$A_WILD")"
	a_qcount "$t.upstream_asked_once" "query\\[A\\] c1\\.wild\\.test from" 1
	dj "$t" "$t.burst"
	a_pj "$t.burst.all_answered" "answered / rcodes / addresses" "$P_answered/$P_rcodes/$P_addrs" \
		"20/\\{\"NOERROR\": 20\\}/\\[\"$(re "$A_SLOW")\"\\]"
	a_dq "$t.after_burst" "$t" "$t.after" NOERROR "A $(re "$A_SLOW")"
	a_qcount "$t.burst.dnsmasq_asked_once" "query\\[A\\] co1\\.slow\\.test from" 1
	if [ "$(grep -c "^Q co1\\.slow\\.test A " "$SLOWLOG")" = 1 ]; then ok "$t.burst.slow_server_asked_once"; else
		fail "$t.burst.slow_server_asked_once" "slow server saw: $(grep co1 "$SLOWLOG" | tr '\n' '|')"
	fi
}

# ======================================================================
# 9. tcp://git.test:22: a plain TCP client by name reaches :22 over the
# kernel fast path (the map holds (address, 22) while alive, no proxy
# decision), :2222 is reset and logged under the learned name; the entry
# goes after the TTL (5 s); a connect to the bare address is then judged
# by the proxy under the learned name; resolving again re-opens it
# ======================================================================
test_fastpath() {
	local t=fastpath i dir
	script "$t" <<EOF
pc $t.a22 tcp git.test 22 --until egr-22
pc $t.a2222 tcp git.test 2222 --until egr-2222
touch \$RW/$t.ready1
await $W/$t.go1
pc $t.b22 tcp $A_GIT 22 --until egr-22
pc $t.c22 tcp git.test 22 --until egr-22
touch \$RW/$t.ready2
await $W/$t.go2
EOF
	# any-port.test: a rule of any port, so that :2222 reaches the
	# transparent listener rather than being refused at connect
	drun_bg "$t" --allow tcp://git.test:22 --allow any-port.test -- /bin/sh "$W/$t.sh"
	fast_start "$t" 20 "$RW/$t.ready1" "$W/$t.go1" "$W/$t.go2" || return
	note "$t: map_fast: $(tr '\n' ';' <<<"$FASTDUMP") $(head -c 200 "$W/bpftool.err")"
	dj "$t" "$t.a22"
	a_pj "$t.banner_22" "data" "$P_data" "SSH-2\\.0-egr-22"$'\r\n'
	expect "$t.map_has_entry" "no TCP entry $A_GIT:22 in $FASTMAP: '$FASTDUMP'" fast_has "$A_GIT" 22
	if fast_has "$A_GIT" 22; then
		i=$(grep "^$(re "$A_GIT") 22 6 " <<<"$FASTDUMP" | awk '{ print $5 }')
		a_pj "$t.map_entry_used_by_the_kernel" "hits" "$i" "[1-9][0-9]*"
		i=$(grep "^$(re "$A_GIT") 22 6 " <<<"$FASTDUMP" | awk '{ print $4 }')
		a_pj "$t.map_entry_expires_within_ttl" "ms to expiry" "$i" "[0-9]{1,4}"
	fi
	expect "$t.map_no_2222" "an entry for :2222: '$FASTDUMP'" fast_lacks "$A_GIT" 2222
	a_jlog_none "$t.no_proxy_decision_for_22" "$W/$t.jlog" source=transparent port=22
	dj "$t" "$t.a2222"
	a_pj "$t.2222_reset_nothing_received" "bytes received / closed (EOF or RST, not the timeout)" "$P_nbytes/$P_closed" "0/true"
	a_jlog "$t.2222_denied_logged_by_name" "$W/$t.jlog" decision=deny source=transparent host=git.test port=2222
	a_grep "$t.2222_denial_line" "$W/$t.err" "^egressctl: denied python3\\[[0-9]+\\] → git\\.test:2222 "
	# the TTL is 5 s; the sweep runs every second
	if wait_secs 12 fast_gone_live "$A_GIT" 22; then ok "$t.entry_removed_after_ttl"; else
		fail "$t.entry_removed_after_ttl" "still there 12 s after the answer (or egressctl gone): '$FASTDUMP'"
	fi
	touch "$W/$t.go1"
	wait_for 20 test -e "$RW/$t.ready2"
	FASTDUMP=$(fastmap "$FASTMAP")
	expect "$t.resolving_again_reopens" "no entry $A_GIT:22 after resolving again: '$FASTDUMP'" fast_has "$A_GIT" 22
	touch "$W/$t.go2"
	egr_join 20
	a_rc "$t.exit" 0 "$t"
	dj "$t" "$t.b22"
	a_pj "$t.learned_name.banner" "data (bare address after the entry expired)" "$P_data" "SSH-2\\.0-egr-22"$'\r\n'
	a_jlog "$t.learned_name.proxy_allowed" "$W/$t.jlog" decision=allow source=transparent host=git.test port=22 \
		'rule=tcp://git\.test:22'
	dj "$t" "$t.c22"
	a_pj "$t.again.banner" "data" "$P_data" "SSH-2\\.0-egr-22"$'\r\n'
	a_qcount "$t.upstream_asked_again_after_ttl" "query\\[A\\] git\\.test from" 2
	a_grep "$t.server_saw_22" "$WEBLOG" "^ACCEPT banner local=$(re "$A_GIT"):22 peer=198\\.18\\.0\\.2:"
	a_nogrep "$t.server_saw_nothing_on_2222" "$WEBLOG" "local=$(re "$A_GIT"):2222 "
	sensor_none "$t.sensor_nothing_to_2222" "tcp and dst host $A_GIT and dst port 2222"
}

# ======================================================================
# 9b. the life of a fast-path socket, with tcp://short.allowed.test:22
# (TTL 1, raised to 5): a connection made while the entry exists stays
# direct and usable after the entry is gone (its record, not the entry,
# lets its packets out); a NEW connection to the same address afterwards
# is not direct: it is redirected to egressctl's transparent listener and
# allowed there under the learned name.  close() with unread data on a
# fast-path socket resets the connection: the RST reaches the server (the
# catch-all passes a bare RST of a socket in TCP_CLOSE, whose record is
# already freed by then).
# ======================================================================
test_fastpath_held() {
	local t=fastpath_held dir hport rport
	script "$t" <<EOF
$PROBE --timeout 25 --token $t.held hold_echo short.allowed.test 22 \$RW/$t.held $W/$t.go >\$RW/$t.hold &
hold=\$!
await \$RW/$t.held
$PROBE --token $t.rst rst_close short.allowed.test 22
touch \$RW/$t.ready
wait \$hold
cat \$RW/$t.hold
EOF
	drun_bg "$t" --allow tcp://short.allowed.test:22 -- /bin/sh "$W/$t.sh"
	fast_start "$t" 15 "$RW/$t.ready" "$W/$t.go" || return
	expect "$t.entry_while_connecting" "no TCP entry $A_SHORT:22 in $FASTMAP: '$FASTDUMP'" fast_has "$A_SHORT" 22
	# the connection close()d with unread data, checked at once: the
	# banner server's own 15 s timeout, and the RST its FIN would then draw
	# from the closed port, are far off
	pj "$t" 1
	a_ok "$t.rst.connect"
	a_pj "$t.rst.direct_with_unread_data" "local address / unread bytes" "$P_local/$P_unread" \
		"198\\.18\\.0\\.2:[0-9]+/[1-9][0-9]*"
	rport=${P_local##*:}
	if wait_secs 3 grep -Eq "^ERR banner local=$(re "$A_SHORT"):22 peer=198\\.18\\.0\\.2:$rport ConnectionResetError" "$WEBLOG"; then
		ok "$t.rst.server_saw_reset"
	else
		fail "$t.rst.server_saw_reset" "no reset of peer port ${rport:-?} in $(basename "$WEBLOG"): $(grep -E "peer=198\\.18\\.0\\.2:${rport:-x}( |\$)" "$WEBLOG" | tr '\n' '|')"
	fi
	sensor_saw "$t.rst.sensor_saw_rst" \
		"tcp and dst host $A_SHORT and dst port 22 and src port ${rport:-0} and tcp[tcpflags] & tcp-rst != 0"
	# the TTL is 5 s; the sweep runs every second (egressctl must still run:
	# once it has exited, the map is gone too)
	# shellcheck disable=SC2317 # called by wait_secs
	if wait_secs 8 fast_gone_live "$A_SHORT" 22; then ok "$t.entry_removed"; else
		fail "$t.entry_removed" "still there after 8 s (or egressctl gone): '$FASTDUMP'"
	fi
	touch "$W/$t.go"
	egr_join 20
	a_rc "$t.exit" 0 "$t"
	# the held connection, and the new one after the entry's removal
	pj "$t" 2
	a_ok "$t.held.ok"
	a_pj "$t.held.was_direct" "local / peer / banner" "$P_local / $P_peer / $P_banner" \
		"198\\.18\\.0\\.2:[0-9]+ / $(re "$A_SHORT"):22 / SSH-2\\.0-egr-22"
	hport=${P_local##*:}
	a_pj "$t.held.echo_after_removal" "echo on the held connection after the entry's removal (recv errno ${P_echo_errno:-none})" \
		"$P_echo" "probe $(re "$t").held"
	a_grep "$t.held.server_saw_data_direct" "$WEBLOG" \
		"^DATA banner local=$(re "$A_SHORT"):22 peer=198\\.18\\.0\\.2:${hport:-x} probe $(re "$t")\\.held\$"
	a_pj "$t.new_conn.redirected" "local / peer (getpeername) / banner of a new connection after the removal" \
		"$P_local2 / $P_peer2 / $P_banner2" "127\\.0\\.0\\.1:[0-9]+ / $(re "$A_SHORT"):22 / SSH-2\\.0-egr-22"
	a_jlog "$t.new_conn.proxy_allowed_by_learned_name" "$W/$t.jlog" decision=allow source=transparent \
		host=short.allowed.test port=22 'rule=tcp://short\.allowed\.test:22'
}

# ======================================================================
# 10. the upstream never answers: SERVFAIL within a bound, no hang; a
# denied name is still REFUSED at once
# ======================================================================
test_upstream_down() {
	local t=upstream_down before
	before=$(qcount "allowed\\.test from")
	script "$t" <<EOF
dq $t.udp --timeout 12 q allowed.test A &
dq $t.tcp --timeout 12 q allowed.test A --tcp &
dg $t.dig +time=12 allowed.test A &
dq $t.refused q other.test A
wait
EOF
	UPSTREAM=$DOWN_NS drun "$t" --allow '**.allowed.test' -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	dj "$t" "$t.udp"
	a_pj "$t.udp_servfail" "rcode" "$P_rcode" SERVFAIL
	a_pj "$t.udp_within_8s" "ms" "$P_ms" "[0-7]?[0-9]{1,3}"
	dj "$t" "$t.tcp"
	a_pj "$t.tcp_servfail" "rcode" "$P_rcode" SERVFAIL
	a_pj "$t.tcp_within_8s" "ms" "$P_ms" "[0-7]?[0-9]{1,3}"
	a_dig "$t.dig_servfail" "$t" "$t.dig" SERVFAIL
	dj "$t" "$t.refused"
	a_pj "$t.denied_refused_at_once" "rcode / ms" "$P_rcode/$P_ms" "REFUSED/[0-9]{1,3}"
	sensor_saw "$t.egressctl_asked_the_down_upstream" "udp and dst host $DOWN_NS and dst port 53"
	dns_sync
	a_eq "$t.dnsmasq_not_asked" "dnsmasq lines for allowed.test" "$(qcount "allowed\\.test from")" "$before"
}

# ======================================================================
# 11. garbage from inside the sandbox, UDP and TCP, at a resolver address:
# FORMERR/NOTIMP when the id is readable, nothing otherwise; the TCP
# connection is closed after a zero-length frame; the responder goes on
# ======================================================================
test_garbage() {
	local t=garbage base
	base=$(sensor_now "dst host $RESOLV_NS")
	script "$t" <<EOF
dq $t.udp garbage-udp $RESOLV_NS 53
dq $t.tcp garbage-tcp $RESOLV_NS 53
dq $t.pipe tcp-pipe allowed.test www.allowed.test nx.allowed.test
dq $t.gone tcp-pipe gone.slow.test --close
dq $t.gone_udp q gone.slow.test A
dq $t.after_udp q allowed.test A
dq $t.after_tcp q www.allowed.test A --tcp
EOF
	drun "$t" --allow '**.allowed.test' --allow '**.slow.test' -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	dj "$t" "$t.udp"
	local cases=$P_cases ids=$P_ids c want
	for c in random:FORMERR one_byte:none five_bytes:none response:'FORMERR|none' \
		truncated_question:FORMERR qdcount2:FORMERR opcode_status:'NOTIMP|FORMERR' \
		trailing_bytes:FORMERR pointer_loop:FORMERR; do
		want=${c#*:}
		c=${c%%:*}
		a_pj "$t.udp.$c" "reply rcode" "$(jq_get "$cases" "$c")" "$want"
	done
	a_pj "$t.udp.ids_echoed" "ids matched" "$ids" '\{("[a-z_0-9]+": true(, )?)*\}'
	dj "$t" "$t.tcp"
	a_pj "$t.tcp.closed_after_zero_length_frame" "ok / closed / replies" "$P_ok/$P_closed/$P_replies" \
		'true/true/\[("(FORMERR|NOTIMP)"(, )?)*\]'
	# pipelined TCP queries; a TCP client gone while its answer is upstream
	dj "$t" "$t.pipe"
	a_pj "$t.tcp.pipelined" "replies" "$P_replies" \
		"\\[\"allowed\\.test NOERROR $(re "$A_ALLOWED")\", \"nx\\.allowed\\.test NXDOMAIN \", \"www\\.allowed\\.test NOERROR $(re "$A_WWW")\"\\]"
	a_dq "$t.tcp.client_gone_then_udp" "$t" "$t.gone_udp" NOERROR "A $(re "$A_SLOW")"
	a_dq "$t.udp_still_answers" "$t" "$t.after_udp" NOERROR "A $(re "$A_ALLOWED")"
	a_dq "$t.tcp_still_answers" "$t" "$t.after_tcp" NOERROR "A $(re "$A_WWW")"
	a_never "$t.garbage_never_upstream" "query\\[[A-Z0-9]+\\] (g\\.test|allow) "
	sensor_none_since "$t.sensor" "$base" "dst host $RESOLV_NS"
}

jq_get() { "$PY" -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], "missing"))' "$1" "$2"; }

# ======================================================================
# 12. the responder's port from OUTSIDE the cgroup (the suite itself, in
# the sandbox host's netns): no answer, nothing asked upstream
# ======================================================================
test_outsider() {
	local t=outsider port
	script "$t" <<EOF
dq $t.before q allowed.test A
touch \$RW/$t.ready
await $W/$t.go
dq $t.after q www.allowed.test A
EOF
	drun_bg "$t" --allow '**.allowed.test' --allow '**.wild.test' -- /bin/sh "$W/$t.sh"
	if ! wait_for 20 test -e "$RW/$t.ready"; then
		fail "$t.ready" "the confined script never started: $(head -c 400 "$W/$t.err")"
	fi
	port=$(in_sbx ss -Hlunp | awk -v p="pid=$EGR_PID," '$0 ~ p && $4 ~ /^127\.0\.0\.1:/ { sub(/.*:/, "", $4); print $4; exit }')
	if [ -z "$port" ]; then
		fail "$t.port" "no UDP socket of egressctl ($EGR_PID) on 127.0.0.1: $(in_sbx ss -Hlunp | tr '\n' '|')"
	else
		note "$t: the responder listens on 127.0.0.1:$port"
		jvd "$(in_sbx "$PY" "$C/dnsq.py" --timeout 2 q outsider.wild.test A --server 127.0.0.1 --port "$port")"
		a_pj "$t.udp_no_answer" "result" "$P_ok/$P_errno" "false/TIMEOUT"
		jvd "$(in_sbx "$PY" "$C/dnsq.py" --timeout 2 q outsider2.wild.test A --server 127.0.0.1 --port "$port" --tcp)"
		a_pj "$t.tcp_no_answer" "result" "$P_ok/$P_errno" "false/(ECONNRESET|EPIPE|ECONNREFUSED|TIMEOUT)"
		jvd "$(in_sbx setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" "$C/dnsq.py" --timeout 2 q outsider3.wild.test A --server 127.0.0.1 --port "$port")"
		a_pj "$t.udp_as_nobody_no_answer" "result" "$P_ok/$P_errno" "false/TIMEOUT"
	fi
	touch "$W/$t.go"
	egr_join 20
	a_rc "$t.exit" 0 "$t"
	a_dq "$t.confined_before" "$t" "$t.before" NOERROR "A $(re "$A_ALLOWED")"
	a_dq "$t.confined_after" "$t" "$t.after" NOERROR "A $(re "$A_WWW")"
	a_never "$t.never_upstream" "outsider"
	a_jlog_none "$t.not_logged" "$W/$t.jlog" "host=outsider.*"
}

# ======================================================================
# Regression: two runs side by side with
# different policies. Run B allows **.wild.test; its command resolved a
# name through port 53 (from 127.0.0.1:X) and closed the socket. Run A
# (allowed.test only) used B's DNS port, UDP and TCP, B's HTTP proxy,
# SOCKS5 and transparent ports -- behind [::] binds of those ports, which
# made them look like A's own -- and its UDP query from B's old
# 127.0.0.1:X was credited to B's process by B's stale index entry and
# answered under B's policy. Now A's programs refuse every one of B's
# ports (they belong to no socket of A's), and B's responder has no entry
# for X once B's socket is gone: a run A in audit mode (its programs let
# everything through) and a host process get no answer from B either.
# ======================================================================
# bstat PID: "HTTP SOCKS TRANSPARENT DNS ACCEPTED UNATTRIBUTED QUERIES" of
# the live run with egressctl pid PID (egressctl status -j)
bstat() {
	in_sbx timeout 10 "$EGRESSCTL" status -j 2>/dev/null | "$PY" -c '
import json, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    sys.exit()
for o in doc if isinstance(doc, list) else []:
    r = (o or {}).get("run") or {}
    if r.get("pid") == int(sys.argv[1]):
        p, d = r.get("proxy") or {}, r.get("dns") or {}
        print(p.get("http_port"), p.get("socks_port"), p.get("transparent_port"), d.get("port"),
              p.get("accepted"), p.get("unattributed"), d.get("queries"))' "$1"
}

test_two_runs() {
	local t=two_runs bpid x st bhttp bsocks btp bdns acc0 una0 q0 acc una q p
	script "${t}_b" <<EOF
$PY $C/probe.py --token $t.b dns_udp $RESOLV_NS tr-b1.wild.test 53
touch \$RW/$t.b.ready
await $W/$t.b.go
EOF
	drun_bg "${t}_b" --allow '**.wild.test' -- /bin/sh "$W/${t}_b.sh"
	bpid=$EGR_PID
	if ! wait_for 20 test -e "$RW/$t.b.ready" || ! st=$(bstat "$bpid") || [ -z "$st" ]; then
		fail "$t.setup" "run B did not come up: $(head -c 400 "$W/${t}_b.err")"
		touch "$W/$t.b.go"
		egr_join 10
		return 0
	fi
	read -r bhttp bsocks btp bdns _ <<<"$st"
	note "$t: run B (pid $bpid): http $bhttp, socks $bsocks, transparent $btp, dns $bdns"
	# control: B's own query was answered under B's policy, from 127.0.0.1:X
	jvl "$(nth_json "$W/${t}_b.out" 1)"
	a_pj "$t.control.b_answered" "B's query: ok, answer" "$P_ok, $P_data" "true, $(re "$A_WILD")"
	a_pj "$t.control.b_port" "B's query socket" "$P_local" "0\\.0\\.0\\.0:[0-9]+"
	x=${P_local##*:}
	# control: B's listeners are up (a connection from outside any sandbox
	# is accepted, and refused as unattributed)
	jvl "$(probe_root --token "$t.outside" tcp4 127.0.0.1 "$bhttp")"
	a_pj "$t.control.b_proxy_listens" "connect to B's proxy from outside: the step reached" \
		"$P_step" "(send|recv)"
	read -r _ _ _ _ acc0 una0 q0 <<<"$(bstat "$bpid")"

	# run A, enforcing: every one of B's ports, each behind a [::] bind of it
	script "${t}_a" <<EOF
P="$PY $C/probe.py"
\$P --token a.udp dns_udp 127.0.0.1 tr-a1.wild.test $bdns
\$P --token a.stale bound udp/6/::/$bdns/v6only -- dns_udp_from 127.0.0.1 $x 127.0.0.1 tr-a2.wild.test $bdns
\$P --token a.tcp bound tcp/6/::/$bdns/v6only -- dns_tcp 127.0.0.1 tr-a3.wild.test $bdns
\$P --token a.http bound tcp/6/::/$bhttp/v6only -- tcp4 127.0.0.1 $bhttp
\$P --token a.socks bound tcp/6/::/$bsocks/v6only -- tcp4 127.0.0.1 $bsocks
\$P --token a.tp bound tcp/6/::/$btp/v6only -- tcp4 127.0.0.1 $btp
\$P --timeout 30 bound tcp/6/::/$bhttp/v6only tcp/6/::/$bsocks/v6only ready=\$RW/$t.a.held -- hold_until \$RW/$t.a.done >/dev/null &
await \$RW/$t.a.held
curl -sS --max-time 5 -x http://127.0.0.1:$bhttp http://tr-a4.wild.test/ >/dev/null 2>&1; echo "CURL http rc=\$?"
curl -sS --max-time 5 --socks5-hostname 127.0.0.1:$bsocks http://tr-a5.wild.test/ >/dev/null 2>&1; echo "CURL socks rc=\$?"
touch \$RW/$t.a.done; wait
EOF
	drun "${t}_a" --allow allowed.test -- /bin/sh "$W/${t}_a.sh"
	a_rc "$t.a.exit" 0 "${t}_a"
	jvl "$(nth_json "$W/${t}_a.out" 1)"
	a_pj "$t.a.dns_udp.refused" "ok/errno" "$P_ok/$P_errno" "false/EPERM"
	jvl "$(nth_json "$W/${t}_a.out" 2)"
	a_pj "$t.a.dns_udp_from_b_port.refused" "held, bound to, ok/errno, answer" \
		"$P_held, $P_local, $P_ok/$P_errno, $P_data" \
		"\\[\"OK \\[::\\]:$bdns\"\\], 127\\.0\\.0\\.1:$x, false/EPERM, "
	jvl "$(nth_json "$W/${t}_a.out" 3)"
	a_pj "$t.a.dns_tcp.refused" "ok/errno" "$P_ok/$P_errno" "false/ECONNREFUSED"
	jvl "$(nth_json "$W/${t}_a.out" 4)"
	a_pj "$t.a.http_proxy.refused" "ok/errno" "$P_ok/$P_errno" "false/ECONNREFUSED"
	jvl "$(nth_json "$W/${t}_a.out" 5)"
	a_pj "$t.a.socks5.refused" "ok/errno" "$P_ok/$P_errno" "false/ECONNREFUSED"
	jvl "$(nth_json "$W/${t}_a.out" 6)"
	a_pj "$t.a.transparent.refused" "ok/errno" "$P_ok/$P_errno" "false/ECONNREFUSED"
	a_grep "$t.a.curl_http.refused" "$W/${t}_a.out" "^CURL http rc=7\$"
	a_grep "$t.a.curl_socks.refused" "$W/${t}_a.out" "^CURL socks rc=(7|97)\$"
	for p in "$bdns" "$bhttp" "$bsocks" "$btp"; do
		a_jlog "$t.a.logged.$p" "$W/${t}_a.jlog" decision=deny source=bpf ip=127.0.0.1 "port=$p" \
			"reason=loopback port not served by this sandbox"
	done
	read -r _ _ _ _ acc una q <<<"$(bstat "$bpid")"
	a_eq "$t.a.b_saw_nothing" "B's accepted, unattributed, queries (before A: $acc0 $una0 $q0)" \
		"$acc $una $q" "$acc0 $una0 $q0"

	# run A in audit mode: its programs let everything through, B's
	# listeners refuse what is not in B's own index
	script "${t}_c" <<EOF
P="$PY $C/probe.py"
\$P --token c.stale dns_udp_from 127.0.0.1 $x 127.0.0.1 tr-c1.wild.test $bdns
\$P --token c.tcp dns_tcp 127.0.0.1 tr-c2.wild.test $bdns
curl -sS --max-time 5 -x http://127.0.0.1:$bhttp http://tr-c3.wild.test/ >/dev/null 2>&1; echo "CURL http rc=\$?"
curl -sS --max-time 5 --socks5-hostname 127.0.0.1:$bsocks http://tr-c4.wild.test/ >/dev/null 2>&1; echo "CURL socks rc=\$?"
\$P --token c.tp tcp4 127.0.0.1 $btp
EOF
	drun "${t}_c" --audit --allow allowed.test -- /bin/sh "$W/${t}_c.sh"
	a_rc "$t.audit.exit" 0 "${t}_c"
	jvl "$(nth_json "$W/${t}_c.out" 1)"
	a_pj "$t.audit.dns_udp_from_b_port.unanswered" "bound to, ok/errno" "$P_local, $P_ok/$P_errno" \
		"127\\.0\\.0\\.1:$x, false/TIMEOUT"
	jvl "$(nth_json "$W/${t}_c.out" 2)"
	a_pj "$t.audit.dns_tcp.unanswered" "ok/errno" "$P_ok/$P_errno" "false/(EOF|ECONNRESET|TIMEOUT)"
	a_grep "$t.audit.curl_http.unanswered" "$W/${t}_c.out" "^CURL http rc=(52|56)\$"
	a_grep "$t.audit.curl_socks.unanswered" "$W/${t}_c.out" "^CURL socks rc=(52|56|97)\$"
	jvl "$(nth_json "$W/${t}_c.out" 3)"
	a_pj "$t.audit.transparent.unanswered" "ok/errno, data" "$P_ok/$P_errno, $P_data" \
		"(true/|false/ECONNRESET), "
	a_jlog "$t.audit.would_deny_logged" "$W/${t}_c.jlog" decision=would-deny source=bpf ip=127.0.0.1 \
		"port=$bdns"
	# a host process outside any sandbox, from 127.0.0.1:X: no answer
	jvl "$(probe_root --token "$t.host" dns_udp_from 127.0.0.1 "$x" 127.0.0.1 tr-h1.wild.test "$bdns")"
	a_pj "$t.host.dns_udp_from_b_port.unanswered" "bound to, ok/errno" "$P_local, $P_ok/$P_errno" \
		"127\\.0\\.0\\.1:$x, false/TIMEOUT"
	read -r _ _ _ _ acc una q <<<"$(bstat "$bpid")"
	a_eq "$t.b.answered_only_its_own" "B's DNS queries (before: $q0)" "$q" "$q0"
	a_eq "$t.b.refused_the_audit_run" "B's unattributed refusals (before: $una0)" "$una" "$((una0 + 3))"

	touch "$W/$t.b.go"
	egr_join 20
	a_rc "$t.b.exit" 0 "${t}_b"
	a_jlog_none "$t.b.judged_nothing_of_a" "$W/${t}_b.jlog" "host=tr-[ach][0-9].*"
	a_never "$t.never_upstream" "tr-[ach][0-9]\\.wild\\.test"
}

# ======================================================================
# the whole run: DNS reached the wire only for the suite's dnsmasq, the
# down upstream of test 10 and the control address, never the host's
# resolver
# ======================================================================
test_hygiene() {
	local ns f=""
	while read -r ns; do
		f="${f:+$f or }dst host $ns"
	done <"$W/host-nameservers"
	if [ -n "$f" ]; then sensor_none "hygiene.host_resolver_never_used" "$f"; fi
	sensor_none "hygiene.dns_only_to_the_test_upstreams" \
		"dst port 53 and not dst host $INET_DNS and not dst host $DOWN_NS and not dst host $CTL_NS"
}

# ======================================================================
# measurements (E2E_MEASURE=1 or E2E_TESTS=measure): printed, not asserted
# ======================================================================
test_measure() {
	local t=measure i q=198.18.0.4
	# a second dnsmasq without the query log (which costs it a write per
	# query): the upstream of this test and the "direct" comparison
	ip -n "$INET" addr add "$q/24" dev "$INET_IF"
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dns-quiet.pid" \
		--no-resolv --no-hosts --no-poll --bind-interfaces --listen-address="$q" --port=53 \
		--local=/test/ --no-negcache --cache-size=0 --local-ttl=60 \
		--address=/wild.test/$A_WILD >"$W/dns-quiet.out" 2>&1 &
	PIDS+=($!)
	for i in $(seq 40); do
		[ "$(in_sbx dig +short +time=1 +tries=1 @"$q" q.wild.test A 2>/dev/null)" = "$A_WILD" ] && break
		sleep 0.1
	done
	script "$t" <<EOF
dq $t.warm q bench.wild.test A
dq $t.lat lat bench.wild.test 500
dq $t.cached load bench.wild.test 5 64
dq $t.uncached load {}.fresh.wild.test 5 64
sleep 1
dq $t.lat2 lat bench.wild.test 500
EOF
	# no --log: the responder's own cost
	EGR_TIMEOUT=60 egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$q" \
		--quiet --allow '**.wild.test' -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	jvd "$(in_sbx "$PY" "$C/dnsq.py" lat bench2.wild.test 500 --server "$q")"
	local dmed=$P_median_us dp90=$P_p90_us
	jvd "$(in_sbx "$PY" "$C/dnsq.py" load bench2.wild.test 5 64 --server "$q")"
	local dqps=$P_qps
	dj "$t" "$t.cached"
	note "measure: responder, cached name: $P_qps q/s (sent $P_sent, answered $P_answered, $P_rcodes)"
	local cq=$P_qps
	dj "$t" "$t.uncached"
	note "measure: responder, fresh names (upstream each): $P_qps q/s (sent $P_sent, answered $P_answered, $P_rcodes)"
	local uq=$P_qps
	note "measure: dnsmasq directly (a configured name, no query log, no egressctl): $dqps q/s"
	dj "$t" "$t.lat"
	note "measure: latency, cached answer via the responder: median ${P_median_us} us, p90 ${P_p90_us} us (before the load)"
	local lmed=$P_median_us
	dj "$t" "$t.lat2"
	note "measure: latency, cached answer via the responder: median ${P_median_us} us, p90 ${P_p90_us} us (after the load)"
	note "measure: latency, dnsmasq directly: median ${dmed} us, p90 ${dp90} us"
	note "measure: ratios: cached/direct q/s $("$PY" -c "print(round($cq / max($dqps, 1), 2))"), uncached/direct $("$PY" -c "print(round($uq / max($dqps, 1), 2))"), cached latency/direct $("$PY" -c "print(round(${lmed:-0} / max(${dmed:-1}, 1), 2))")"
}

# ======================================================================

# ======================================================================
# 9c. deny rules win on the fast path, and exact-address rules open it
# wherever they are written. With tcp://git.test:22 allowed but its
# address denied, the responder's answer opens no fast-path entry and the
# connection, redirected, is denied by the address rule: nothing reaches
# the server (test_fastpath is the control: the same rule without the
# deny goes direct). An exact ADDR:PORT allow rule in a --policy file (not
# only on the command line) opens the kernel fast path for good.
# ======================================================================
test_fastpath_rules() {
	local t=fastrules pf
	script "$t" <<EOF
pc $t.named tcp git.test 22 --until egr-22
touch \$RW/$t.ready
await $W/$t.go
EOF
	drun_bg "$t" --allow tcp://git.test:22 --deny "$A_GIT" -- /bin/sh "$W/$t.sh"
	fast_start "$t" 20 "$RW/$t.ready" "$W/$t.go" || return
	expect "$t.deny_addr.no_entry" "an entry $A_GIT:22 in $FASTMAP despite the deny rule: '$FASTDUMP'" \
		fast_lacks "$A_GIT" 22
	touch "$W/$t.go"
	egr_join 20
	dj "$t" "$t.named"
	a_pj "$t.deny_addr.nothing_received" "bytes received" "$P_nbytes" "0"
	a_jlog "$t.deny_addr.denied_by_address" "$W/$t.jlog" decision=deny source=transparent port=22 \
		"rule=$(re "$A_GIT")"
	# the policy file's exact address rule
	pf=$W/$t.policy.json
	printf '{"allow": ["%s:22"]}\n' "$A_GIT" >"$pf"
	chmod 0644 "$pf"
	script "$t.file" <<EOF
pc $t.file.addr tcp $A_GIT 22 --until egr-22
touch \$RW/$t.file.ready
await $W/$t.file.go
EOF
	drun_bg "$t.file" --policy "$pf" -- /bin/sh "$W/$t.file.sh"
	fast_start "$t.file" 20 "$RW/$t.file.ready" "$W/$t.file.go" || return
	expect "$t.policy_file.entry" "no entry $A_GIT:22 from the policy file's rule: '$FASTDUMP'" \
		fast_has "$A_GIT" 22
	touch "$W/$t.file.go"
	egr_join 20
	dj "$t.file" "$t.file.addr"
	a_pj "$t.policy_file.banner" "data" "$P_data" "SSH-2\\.0-egr-22"$'\r\n'
	a_jlog_none "$t.policy_file.no_proxy_decision" "$W/$t.file.jlog" source=transparent port=22
}

ALL_TESTS="resolve denied local_answers types cache fastpath fastpath_held fastpath_rules upstream_down garbage outsider two_runs hygiene${E2E_MEASURE:+ measure}"

suite_main dns.sh dns_setup "ip nsenter setpriv unshare mount tcpdump ss dig getent dnsmasq bpftool timeout" "$@"
