#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of egressctl behind a corporate proxy (--upstream-proxy,
# docs/operations.md "Behind a corporate proxy"): the sandbox host has no
# route to the test internet but to a real squid, which egressctl reaches
# for what its policy allows.
#
#   control     no route: outside egressctl the servers cannot be reached,
#               and egressctl without --upstream-proxy fails too (its
#               CONNECT 502, a transparent connection refused)
#   connect     CONNECT through egressctl's HTTP proxy to a name only squid
#               can resolve: squid is asked by name and the server answers
#   http        plain HTTP through egressctl's HTTP proxy: squid gets it in
#               absolute form (never CONNECT, which it allows to 443 only)
#   socks       SOCKS5 with a name, TLS inside
#   transparent CMD resolves and connects itself (no proxy variables): TLS
#               and plain HTTP go through squid, not the kernel-verified path;
#               a name the network's resolver does not know fails at DNS
#   tcp         a tcp:// rule (server-first: the banner right behind squid's
#               reply reaches the client), transparent and through SOCKS5;
#               not the kernel fast path
#   denied      denied names (CONNECT, plain HTTP, SOCKS5, transparent by
#               address): 403 / 0x02 / a reset, nothing at squid (its log,
#               the sensor)
#   auth        squid with basic auth (basic_ncsa_auth on a file of the
#               suite's): the credentials from --upstream-proxy-auth FILE
#               and from $EGRESSCTL_UPSTREAM_PROXY_CREDENTIALS reach squid
#               (its log names the user) for CONNECT and plain HTTP; they
#               are in no egressctl output, log or summary, not in its
#               argv or environment, not in CMD's environment; without
#               them: 502 naming squid's 407
#   failures    the upstream refuses connections (502
#               upstream-proxy-unreachable, SOCKS5 0x01, transparent: a
#               reset), hangs (504 upstream-proxy-timeout), answers no HTTP,
#               refuses CONNECT to a port (502 upstream-proxy-refused with
#               its 403; SOCKS5 0x02), cannot resolve a name (its 503; SOCKS5
#               0x04)
#   noproxy     --upstream-no-proxy: the exception (given a route of its
#               own) goes direct on the kernel-verified path and through
#               egressctl's proxy, CMD's NO_PROXY lists it and only it, squid
#               never sees it; without the exception it goes through squid
#   check       egressctl check names the path; bad options refused, no
#               credentials echoed
#
# The test network: lib.sh's, the sandbox host's default routes removed:
# it reaches 198.18.0.0/24 only (the veth's link), and 203.0.113.50 (the
# exception) by a route of its own. In the internet namespace: squid on
# 198.18.0.1:3128 (open) and :3129 (basic auth), its own config, no cache,
# logs in the suite's work dir, CONNECT allowed to ports 443 and 7022; the
# "corporate" resolver egressctl uses (dnsmasq on 198.18.0.1:53) knows
# web.up.test (203.0.113.20) and direct.up.test (203.0.113.50) only;
# squid's resolver (dnsmasq on 127.0.0.1:53 there) knows hidden.up.test
# (.21) and deny.up.test (.22) too; webservers.py serves HTTP on :80, TLS on
# :443 and :8443 (a certificate for *.up.test made here) and a banner on
# :7022 at those addresses; upstub.py stands in for a proxy that hangs
# (:3130), answers garbage (:3132), or sends a server's first bytes with
# its reply (:3133); nothing listens on :3131. The
# confined commands resolve through /etc/resolv.conf, bind-mounted
# (private mount namespace) to name 198.51.100.53, which egressctl
# redirects to its responder.
#
# Output: "ok NAME" / "FAIL NAME: reason"; last line "N passed, M failed".
# Exit 1 if any failed, 77 if not root or no cgroup2.

set -u
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"

SQ=198.18.0.1
UP=http://$SQ:3128
UP_AUTH=http://$SQ:3129
CORP_DNS=198.18.0.1
RESOLV_NS=198.51.100.53
A_WEB=203.0.113.20	# web.up.test: both resolvers
A_HIDDEN=203.0.113.21	# hidden.up.test: squid's resolver only
A_DENY=203.0.113.22	# deny.up.test: squid's resolver only
A_DIRECT=203.0.113.50	# direct.up.test: the exception, with a route
SQLOG=$W/squid/access.log
SQUID_NAME=egrup$$	# squid's service name (-n)
SQUID_PID=
WEBLOG=$W/web.log
CRED_USER=alice
CRED_PW=Hunter2-s3cr3t
# the token squid gets: the password must not show in any form
CRED_B64=$(printf '%s:%s' "$CRED_USER" "$CRED_PW" | base64)
PKT_SQ="tcp and dst host $SQ and (dst port 3128 or dst port 3129)"
PKT_WEB="dst net 203.0.113.0/24"

# squid stopped first and given time to remove its shared-memory
# segments, then lib.sh's cleanup; then whatever segments are left
up_cleanup() {
	local i
	if [ -n "$SQUID_PID" ] && kill -TERM "$SQUID_PID" 2>/dev/null; then
		for i in $(seq 60); do
			kill -0 "$SQUID_PID" 2>/dev/null || break
			sleep 0.05
		done
	fi
	e2e_cleanup
	rm -f /dev/shm/"$SQUID_NAME"-*.shm
}

up_squid() {
	local i
	mkdir -m 0755 "$W/squid" && chown proxy:proxy "$W/squid" || return 1
	openssl passwd -apr1 "$CRED_PW" | sed "s/^/$CRED_USER:/" >"$W/squid/passwd" || return 1
	chmod 0644 "$W/squid/passwd"
	cat >"$W/squid/squid.conf" <<EOF
http_port $SQ:3128
http_port $SQ:3129
visible_hostname egr-upstream-test
acl SSL_ports port 443 7022
acl CONNECT method CONNECT
acl authport localport 3129
auth_param basic program /usr/lib/squid/basic_ncsa_auth $W/squid/passwd
auth_param basic realm egr-test
auth_param basic children 2
acl authed proxy_auth REQUIRED
http_access deny CONNECT !SSL_ports
http_access deny authport !authed
http_access allow all
cache deny all
cache_mem 0 MB
access_log stdio:$SQLOG
cache_log $W/squid/cache.log
cache_store_log none
pid_filename $W/squid/squid.pid
coredump_dir $W/squid
logfile_rotate 0
pinger_enable off
shutdown_lifetime 0 seconds
dns_nameservers 127.0.0.1
dns_timeout 3 seconds
connect_timeout 3 seconds
EOF
	# -n: a service name of its own, so its shared-memory segments
	# (/dev/shm/NAME-cf__*.shm) are this run's (up_cleanup removes them).
	# Not a job of the suite's shell: the reaper (e2e_reexec) takes it
	SQUID_PID=$(nsenter --net="$NS_INET" sh -c 'squid -N -n "$1" -f "$2" >"$3" 2>&1 & echo $!' \
		sh "$SQUID_NAME" "$W/squid/squid.conf" "$W/squid/out")
	PIDS+=("$SQUID_PID")
	trap up_cleanup EXIT
	for i in $(seq 200); do
		inet_listening 3129 && break
		sleep 0.05
	done
	inet_listening 3129 || { echo "squid did not start: $(tail -5 "$W/squid/cache.log" "$W/squid/out")"; return 1; }
}

up_setup() {
	local i n
	e2e_base_setup || return 1
	cp "$E2E_SRC/clients/upstub.py" "$C/" && chmod 0755 "$C/upstub.py" || return 1
	# no route out but the veth's link, and the exception's own
	ip -n "$SBX" route del default || return 1
	ip -n "$SBX" -6 route del default || return 1
	ip -n "$SBX" route add "$A_DIRECT/32" via 198.18.0.1 || return 1
	printf 'nameserver %s\noptions timeout:2 attempts:1\n' "$RESOLV_NS" >"$W/resolv.conf"
	chmod 0644 "$W/resolv.conf"
	if ! e2e_private_mntns; then
		echo "not in a private mount namespace: resolv.conf left alone"
		return 1
	fi
	mount --bind "$W/resolv.conf" /etc/resolv.conf || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$W/tls.key" -out "$W/tls.crt" -subj /CN=web.up.test \
		-addext "subjectAltName=DNS:*.up.test" >"$W/openssl.out" 2>&1 || return 1
	chmod 0644 "$W/tls.crt"
	# the network's resolver (egressctl's) and squid's own
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dns-corp.pid" \
		--no-resolv --no-hosts --no-poll --bind-interfaces --listen-address="$CORP_DNS" --port=53 \
		--local=/test/ --no-negcache --cache-size=0 \
		--host-record=web.up.test,$A_WEB --host-record=direct.up.test,$A_DIRECT \
		--host-record=ctl.test,203.0.113.99 >"$W/dns-corp.out" 2>&1 &
	PIDS+=($!)
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dns-squid.pid" \
		--no-resolv --no-hosts --no-poll --bind-interfaces --listen-address=127.0.0.1 --port=53 \
		--local=/test/ --no-negcache --cache-size=0 \
		--host-record=web.up.test,$A_WEB --host-record=hidden.up.test,$A_HIDDEN \
		--host-record=deny.up.test,$A_DENY --host-record=direct.up.test,$A_DIRECT \
		>"$W/dns-squid.out" 2>&1 &
	PIDS+=($!)
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$WEBLOG" \
		--bind "$A_WEB,$A_HIDDEN,$A_DENY,$A_DIRECT" --http 80 --tls 443,8443 --banner 7022 \
		--cert "$W/tls.crt" --key "$W/tls.key" >"$W/web.ready" 2>"$W/web.err" &
	PIDS+=($!)
	nsenter --net="$NS_INET" "$PY" "$C/upstub.py" --log "$W/stub.log" --bind "$SQ" \
		--silent 3130 --garbage 3132 --eager 3133 >"$W/stub.ready" 2>"$W/stub.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/web.ready" 2>/dev/null && grep -q READY "$W/stub.ready" 2>/dev/null && break
		sleep 0.05
	done
	grep -q READY "$W/web.ready" || { echo "webservers failed: $(cat "$W/web.err")"; return 1; }
	grep -q READY "$W/stub.ready" || { echo "upstub failed: $(cat "$W/stub.err")"; return 1; }
	up_squid || return 1
	sensor_start || return 1
	for i in $(seq 40); do
		n=$(in_sbx dig +short +time=1 +tries=1 @"$CORP_DNS" ctl.test A 2>/dev/null)
		[ "$n" = 203.0.113.99 ] && break
		sleep 0.1
	done
	[ "$n" = 203.0.113.99 ] || { echo "dnsmasq: ctl.test gave '$n'"; return 1; }
	: >"$SQLOG"
	chown proxy:proxy "$SQLOG"
	cat >"$W/prelude.sh" <<EOF
PC="$PY $C/pclient.py"
RW=$RW
CRT=$W/tls.crt
# cu KEY CURLARGS...: "KEY code=HTTP connect=CONNECT-CODE rc=EXIT", body in \$RW/KEY.body
cu() {
	k=\$1; shift
	r=\$(curl -sS --max-time 12 --cacert "\$CRT" -o "\$RW/\$k.body" -w "\$k code=%{http_code} connect=%{http_connect}" "\$@" 2>"\$RW/\$k.err")
	rc=\$?
	echo "\$r rc=\$rc"
}
# pc KEY ARGS...: one pclient JSON line tagged KEY
pc() { k=\$1; shift; \$PC --tag "\$k" --timeout 6 "\$@"; }
EOF
	chmod 0644 "$W/prelude.sh"
}

# ------------------------------------------------------------- helpers

# uprun TAG ARGS... -- CMD...: egressctl run confined as nobody, with the
# network's resolver and a decision log in $W/TAG.jlog (--upstream-proxy
# is the test's to give)
uprun() {
	local tag=$1
	shift
	egr "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$CORP_DNS" \
		--log "$W/$tag.jlog" "$@"
}

# a_cu NAME TAG KEY ERE: the curl result line of KEY (in TAG's output)
# matches "KEY ERE" as a whole
a_cu() {
	local line
	line=$(grep -m1 "^$3 code=" "$W/$2.out" 2>/dev/null)
	if [[ $line =~ ^$(re "$3")\ $4$ ]]; then ok "$1"; else
		fail "$1" "curl: got '${line:-no result line (egressctl rc=$EGR_RC, stderr: $(head -c 300 "$W/$2.err" | tr '\n' '|'))}', want '$3 $4' (curl stderr: $(head -c 300 "$RW/$3.err" 2>/dev/null | tr '\n' '|'))"
	fi
}

# pj TAG KEY: jv the pclient JSON line tagged KEY in TAG's output
pj() {
	local line
	line=$(grep -m1 -E "^\\{\"tag\": ?\"$(re "$2")\"" "$W/$1.out" 2>/dev/null)
	if [ -z "$line" ]; then
		jv '{"ok": false, "errno": "NOJSON"}'
		P_status="" P_code="" P_xpe="" P_nbytes="" P_closed="" P_body="" P_data=""
		P_json="no JSON line tagged $2 (egressctl rc=$EGR_RC, stderr: $(head -c 300 "$W/$1.err" | tr '\n' '|'))"
		return 1
	fi
	jv "$line"
}

# a_pj NAME WHAT GOT ERE: GOT (a P_ value) matches ERE as a whole
a_pj() {
	if [[ $3 =~ ^($4)$ ]]; then ok "$1"; else fail "$1" "$2: got '$3', want /$4/ ($P_json)"; fi
}

# squid's access log: sq_mark before an attempt, sq_saw / sq_none after.
# squid writes a line when a transaction ends; sq_sync makes one of its own
# (from the internet namespace, so nothing at the sensor) and waits for it,
# so that every line of what came before it is there.
SQN=0
sq_mark() { SQM=$(wc -l <"$SQLOG"); }
sq_new() { tail -n +"$((SQM + 1))" "$SQLOG"; }
sq_sync() {
	SQN=$((SQN + 1))
	in_inet curl -s -o /dev/null --max-time 5 -x "$UP" "http://web.up.test/sync-$SQN" >/dev/null 2>&1
	wait_for 5 grep -q "sync-$SQN " "$SQLOG"
}
sq_has() { sq_new | grep -qE "$1"; }
sq_saw() {
	if wait_for 5 sq_has "$2"; then ok "$1"; else
		fail "$1" "squid never logged /$2/: $(sq_new | tail -3 | tr '\n' '|')"
	fi
}
sq_none() {
	sq_sync
	if sq_new | grep -v " http://web.up.test/sync-" | grep -qE "$2"; then
		fail "$1" "LEAK: squid logged /$2/: $(sq_new | grep -E "$2" | head -2 | tr '\n' '|')"
	else ok "$1"; fi
}

web_mark() { WEBN=$(wc -l <"$WEBLOG"); }
web_new() { tail -n +"$((WEBN + 1))" "$WEBLOG"; }
web_saw() {
	if web_new | grep -aqE "$2"; then ok "$1"; else fail "$1" "server never logged /$2/: $(web_new | tail -3 | tr '\n' '|')"; fi
}
web_none() {
	if web_new | grep -aqE "$2"; then fail "$1" "the server logged /$2/: $(web_new | grep -aE "$2" | head -2 | tr '\n' '|')"; else ok "$1"; fi
}

# ---------------------------------------------------------------- tests

test_control() {
	local t=up_control
	# outside egressctl: no route to the servers, only to squid's link
	jv "$(probe_nobody tcp4 "$A_WEB" 443)"
	a_errno up.control.no_route ENETUNREACH
	jv "$(probe_nobody tcp4 "$A_DIRECT" 7022)"
	a_ok up.control.exception_routed
	have_egr || return 0
	# egressctl without --upstream-proxy: an allowed name fails on every path
	script "$t" <<'EOF'
cu via_proxy --noproxy '' https://web.up.test/
cu transparent --noproxy '*' https://web.up.test/
EOF
	uprun "$t" --allow web.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.control.connect_502 "$t" via_proxy "code=000 connect=502 rc=56"
	a_cu up.control.transparent_fails "$t" transparent "code=000 connect=000 rc=(7|28|35|56)"
}

test_connect() {
	local t=up_connect
	have_egr || return 0
	sq_mark
	web_mark
	script "$t" <<'EOF'
cu c1 https://hidden.up.test/connect
EOF
	uprun "$t" --upstream-proxy "$UP" --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.connect.ok "$t" c1 "code=200 connect=200 rc=0"
	sq_saw up.connect.squid_by_name " CONNECT hidden\.up\.test:443 "
	web_saw up.connect.server "^HTTPS .*method=GET target=/connect host=hidden\.up\.test"
	a_jlog up.connect.logged "$W/$t.jlog" source=connect decision=allow host=hidden.up.test
}

test_http() {
	local t=up_http
	have_egr || return 0
	sq_mark
	web_mark
	script "$t" <<'EOF'
cu h1 http://hidden.up.test/plain?x=1
EOF
	uprun "$t" --upstream-proxy "$UP" --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.http.ok "$t" h1 "code=200 connect=000 rc=0"
	# (squid leaves the query out of its log)
	sq_saw up.http.absolute_form " GET http://hidden\.up\.test/plain\? "
	sq_none up.http.no_connect "CONNECT hidden\.up\.test:80"
	web_saw up.http.server "^HTTP .*method=GET target=/plain\?x=1 host=hidden\.up\.test"
	a_jlog up.http.logged "$W/$t.jlog" source=http decision=allow host=hidden.up.test method=GET
}

test_socks() {
	local t=up_socks
	have_egr || return 0
	sq_mark
	script "$t" <<'EOF'
cu s1 --proxy "$ALL_PROXY" https://hidden.up.test/socks
EOF
	uprun "$t" --upstream-proxy "$UP" --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.socks.ok "$t" s1 "code=200 connect=000 rc=0"
	sq_saw up.socks.squid_by_name " CONNECT hidden\.up\.test:443 "
	a_jlog up.socks.logged "$W/$t.jlog" source=socks5 decision=allow host=hidden.up.test
}

test_transparent() {
	local t=up_transparent
	have_egr || return 0
	sq_mark
	web_mark
	script "$t" <<'EOF'
cu tls https://web.up.test/tls
cu plain http://web.up.test/plain
cu nodns https://hidden.up.test/nodns
EOF
	uprun "$t" --upstream-proxy "$UP" --no-proxy-env --allow web.up.test \
		--allow hidden.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.transparent.tls "$t" tls "code=200 connect=000 rc=0"
	a_cu up.transparent.plain "$t" plain "code=200 connect=000 rc=0"
	# what the network's resolver does not know, a client that resolves
	# names itself cannot reach (docs/operations.md says so: no answer is
	# made up); through the proxy variables it can (test_connect)
	a_cu up.transparent.no_resolver_no_name "$t" nodns "code=000 connect=000 rc=6"
	sq_saw up.transparent.tls_by_name " CONNECT web\.up\.test:443 "
	sq_saw up.transparent.plain_absolute " GET http://web\.up\.test/plain "
	a_jlog up.transparent.logged "$W/$t.jlog" source=transparent decision=allow host=web.up.test port=443
	# the kernel-verified path is off: there is no direct route
	a_jlog_none up.transparent.not_kernel "$W/$t.jlog" source=kernel
}

test_tcp() {
	local t=up_tcp
	have_egr || return 0
	sq_mark
	script "$t" <<'EOF'
pc t1 tcp web.up.test 7022 --until SSH-2.0-egr-7022
pc t2 socks socks web.up.test 7022 --until SSH-2.0-egr-7022
EOF
	uprun "$t" --upstream-proxy "$UP" --allow tcp://web.up.test:7022 -- /bin/sh "$W/$t.sh"
	pj "$t" t1
	a_pj up.tcp.transparent_banner "data" "$P_data" "SSH-2\.0-egr-7022.*"
	pj "$t" t2
	a_pj up.tcp.socks_reply "code" "$P_code" "0"
	a_pj up.tcp.socks_banner "data" "$P_data" "SSH-2\.0-egr-7022.*"
	sq_saw up.tcp.squid_by_name " CONNECT web\.up\.test:7022 "
	# not the kernel fast path: the proxy's lines, no direct allow
	a_jlog up.tcp.logged "$W/$t.jlog" source=transparent decision=allow host=web.up.test port=7022
	a_jlog_none up.tcp.not_direct "$W/$t.jlog" source=kernel

	# a proxy that sends the server's first bytes with its reply: they
	# are the client's, not part of the reply
	t=up_tcp_eager
	script "$t" <<'EOF'
pc t3 tcp web.up.test 7022 --send ping --until ping
EOF
	uprun "$t" --upstream-proxy "http://$SQ:3133" --allow tcp://web.up.test:7022 \
		-- /bin/sh "$W/$t.sh"
	pj "$t" t3
	a_pj up.tcp.eager_banner_kept "data" "$P_data" "SSH-2\.0-eager.*ping"
}

test_denied() {
	local t=up_denied base_sq base_web
	have_egr || return 0
	sq_mark
	base_sq=$(sensor_now "$PKT_SQ")
	base_web=$(sensor_count "$PKT_WEB")
	script "$t" <<EOF
cu d1 https://deny.up.test/
cu d2 http://deny.up.test/
pc d3 socks socks deny.up.test 443
pc d4 tcp $A_DENY 443 --send hello
EOF
	uprun "$t" --upstream-proxy "$UP" --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.denied.connect_403 "$t" d1 "code=000 connect=403 rc=56"
	a_cu up.denied.http_403 "$t" d2 "code=403 connect=000 rc=0"
	a_grep up.denied.http_words "$RW/d2.body" "blocked deny\.up\.test:80"
	pj "$t" d3
	a_pj up.denied.socks_0x02 "code" "$P_code" "2"
	pj "$t" d4
	a_pj up.denied.transparent_reset "closed/nbytes" "$P_closed/$P_nbytes/$P_errno" "true/0/|false/0/ECONNRESET"
	sensor_none_since up.denied.nothing_to_squid "$base_sq" "$PKT_SQ"
	sensor_none_since up.denied.nothing_out "$base_web" "$PKT_WEB"
	sq_none up.denied.squid_never_asked "deny\.up\.test|$(re "$A_DENY")"
	a_jlog up.denied.logged "$W/$t.jlog" decision=deny host=deny.up.test
}

# a_secret_none NAME FILE...: the password, and the token made of it, are
# in none of FILE
a_secret_none() {
	local name=$1 f hit=
	shift
	for f in "$@"; do
		grep -aqF -e "$CRED_PW" -e "$CRED_B64" "$f" 2>/dev/null && hit="$hit $(basename "$f")"
	done
	if [ -z "$hit" ]; then ok "$name"; else fail "$name" "the credentials are in:$hit"; fi
}

test_auth() {
	local t=up_auth_file
	have_egr || return 0
	printf '%s:%s\n' "$CRED_USER" "$CRED_PW" >"$W/cred"
	chmod 0600 "$W/cred"
	sq_mark
	script "$t" <<'EOF'
cu a1 https://hidden.up.test/auth-connect
cu a2 http://hidden.up.test/auth-plain
tr '\0' '\n' </proc/self/environ >"$RW/up_auth_file.env"
EOF
	uprun "$t" --upstream-proxy "$UP_AUTH" --upstream-proxy-auth "$W/cred" \
		--summary "$W/$t.sum" --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.auth.file.connect "$t" a1 "code=200 connect=200 rc=0"
	a_cu up.auth.file.plain "$t" a2 "code=200 connect=000 rc=0"
	sq_saw up.auth.file.squid_user_connect " CONNECT hidden\.up\.test:443 $CRED_USER "
	sq_saw up.auth.file.squid_user_plain " GET http://hidden\.up\.test/auth-plain $CRED_USER "
	a_secret_none up.auth.file.nowhere "$W/$t.out" "$W/$t.err" "$W/$t.jlog" "$W/$t.sum" \
		"$RW/$t.env"
	a_grep up.auth.file.cmd_env_read "$RW/$t.env" "^HTTPS_PROXY="

	# from the variable: egressctl takes it out of its environment at once
	t=up_auth_env
	sq_mark
	script "$t" <<'EOF'
cu e1 https://hidden.up.test/auth-env
tr '\0' '\n' </proc/self/environ >"$RW/up_auth_env.env"
i=0; while [ ! -e "$RW/up_auth_env.go" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
EOF
	EGRESSCTL_UPSTREAM_PROXY_CREDENTIALS="$CRED_USER:$CRED_PW" \
		egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$CORP_DNS" \
		--log "$W/$t.jlog" --upstream-proxy "$UP_AUTH" --allow hidden.up.test \
		-- /bin/sh "$W/$t.sh"
	wait_for 10 test -s "$RW/$t.env"
	tr '\0' '\n' <"/proc/$EGR_PID/cmdline" >"$W/$t.argv" 2>/dev/null
	tr '\0' '\n' <"/proc/$EGR_PID/environ" >"$W/$t.environ" 2>/dev/null
	touch "$RW/$t.go"
	egr_join 20
	a_cu up.auth.env.connect "$t" e1 "code=200 connect=200 rc=0"
	sq_saw up.auth.env.squid_user " CONNECT hidden\.up\.test:443 $CRED_USER "
	a_grep up.auth.env.read_egressctl "$W/$t.argv" "^--upstream-proxy$"
	a_secret_none up.auth.env.nowhere "$W/$t.out" "$W/$t.err" "$W/$t.jlog" "$W/$t.argv" \
		"$W/$t.environ" "$RW/$t.env"
	a_nogrep up.auth.env.not_in_cmd_env "$RW/$t.env" "^EGRESSCTL_UPSTREAM_PROXY_CREDENTIALS"

	# without credentials: squid's 407, as a 502 naming the upstream
	t=up_auth_none
	sq_mark
	script "$t" <<'EOF'
pc n1 http http connect hidden.up.test:443
pc n2 http http req GET http://hidden.up.test/no-auth
EOF
	uprun "$t" --upstream-proxy "$UP_AUTH" --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	pj "$t" n1
	a_pj up.auth.none.connect_502 "status/x-proxy-error" "$P_status/$P_xpe" "502/upstream-proxy-refused"
	a_pj up.auth.none.connect_says_407 "body" "$P_body" ".*$(re "$UP_AUTH") refused hidden\.up\.test:443: 407 .*--upstream-proxy-auth.*"
	pj "$t" n2
	a_pj up.auth.none.plain_502 "status/x-proxy-error" "$P_status/$P_xpe" "502/upstream-proxy-refused"
	a_pj up.auth.none.plain_says_407 "body" "$P_body" ".*refused hidden\.up\.test:80: 407.*"
	sq_saw up.auth.none.squid_denied " TCP_DENIED/407 "
}

test_failures() {
	local t=up_fail_refused
	have_egr || return 0
	# nothing listens: the connection refused
	script "$t" <<'EOF'
pc r1 http http connect hidden.up.test:443
pc r2 socks socks hidden.up.test 7022
pc r3 tcp web.up.test 7022 --until SSH
EOF
	uprun "$t" --upstream-proxy "http://$SQ:3131" --allow hidden.up.test \
		--allow tcp://hidden.up.test:7022 --allow tcp://web.up.test:7022 -- /bin/sh "$W/$t.sh"
	pj "$t" r1
	a_pj up.fail.refused.502 "status/x-proxy-error" "$P_status/$P_xpe" "502/upstream-proxy-unreachable"
	a_pj up.fail.refused.words "body" "$P_body" ".*cannot reach the upstream proxy http://$(re "$SQ"):3131 .*Connection refused.*"
	pj "$t" r2
	a_pj up.fail.refused.socks_0x01 "code" "$P_code" "1"
	pj "$t" r3
	a_pj up.fail.refused.transparent_reset "closed/errno/nbytes" "$P_closed/$P_errno/$P_nbytes" "true//0|false/ECONNRESET/0"

	# it accepts and never answers: 504 once the connect timeout is over
	t=up_fail_silent
	script "$t" <<'EOF'
pc s1 http http connect hidden.up.test:443
pc s2 http http req GET http://hidden.up.test/silent
pc s3 socks socks hidden.up.test 7022
EOF
	uprun "$t" --upstream-proxy "http://$SQ:3130" --connect-timeout 1s --response-timeout 1s \
		--allow hidden.up.test \
		--allow tcp://hidden.up.test:7022 -- /bin/sh "$W/$t.sh"
	pj "$t" s1
	a_pj up.fail.silent.504 "status/x-proxy-error" "$P_status/$P_xpe" "504/upstream-proxy-timeout"
	a_pj up.fail.silent.words "body" "$P_body" ".*the upstream proxy http://$(re "$SQ"):3130 did not answer in time.*"
	a_grep up.fail.silent.asked_connect "$W/stub.log" "^READ silent CONNECT hidden\.up\.test:443 HTTP/1\.1$"
	pj "$t" s2
	a_pj up.fail.silent.plain "status/x-proxy-error" "$P_status/$P_xpe" "504/upstream-proxy-(timeout|response-timeout)|504/upstream-response-timeout"
	pj "$t" s3
	a_pj up.fail.silent.socks_0x01 "code" "$P_code" "1"

	# it answers bytes that are no HTTP
	t=up_fail_garbage
	script "$t" <<'EOF'
pc g1 http http connect hidden.up.test:443
EOF
	uprun "$t" --upstream-proxy "http://$SQ:3132" --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	pj "$t" g1
	a_pj up.fail.garbage.502 "status/x-proxy-error" "$P_status/$P_xpe" "502/upstream-proxy-refused"
	a_pj up.fail.garbage.words "body" "$P_body" ".*sent a reply that is not HTTP.*"

	# squid refuses CONNECT to 8443, and cannot resolve nosuch.up.test
	t=up_fail_squid
	sq_mark
	script "$t" <<'EOF'
pc q1 http http connect hidden.up.test:8443
pc q2 socks socks hidden.up.test 8443
pc q3 http http connect nosuch.up.test:443
pc q4 socks socks nosuch.up.test 7022
EOF
	uprun "$t" --upstream-proxy "$UP" --allow hidden.up.test:8443 --allow nosuch.up.test \
		--allow tcp://hidden.up.test:8443 --allow tcp://nosuch.up.test:7022 -- /bin/sh "$W/$t.sh"
	pj "$t" q1
	a_pj up.fail.squid403.502 "status/x-proxy-error" "$P_status/$P_xpe" "502/upstream-proxy-refused"
	a_pj up.fail.squid403.status "body" "$P_body" ".*refused hidden\.up\.test:8443: 403.*"
	pj "$t" q2
	a_pj up.fail.squid403.socks_0x02 "code" "$P_code" "2"
	pj "$t" q3
	a_pj up.fail.squid503.502 "status/x-proxy-error" "$P_status/$P_xpe" "502/upstream-proxy-refused"
	a_pj up.fail.squid503.status "body" "$P_body" ".*refused nosuch\.up\.test:443: 50[03].*"
	pj "$t" q4
	a_pj up.fail.squid503.socks_0x04 "code" "$P_code" "4"
	sq_saw up.fail.squid_logged " TCP_DENIED/403 [0-9]+ CONNECT hidden\.up\.test:8443 "
}

test_noproxy() {
	local t=up_noproxy
	have_egr || return 0
	sq_mark
	web_mark
	script "$t" <<'EOF'
echo "noproxy=$NO_PROXY"
cu k1 --noproxy '*' https://direct.up.test/kernel
cu k2 https://direct.up.test/by-no-proxy
cu k3 --noproxy '' https://direct.up.test/via-egressctl
cu k4 https://hidden.up.test/still-squid
EOF
	uprun "$t" --upstream-proxy "$UP" --upstream-no-proxy direct.up.test \
		--allow direct.up.test --allow hidden.up.test -- /bin/sh "$W/$t.sh"
	a_grep up.noproxy.env_lists_exception "$W/$t.out" "^noproxy=.*(^|[=,])direct\.up\.test(,|$)"
	a_nogrep up.noproxy.env_not_others "$W/$t.out" "^noproxy=.*hidden\.up\.test"
	a_cu up.noproxy.kernel_ok "$t" k1 "code=200 connect=000 rc=0"
	a_cu up.noproxy.client_no_proxy_ok "$t" k2 "code=200 connect=000 rc=0"
	a_cu up.noproxy.egressctl_direct_ok "$t" k3 "code=200 connect=200 rc=0"
	a_cu up.noproxy.other_via_squid "$t" k4 "code=200 connect=200 rc=0"
	a_jlog up.noproxy.kernel_verified "$W/$t.jlog" source=kernel decision=allow host=direct.up.test
	a_jlog up.noproxy.proxy_direct "$W/$t.jlog" source=connect decision=allow host=direct.up.test
	web_saw up.noproxy.server_saw_sandbox "^TLS local=$(re "$A_DIRECT"):443 peer=198\.18\.0\.2:"
	sq_saw up.noproxy.other_at_squid " CONNECT hidden\.up\.test:443 "
	sq_none up.noproxy.squid_never_saw_exception "direct\.up\.test"

	# the control: without the exception, it goes through squid
	t=up_noproxy_control
	sq_mark
	script "$t" <<'EOF'
cu c1 --noproxy '*' https://direct.up.test/no-exception
EOF
	uprun "$t" --upstream-proxy "$UP" --allow direct.up.test -- /bin/sh "$W/$t.sh"
	a_cu up.noproxy.control_ok "$t" c1 "code=200 connect=000 rc=0"
	sq_saw up.noproxy.control_via_squid " CONNECT direct\.up\.test:443 "
}

test_check() {
	local out
	have_egr || return 0
	out=$("$EGRESSCTL" check --allow web.up.test --upstream-proxy "$UP" web.up.test 2>&1)
	a_eq up.check.upstream path "$(sed -n 's/^  path: \(upstream proxy\).*/\1/p' <<<"$out")" "upstream proxy"
	out=$("$EGRESSCTL" check -j --allow web.up.test --upstream-proxy "$UP" \
		--upstream-no-proxy .up.test web.up.test 2>&1)
	a_eq up.check.exception_json path "$(jv "$out"; echo "$P_path")" kernel-verified
	out=$("$EGRESSCTL" check -j --allow tcp://web.up.test:7022 --upstream-proxy "$UP" \
		tcp://web.up.test:7022 2>&1)
	a_eq up.check.tcp_json path "$(jv "$out"; echo "$P_path")" upstream-proxy
	out=$("$EGRESSCTL" check -j --allow 127.0.0.1:5432 --upstream-proxy "$UP" 127.0.0.1:5432 2>&1)
	a_eq up.check.loopback_direct path "$(jv "$out"; echo "$P_path")" fast-path
	"$EGRESSCTL" check --allow x.test --upstream-no-proxy x.test x.test >"$W/chk1.out" 2>&1
	a_eq up.check.noproxy_alone rc "$?" 2
	a_grep up.check.noproxy_alone_words "$W/chk1.out" "needs --upstream-proxy"
	"$EGRESSCTL" check --allow x.test --upstream-proxy https://p.test:3128 x.test >"$W/chk2.out" 2>&1
	a_eq up.check.https rc "$?" 2
	a_grep up.check.https_words "$W/chk2.out" "https:// to the upstream proxy is not supported"
	"$EGRESSCTL" run --upstream-proxy "http://$CRED_USER:$CRED_PW@p.test:3128" -- true \
		>"$W/chk3.out" 2>&1
	a_eq up.check.userinfo rc "$?" 2
	a_grep up.check.userinfo_words "$W/chk3.out" "credentials do not go in the URL"
	a_secret_none up.check.userinfo_not_echoed "$W/chk3.out"
}

ALL_TESTS="control connect http socks transparent tcp denied auth failures noproxy check"

suite_main upstream.sh up_setup "ip nsenter setpriv unshare mount tcpdump ss curl dig dnsmasq openssl squid timeout" "$@"
