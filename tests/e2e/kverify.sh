#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of the kernel-verified path (docs/design.md):
# a connection to an address egressctl's DNS responder answered for an
# allowed name goes direct, and the kernel checks its first bytes.
#
#   verified    curl, openssl s_client, python3 ssl, node (if present), Go
#               and Java (their own TLS stacks: clients/kvget.go,
#               clients/KvGet.java), a
#               hand-built 1.8 KB ClientHello and plain HTTP to the allowed
#               name go direct: the server sees the client's own port, the
#               decision log says source "kernel", nothing passed the proxy
#   fronting    the allowed address with a denied SNI (both names share it)
#   nosni       a ClientHello without SNI
#   split       a ClientHello written in two pieces
#   sendfile    a ClientHello sent with sendfile(2): the kernel would check
#               pages the sender can still write to before the server reads
#   host        plain HTTP on port 443 whose Host is the denied name
#   plain       plain HTTP on port 443 for the allowed name (the kernel
#               path is TLS only: the proxy judges plain HTTP per request)
#   h2c         HTTP/2 prior knowledge
#   other       bytes that are neither TLS nor HTTP
#   tfo         a ClientHello in the SYN (TCP Fast Open): allowed SNI passes,
#               a denied one leaves nothing
#   wrongaddr   an allowed name's SNI to an address it was not answered with
#   proxyenv    --no-kernel-verify: NO_PROXY at loopback, curl takes CONNECT
#   clients     curl, git, python urllib, pip, node, npm as they come: the
#               allowed name direct (NO_PROXY), the denied one a 403
#   denyrule    a deny rule under an allowed wildcard keeps it off NO_PROXY:
#               the denied name's 403 (blocked-by-denylist)
#   v6          --ipv6: the same over IPv6 (AAAA answers): python and curl
#               verified direct, a fronting SNI refused; a routing header
#               (IPV6_RTHDR) on the socket refused at its connect (every
#               other way to re-point a direct socket: direct.sh)
#   backstop    without egr_kv_kill (the test build): sockops' timeout ends
#               a refused connection, ETIMEDOUT within about 200 ms
#   summary     the exit summary's counts
# Each escape is shown to reach the server without egressctl first; under
# egressctl: a client error within about a second, zero payload packets at
# the leak sensor, nothing at the server, one kernel decision line.
#
# The test network: lib.sh's (sbx and inet network namespaces, drawn in
# docs/testing.md; the sensor on the inet side). dnsmasq on 198.18.0.1:53 answers ok.kv.test and evil.kv.test with
# 203.0.113.10, far.kv.test with 203.0.113.12, plain.kv.test and
# evilplain.kv.test with 203.0.113.11, ok6.kv.test and evil6.kv.test with
# the AAAA 2001:db8:2::10; webservers.py serves HTTP on :80 and TLS on :443
# (a certificate for *.kv.test made here) at .10, .12 and 2001:db8:2::10,
# and plain HTTP on :443 at .11. The confined commands resolve through /etc/resolv.conf,
# bind-mounted (private mount namespace) to name 198.51.100.53, which
# egressctl redirects to its responder.
#
# Output: "ok NAME" / "FAIL NAME: reason"; last line "N passed, M failed".
# Exit 1 if any failed, 77 if not root or no cgroup2.

set -u
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"

INET_DNS=198.18.0.1
RESOLV_NS=198.51.100.53
A_KV=203.0.113.10 # ok.kv.test and evil.kv.test
A_PLAIN=203.0.113.11 # plain.kv.test and evilplain.kv.test: plain HTTP on :443
A6_KV=2001:db8:2::10 # ok6.kv.test and evil6.kv.test (AAAA only)
# IPv6: a TCP segment to A6_KV that carries payload (no extension header);
# any packet to it with a routing header (next header 43)
PAYLOAD6="ip6 and dst host $A6_KV and ip6[6] = 6 and (ip6[4:2] - ((ip6[52] & 0xf0) >> 2)) > 0"
RTHDR6="ip6 and dst host $A6_KV and ip6[6] = 43"
WEBLOG=$W/web.log
# a TCP segment to A_KV or A_PLAIN that carries payload
PAYLOAD="tcp and (dst host $A_KV or dst host $A_PLAIN) and (ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2)) > 0"

kv_setup() {
	local i n
	e2e_base_setup || return 1
	cp "$E2E_SRC/clients/kvclient.py" "$C/" && chmod 0755 "$C/kvclient.py" || return 1
	printf 'nameserver %s\noptions timeout:2 attempts:1\n' "$RESOLV_NS" >"$W/resolv.conf"
	chmod 0644 "$W/resolv.conf"
	if ! e2e_private_mntns; then
		echo "not in a private mount namespace: resolv.conf left alone"
		return 1
	fi
	mount --bind "$W/resolv.conf" /etc/resolv.conf || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$W/tls.key" -out "$W/tls.crt" -subj /CN=ok.kv.test \
		-addext "subjectAltName=DNS:*.kv.test" >"$W/openssl.out" 2>&1 || return 1
	chmod 0644 "$W/tls.crt"
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dns-inet.pid" \
		--no-resolv --no-hosts --no-poll --bind-interfaces --listen-address="$INET_DNS" --port=53 \
		--local=/test/ --no-negcache --cache-size=0 \
		--host-record=ok.kv.test,$A_KV --host-record=evil.kv.test,$A_KV \
		--host-record=far.kv.test,203.0.113.12 --host-record=ctl.test,203.0.113.99 \
		--host-record=plain.kv.test,$A_PLAIN --host-record=evilplain.kv.test,$A_PLAIN \
		--host-record=ok6.kv.test,$A6_KV --host-record=evil6.kv.test,$A6_KV \
		>"$W/dns-inet.out" 2>&1 &
	PIDS+=($!)
	# A6_KV on the inet side; segment routing headers taken there (test_v6)
	ip -n "$INET" addr add "$A6_KV/128" dev lo nodad || return 1
	nsenter --net="$NS_INET" sysctl -qw net.ipv6.conf.all.seg6_enabled=1 \
		net.ipv6.conf.$INET_IF.seg6_enabled=1 || return 1
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$WEBLOG" --bind "$A_KV,203.0.113.12,$A6_KV" \
		--http 80 --tls 443 --cert "$W/tls.crt" --key "$W/tls.key" \
		>"$W/web.ready" 2>"$W/web.err" &
	PIDS+=($!)
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$WEBLOG" --bind "$A_PLAIN" \
		--http 443 >"$W/web2.ready" 2>"$W/web2.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/web.ready" 2>/dev/null && grep -q READY "$W/web2.ready" 2>/dev/null && break
		sleep 0.05
	done
	grep -q READY "$W/web.ready" || { echo "webservers failed: $(cat "$W/web.err")"; return 1; }
	grep -q READY "$W/web2.ready" || { echo "webservers failed: $(cat "$W/web2.err")"; return 1; }
	sensor_start || return 1
	for i in $(seq 40); do
		n=$(in_sbx dig +short +time=1 +tries=1 @"$INET_DNS" ctl.test A 2>/dev/null)
		[ "$n" = 203.0.113.99 ] && break
		sleep 0.1
	done
	[ "$n" = 203.0.113.99 ] || { echo "dnsmasq: ctl.test gave '$n'"; return 1; }
}

# kv TAG CMD...: egressctl run (no proxy variables) allowing ok.kv.test and plain.kv.test,
# confined as nobody, decision log in $W/TAG.jlog
kv() {
	local tag=$1
	shift
	egr "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" \
		--no-proxy-env --log "$W/$tag.jlog" --allow ok.kv.test --allow plain.kv.test -- "$@"
}

# kvc ARGS: kvclient.py in the sbx netns, outside egressctl (the control)
kvc() { timeout -k 1 20 nsenter --net="$NS_SBX" "$PY" "$C/kvclient.py" "$@" | grep '^{' | tail -1; }

# web_saw NAME ERE / web_none NAME ERE: the server's log since the test began
web_mark() { WEBN=$(wc -l <"$WEBLOG"); }
web_new() { tail -n +"$((WEBN + 1))" "$WEBLOG"; }
web_saw() {
	if web_new | grep -aqE "$2"; then ok "$1"; else fail "$1" "server never logged /$2/: $(web_new | tail -3 | tr -d "\0" | tr "\n" "|")"; fi
}
web_none() {
	if web_new | grep -aqE "$2"; then fail "$1" "LEAK: the server logged /$2/: $(web_new | grep -aE "$2" | tr -d "\0" | head -2 | tr '\n' '|')"; else ok "$1"; fi
}

# quick NAME MS: the client's error came within MS milliseconds
quick() {
	if [ -n "$P_ms" ] && [ "$P_ms" -le "$2" ]; then ok "$1"; else fail "$1" "took ${P_ms:-?} ms (want <= $2): $P_json"; fi
}

# ---------------------------------------------------------------- tests

test_verified() {
	local t=kv_ok base
	web_mark
	base=$(sensor_now "$PAYLOAD")
	kv "$t" "$PY" "$C/kvclient.py" tls ok.kv.test --sni ok.kv.test
	egr_json "$t"
	a_ok kv.python.verified
	web_saw kv.python.server_saw_sni "^TLS local=$(re "$A_KV"):443 peer=198\.18\.0\.2:$P_lport sni=ok\.kv\.test"
	a_jlog kv.python.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test port=443
	a_jlog_none kv.python.no_proxy_line "$W/$t.jlog" source='transparent|connect|http|socks5'
	sensor_saw kv.python.payload_left "$PAYLOAD"

	t=kv_curl
	web_mark
	kv "$t" curl -sS --max-time 5 --cacert "$W/tls.crt" -o /dev/null \
		-w '{"ok": true, "code": "%{http_code}", "lport": "%{local_port}"}\n' https://ok.kv.test/
	egr_json "$t"
	a_eq kv.curl.code code "$P_code" 200
	web_saw kv.curl.direct "^TLS local=$(re "$A_KV"):443 peer=198\.18\.0\.2:$P_lport sni=ok\.kv\.test"
	a_jlog kv.curl.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test
	a_jlog_none kv.curl.no_proxy_line "$W/$t.jlog" source='transparent|connect|http'

	t=kv_openssl
	web_mark
	kv "$t" sh -c "echo Q | openssl s_client -connect ok.kv.test:443 -servername ok.kv.test \
		-CAfile $W/tls.crt -verify_return_error -quiet >/dev/null 2>&1; echo '{\"rc\": '\$?'}'"
	egr_json "$t"
	web_saw kv.openssl.server_saw "^TLS local=$(re "$A_KV"):443 .*sni=ok\.kv\.test"
	a_jlog kv.openssl.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test

	if command -v node >/dev/null; then
		t=kv_node
		web_mark
		kv "$t" env NODE_EXTRA_CA_CERTS="$W/tls.crt" node -e '
require("https").get("https://ok.kv.test/", (r) => { r.resume();
  r.on("end", () => console.log(JSON.stringify({ok: true, code: String(r.statusCode)}))); })
  .on("error", (e) => console.log(JSON.stringify({ok: false, errno: e.code})));'
		egr_json "$t"
		a_eq kv.node.code code "$P_code" 200
		a_jlog kv.node.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test
	else
		note "node not installed: its client skipped"
	fi

	# Go's and Java's own ClientHellos (their extension orders), built
	# here, outside the sandbox (tools/install-deps.sh installs both)
	if command -v go >/dev/null; then
		t=kv_go
		web_mark
		if GOCACHE="$W/gocache" HOME="$W" GOPATH="$W/gopath" GO111MODULE=off \
			go build -o "$C/kvget" "$E2E_SRC/clients/kvget.go" >"$W/go-build.out" 2>&1; then
			kv "$t" "$C/kvget" https://ok.kv.test/ "$W/tls.crt"
			egr_json "$t"
			a_eq kv.go.code code "$P_code" 200
			web_saw kv.go.server_saw "^TLS local=$(re "$A_KV"):443 peer=198\.18\.0\.2:[0-9]+ sni=ok\.kv\.test"
			a_jlog kv.go.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test
			a_jlog_none kv.go.no_proxy_line "$W/$t.jlog" source='transparent|connect|http'
		else
			fail kv.go.build "$(tail -3 "$W/go-build.out" | tr '\n' '|')"
		fi
	else
		fail kv.go.present "go is not installed (tools/install-deps.sh installs golang-go)"
	fi
	if command -v javac >/dev/null; then
		t=kv_java
		web_mark
		if javac -d "$C" "$E2E_SRC/clients/KvGet.java" >"$W/javac.out" 2>&1; then
			chmod 0644 "$C/KvGet.class"
			kv "$t" java -XX:-UsePerfData -cp "$C" KvGet https://ok.kv.test/ "$W/tls.crt"
			egr_json "$t"
			a_eq kv.java.code code "$P_code" 200
			web_saw kv.java.server_saw "^TLS local=$(re "$A_KV"):443 peer=198\.18\.0\.2:[0-9]+ sni=ok\.kv\.test"
			a_jlog kv.java.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test
			a_jlog_none kv.java.no_proxy_line "$W/$t.jlog" source='transparent|connect|http'
		else
			fail kv.java.build "$(tail -3 "$W/javac.out" | tr '\n' '|')"
		fi
	else
		fail kv.java.present "javac is not installed (tools/install-deps.sh installs default-jdk-headless)"
	fi

	t=kv_big
	web_mark
	kv "$t" "$PY" "$C/kvclient.py" big ok.kv.test --sni ok.kv.test
	egr_json "$t"
	a_eq kv.big.size hello_len "$P_hello_len" 1800
	a_jlog kv.big.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test
	web_saw kv.big.server_got_it "local=$(re "$A_KV"):443 peer=198\.18\.0\.2:$P_lport"

	# plain HTTP (port 80) keeps the proxy: judged request by request
	t=kv_http
	web_mark
	kv "$t" curl -sS --max-time 5 -o /dev/null \
		-w '{"ok": true, "code": "%{http_code}", "lport": "%{local_port}"}\n' http://ok.kv.test/
	egr_json "$t"
	a_eq kv.http.code code "$P_code" 200
	web_saw kv.http.server_saw "^HTTP local=$(re "$A_KV"):80 .*host=ok\.kv\.test"
	web_none kv.http.not_direct "^HTTP local=$(re "$A_KV"):80 peer=198\.18\.0\.2:$P_lport "
	a_jlog kv.http.transparent_line "$W/$t.jlog" source=transparent decision=allow host=ok.kv.test port=80
	a_jlog_none kv.http.no_kernel_line "$W/$t.jlog" source=kernel
}

# refused NAME REASON-ERE KVCLIENT-ARGS: the control reaches the server
# (SERVER-ERE), the confined one fails fast, leaks nothing, logs one line
refused() {
	local name=$1 why=$2 seen=$3 base t=kv_$1
	shift 3
	web_mark
	jv "$(kvc "$@" --addr "$(case $2 in plain.*) echo "$A_PLAIN" ;; *) echo "$A_KV" ;; esac)")"
	a_ok "kv.$name.control_reaches_server"
	web_saw "kv.$name.control_server_saw" "$seen"
	sleep 0.2
	web_mark
	base=$(sensor_now "$PAYLOAD")
	kv "$t" "$PY" "$C/kvclient.py" "$@"
	egr_json "$t"
	a_denied "kv.$name.client_error"
	quick "kv.$name.prompt" 1500
	sensor_none_since "kv.$name.no_payload_left" "$base" "$PAYLOAD"
	# (the handshake may reach it: a connection reset before any byte)
	web_none "kv.$name.server_saw_nothing" "^(TLS|HTTPS?) .*peer=198\.18\.0\.2:$P_lport "
	a_jlog_n "kv.$name.one_kernel_line" "$W/$t.jlog" 1 source=kernel decision=deny \
		reason="kernel-verified: $why"
}

test_fronting() {
	refused fronting 'a name not answered.*' '^TLS .*sni=evil\.kv\.test' \
		tls ok.kv.test --sni evil.kv.test
}
test_nosni() { refused nosni 'no SNI or Host.*' '^TLS(ERR)? .*sni=-' tls ok.kv.test --no-sni; }
test_split() {
	refused split 'the ClientHello .*not whole.*' '^TLS .*sni=ok\.kv\.test' \
		tls ok.kv.test --sni ok.kv.test --split 40
}
test_sendfile() {
	refused sendfile 'the first bytes are in pages.*' '^TLS .*sni=ok\.kv\.test' \
		tls ok.kv.test --sni ok.kv.test --sendfile
}
test_host() {
	refused host 'a name not answered.*' '^HTTP .*host=evilplain\.kv\.test' \
		http plain.kv.test --host evilplain.kv.test
}
test_plain() {
	refused plain 'plain HTTP on port 443.*' '^HTTP .*host=plain\.kv\.test' \
		http plain.kv.test --host plain.kv.test
}
test_h2c() { refused h2c 'HTTP/2 prior knowledge.*' '^HTTP .*method=PRI target=\*' h2c plain.kv.test; }
test_other() { refused other 'neither a TLS.*' '^HTTP .*target=not ' raw plain.kv.test; }

# TCP Fast Open: the ClientHello in the SYN itself (TCP_FASTOPEN_NO_COOKIE,
# which any process may set). The control shows the payload riding in the
# SYN; confined, a 600-byte hello with the allowed SNI passes in it, one
# with a denied SNI leaves nothing, the SYN included, and an 1800-byte one
# (more than a SYN holds, the rest after the handshake) is refused as not
# whole in its first segment.
test_tfo() {
	local t=kv_tfo base syn="$PAYLOAD and tcp[tcpflags] & tcp-syn != 0"
	base=$(sensor_now "$syn")
	jv "$(kvc big ok.kv.test --sni evil.kv.test --size 600 --tfo --addr "$A_KV")"
	a_ok kv.tfo.control_answered
	sensor_sync
	if [ "$(sensor_count "$syn")" -gt "$base" ]; then ok kv.tfo.control_data_in_syn; else
		fail kv.tfo.control_data_in_syn "the control's SYN carried no payload: TFO not in use"
	fi

	kv "$t" "$PY" "$C/kvclient.py" big ok.kv.test --sni ok.kv.test --size 600 --tfo
	egr_json "$t"
	a_eq kv.tfo.allowed_size hello_len "$P_hello_len" 600
	a_ok kv.tfo.allowed_answered
	a_jlog kv.tfo.allowed_kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test

	t=kv_tfo_deny
	web_mark
	base=$(sensor_now "$PAYLOAD")
	kv "$t" "$PY" "$C/kvclient.py" big ok.kv.test --sni evil.kv.test --size 600 --tfo
	egr_json "$t"
	a_denied kv.tfo.denied_client_error
	quick kv.tfo.denied_prompt 1500
	sensor_none_since kv.tfo.denied_no_payload_left "$base" "$PAYLOAD"
	web_none kv.tfo.denied_server_saw_nothing "^(TLS|HTTPS?) .*peer=198\.18\.0\.2:$P_lport "
	a_jlog_n kv.tfo.denied_one_kernel_line "$W/$t.jlog" 1 source=kernel decision=deny \
		reason="kernel-verified: a name not answered.*"

	t=kv_tfo_big
	base=$(sensor_now "$PAYLOAD")
	kv "$t" "$PY" "$C/kvclient.py" big ok.kv.test --sni ok.kv.test --tfo
	egr_json "$t"
	a_denied kv.tfo.big_client_error
	sensor_none_since kv.tfo.big_no_payload_left "$base" "$PAYLOAD"
	a_jlog_n kv.tfo.big_one_kernel_line "$W/$t.jlog" 1 source=kernel decision=deny \
		reason="kernel-verified: the ClientHello .*not whole.*"
}

# A name answered with another address (far.kv.test) is not a name of A_KV:
# an allowed name's SNI to an address it was never answered with is refused.
test_wrongaddr() {
	local t=kv_wrongaddr base
	base=$(sensor_now "$PAYLOAD")
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" \
		--no-proxy-env --log "$W/$t.jlog" --allow ok.kv.test --allow far.kv.test -- \
		"$PY" "$C/kvclient.py" tls ok.kv.test --sni far.kv.test
	egr_json "$t"
	a_denied kv.wrongaddr.client_error
	sensor_none_since kv.wrongaddr.no_payload_left "$base" "$PAYLOAD"
	a_jlog kv.wrongaddr.kernel_line "$W/$t.jlog" source=kernel decision=deny host=far.kv.test
}

# With --no-kernel-verify NO_PROXY lists loopback only: curl takes the
# proxy (CONNECT) for the allowed name, and no kernel line is written.
test_proxyenv() {
	local t=kv_proxyenv
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" --no-kernel-verify \
		--log "$W/$t.jlog" --allow ok.kv.test -- sh -c 'printf "{\"np\": \"%s\"}\n" "$NO_PROXY"
		curl -sS --max-time 5 --cacert "$1" -o /dev/null -w "{\"ok\": true, \"code\": \"%{http_code}\"}\n" \
			https://ok.kv.test/' sh "$W/tls.crt"
	egr_json "$t" 1
	a_eq kv.proxyenv.no_proxy np "$P_np" "localhost,127.0.0.1,::1"
	egr_json "$t" 2
	a_eq kv.proxyenv.code code "$P_code" 200
	a_jlog kv.proxyenv.connect_line "$W/$t.jlog" source=connect decision=allow host=ok.kv.test
	a_jlog_none kv.proxyenv.no_kernel_line "$W/$t.jlog" source=kernel
}

# The clients a CI job runs, as they come (the proxy variables set, the
# default): each reaches the allowed name direct, checked by the kernel
# (NO_PROXY lists it), and asks the proxy for the denied one, which answers
# 403; node's https ignores the variables, so its denied name fails to
# resolve. What the README says of the default.
test_clients() {
	local c t n=0 ca=$W/tls.crt
	mkdir -p "$W/home" && chown nobody "$W/home" && cp "$E2E_SRC/clients/kvtools.sh" "$C/" || return
	for c in curl git python pip node npm; do
		case $c in
		pip) /usr/bin/python3 -m pip --version >/dev/null 2>&1 || { note "no pip: skipped"; continue; } ;;
		node | npm | git) command -v $c >/dev/null || { note "no $c: skipped"; continue; } ;;
		esac
		n=$((n + 1))
		t=kv_cl_$c
		web_mark
		EGR_TIMEOUT=60 egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" \
			--log "$W/$t.jlog" --allow ok.kv.test -- env HOME="$W/home" sh -c \
			"sh $C/kvtools.sh $c ok.kv.test $ca; sh $C/kvtools.sh $c evil.kv.test $ca"
		a_jlog "kv.clients.$c.allowed_direct" "$W/$t.jlog" source=kernel decision=allow host=ok.kv.test
		web_saw "kv.clients.$c.request_served" "^HTTPS local=$(re "$A_KV"):443 .*host=ok\.kv\.test"
		a_jlog_none "kv.clients.$c.allowed_not_proxied" "$W/$t.jlog" source='connect|transparent|http' \
			host=ok.kv.test
		if [ $c = node ]; then
			a_jlog kv.clients.node.denied_at_dns "$W/$t.jlog" source=dns decision=deny host=evil.kv.test
			a_grep kv.clients.node.says_not_found "$W/$t.out" 'error: getaddrinfo .*evil\.kv\.test'
		else
			a_jlog "kv.clients.$c.denied_by_proxy" "$W/$t.jlog" source=connect decision=deny \
				host=evil.kv.test
			a_grep "kv.clients.$c.says_403" "$W/$t.out" '403'
		fi
		a_grep "kv.clients.$c.denied_fails" "$W/$t.out" "^RESULT $c evil\.kv\.test rc=[1-9]"
	done
	if [ $n -ge 4 ]; then ok kv.clients.enough_clients; else
		fail kv.clients.enough_clients "only $n of the clients here (curl, git, python, pip at least)"
	fi
}

# A deny rule under an allowed wildcard keeps the wildcard out of NO_PROXY
# (a client would take its subdomains around the proxy too): the denied
# name gets the proxy's 403 with its header, the allowed one CONNECT.
test_denyrule() {
	local t=kv_denyrule
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" \
		--log "$W/$t.jlog" --allow '**.kv.test' --deny evil.kv.test -- sh -c '
		printf "{\"np\": \"%s\"}\n" "$NO_PROXY"
		curl -sS --max-time 5 --cacert "$1" -o /dev/null -w "{\"code\": \"%{http_code}\"}\n" https://ok.kv.test/
		curl -sS -v --max-time 5 --cacert "$1" https://evil.kv.test/ 2>&1 | grep -i "^< x-proxy-error"' \
		sh "$W/tls.crt"
	egr_json "$t" 1
	a_eq kv.denyrule.no_proxy np "$P_np" "localhost,127.0.0.1,::1"
	egr_json "$t" 2
	a_eq kv.denyrule.allowed_code code "$P_code" 200
	a_jlog kv.denyrule.allowed_connect "$W/$t.jlog" source=connect decision=allow host=ok.kv.test
	a_grep kv.denyrule.denied_header "$W/$t.out" '^< x-proxy-error: blocked-by-denylist'
}

# The exit summary counts both kinds.
test_summary() {
	local t=kv_summary
	egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" \
		--no-proxy-env --allow ok.kv.test -- sh -c \
		"$PY $C/kvclient.py tls ok.kv.test --sni ok.kv.test; $PY $C/kvclient.py tls ok.kv.test --sni evil.kv.test"
	a_grep kv.summary.counts "$W/$t.err" '1 kernel-verified, 1 kernel-rejected'
}

# The backstop behind egr_kv_kill (the test build without it, as a daemon
# that took over pins of an older egressctl, or a refusal in a network
# namespace egressctl's iterator does not walk): sockops ends the refused
# connection by a 1 ms TCP_USER_TIMEOUT at its next send attempt, so the
# client gets ETIMEDOUT within about the retransmission timer, nothing
# leaves, and egressctl says why it could not end it itself.
test_backstop() {
	local t=kv_backstop base
	test_build "$t" || return 0
	web_mark
	base=$(sensor_now "$PAYLOAD")
	EGRESSCTL="$EGRT" egr "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" \
		--no-proxy-env --log "$W/$t.jlog" --allow ok.kv.test --test-skip-prog kv_kill -- \
		"$PY" "$C/kvclient.py" tls ok.kv.test --sni evil.kv.test
	egr_json "$t"
	a_eq kv.backstop.timed_out detail "${P_detail%%]*}]" "[Errno 110]"
	quick kv.backstop.prompt 1500
	sensor_none_since kv.backstop.no_payload_left "$base" "$PAYLOAD"
	web_none kv.backstop.server_saw_nothing "^(TLS|HTTPS?) .*peer=198\.18\.0\.2:$P_lport "
	a_jlog_n kv.backstop.one_kernel_line "$W/$t.jlog" 1 source=kernel decision=deny \
		reason="kernel-verified: a name not answered.*"
	a_grep kv.backstop.said "$W/$t.err" 'cannot end refused connections: no iter/tcp link'
}

# kv6 TAG CMD...: as kv, with --ipv6, allowing ok6.kv.test
kv6() {
	local tag=$1
	shift
	egr "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" --ipv6 \
		--no-proxy-env --log "$W/$tag.jlog" --allow ok6.kv.test -- "$@"
}

# refused6 NAME FILTER REASON-ERE SERVER-ERE KVCLIENT-ARGS: confined with
# --ipv6, the client fails fast, the sensor sees nothing matching FILTER,
# the server no line matching SERVER-ERE from it, one kernel line (the
# confined half of refused, over IPv6)
refused6() {
	local name=$1 filter=$2 why=$3 seen=$4 base t=kv_v6_$1
	shift 4
	web_mark
	base=$(sensor_now "$filter")
	kv6 "$t" "$PY" "$C/kvclient.py" "$@" --6
	egr_json "$t"
	a_denied "kv.v6.$name.client_error"
	quick "kv.v6.$name.prompt" 1500
	sensor_none_since "kv.v6.$name.nothing_left" "$base" "$filter"
	web_none "kv.v6.$name.server_saw_nothing" "${seen}peer=\[2001:db8:1::2\]:$P_lport "
	a_jlog_n "kv.v6.$name.one_kernel_line" "$W/$t.jlog" 1 source=kernel decision=deny \
		reason="kernel-verified: $why"
}

# With --ipv6 the path serves AAAA answers as it serves A ones. The escape
# that only IPv6 has: a routing header, which an unprivileged socket may
# carry (IPV6_RTHDR: a segment routing header with no segment left, which
# the receiver passes over); its bytes sit where the TCP header would be.
# The control reaches the server with it; confined, the connect is refused
# already (nothing with the header leaves) and the client fails at once.
test_v6() {
	local t=kv_v6 base peer='peer=\[2001:db8:1::2\]'
	web_mark
	base=$(sensor_now "$PAYLOAD6")
	kv6 "$t" "$PY" "$C/kvclient.py" tls ok6.kv.test --sni ok6.kv.test --6
	egr_json "$t"
	a_ok kv.v6.python.verified
	web_saw kv.v6.python.server_saw_sni "^TLS local=\[$(re "$A6_KV")\]:443 $peer:$P_lport sni=ok6\.kv\.test"
	a_jlog kv.v6.python.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok6.kv.test port=443
	a_jlog_none kv.v6.python.no_proxy_line "$W/$t.jlog" source='transparent|connect|http|socks5'
	if [ "$(sensor_now "$PAYLOAD6")" -gt "$base" ]; then ok kv.v6.python.payload_left; else
		fail kv.v6.python.payload_left "the sensor saw no IPv6 payload of the verified connection"
	fi

	t=kv_v6_curl
	web_mark
	kv6 "$t" curl -6 -sS --max-time 5 --cacert "$W/tls.crt" -o /dev/null \
		-w '{"ok": true, "code": "%{http_code}", "lport": "%{local_port}"}\n' https://ok6.kv.test/
	egr_json "$t"
	a_eq kv.v6.curl.code code "$P_code" 200
	web_saw kv.v6.curl.direct "^TLS local=\[$(re "$A6_KV")\]:443 $peer:$P_lport sni=ok6\.kv\.test"
	a_jlog kv.v6.curl.kernel_line "$W/$t.jlog" source=kernel decision=allow host=ok6.kv.test

	# fronting: the allowed name's address, the denied name's SNI
	web_mark
	jv "$(kvc tls ok6.kv.test --sni evil6.kv.test --addr "$A6_KV")"
	a_ok kv.v6.fronting.control_reaches_server
	web_saw kv.v6.fronting.control_server_saw "^TLS .*sni=evil6\.kv\.test"
	# (the handshake may reach it: a connection reset before any byte)
	refused6 fronting "$PAYLOAD6" 'a name not answered.*' '^(TLS|HTTPS?) .*' \
		tls ok6.kv.test --sni evil6.kv.test

	# a routing header: the control's packets carry it, and it gets through
	web_mark
	base=$(sensor_now "$RTHDR6")
	jv "$(kvc tls ok6.kv.test --sni ok6.kv.test --addr "$A6_KV" --rthdr)"
	a_ok kv.v6.rthdr.control_reaches_server
	web_saw kv.v6.rthdr.control_server_saw "^TLS .*sni=ok6\.kv\.test"
	if [ "$(sensor_now "$RTHDR6")" -gt "$base" ]; then ok kv.v6.rthdr.control_sent_header; else
		fail kv.v6.rthdr.control_sent_header "the control's packets carried no routing header"
	fi
	# refused at the connect (the socket has it set already): no SYN
	# leaves; the line is connect6's (source bpf), not the first bytes'
	local t=kv_v6_rthdr
	web_mark
	base=$(sensor_now "$RTHDR6")
	kv6 "$t" "$PY" "$C/kvclient.py" tls ok6.kv.test --sni ok6.kv.test --rthdr --6
	egr_json "$t"
	a_errno kv.v6.rthdr.client_error EPERM
	sensor_none_since kv.v6.rthdr.nothing_left "$base" "$RTHDR6"
	web_none kv.v6.rthdr.server_saw_nothing '^(TLS|HTTPS?) '
	a_jlog_n kv.v6.rthdr.one_line "$W/$t.jlog" 1 source=bpf decision=deny \
		reason='IP options or an IPv6 extension header.*' comm=python3
}

ALL_TESTS="verified fronting nosni split sendfile host plain h2c other tfo wrongaddr proxyenv clients denyrule v6 backstop summary"

suite_main kverify.sh kv_setup "ip nsenter setpriv unshare mount tcpdump ss curl dig dnsmasq openssl timeout go javac java" "$@"
