#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of HTTPS inspection (docs/inspection.md): a host rule
# with methods, paths or "inspect" (or --limited) has its HTTPS ended by
# egressctl with a certificate of the run's CA, and every request inside is
# judged on its own, then sent to the real server over TLS that egressctl
# verifies.
#
#   allowed     curl (CONNECT), python urllib and requests, node fetch and
#               git, each with the CA of its own variable, and Go's and
#               Java's own TLS given the CA file: GET passes, the server
#               records it, the decision log says inspected with method and
#               path
#   post        POST to a GET/HEAD host: 403 blocked-by-method-policy inside
#               TLS, the server never sees it, no packet to it (control:
#               the POST reaches the server without egressctl)
#   paths       a path rule on one kept-alive connection (curl, two URLs):
#               /priv 403 blocked-by-path-policy, then /pub 200 on the same
#               connection; the transparent path (SNI) the same; SOCKS5 too
#               (control: /priv reaches the server without egressctl)
#   fronting    a request inside the session for another Host than the
#               session's name: 421 host-mismatch, never at the server
#               (control: the server answers it for that Host)
#   limited     --limited: GET, HEAD and OPTIONS pass, POST and DELETE 403;
#               the policy file's "mode": "limited" the same
#   kvpath      an inspected host is never reached direct (not the kernel-
#               verified path, not in NO_PROXY) while an uninspected one is
#   badcert     an upstream whose certificate no CA of --upstream-ca signed,
#               and one whose certificate of that CA names another name:
#               502 upstream-tls-failed, no request reaches them (control: the
#               request reaches them when the check is off: curl -k, the
#               other name)
#   websocket   a judged WebSocket upgrade, then an echo through the tunnel
#   h2only      a client that offers only h2 by ALPN fails its handshake;
#               one that offers h2 and http/1.1 gets HTTP/1.1
#   bigbody     a 64 MiB download to a client that does not read for 3 s:
#               egressctl's memory does not grow with it (watermarks)
#   trust       CMD's CA files: read-only to CMD (nobody and uid 0), the CA's
#               key in no file egressctl wrote, /proc/PID/mem and ptrace of
#               egressctl refused (control: each works outside egressctl)
#   env         the eight variables naming the CA, set only when a rule
#               inspects; the bundle holds the system's CAs and ours
#   secrets     --secret and a policy's "secrets": CMD holds placeholders;
#               the real values (env:, command: as SUDO_UID) arrive at the
#               secret's host in headers (the server logs them) and nowhere
#               else; the placeholder in another inspected host's header or
#               URL, in a plain-HTTP request, as a CONNECT or SOCKS5
#               target, an SNI or a DNS label, in a request body to
#               another inspected host (held or streamed): denied (403
#               blocked-by-secret-policy, a reset, REFUSED), logged naming
#               the secret, never at a server; a form and a JSON body to
#               the secret's host get the value (and its length), a
#               chunked one decoded, a binary one or one past 1 MiB not; the value in no log, no output, not
#               in CMD's environ; egressctl's environ, memory and ptrace refused to
#               CMD; a bad --secret and a missing source refused at start
#   hooks       a rule's header hooks: Cookie stripped; Authorization set
#               from a secret only when the client sent its placeholder
#               once (the value at the server, nowhere else); missing,
#               another value, twice or without the prefix: 403
#               blocked-by-header-policy, never at the server (control: the
#               same requests reach it without egressctl), judged per
#               request on one kept-alive connection; a header set without
#               a placeholder; plain HTTP to a host that sets a secret: 403;
#               --audit lets the refused request through without the value;
#               a hook naming no secret, a secret that may not go to every
#               name of the rule, a framing header: refused at start
#   git         git over smart HTTP (git http-backend behind TLS): a rule
#               allowing GET and POST to the fetch paths only lets a clone
#               through and refuses the push's POST git-receive-pack (403
#               blocked-by-path-policy, never at the server); control: the
#               push reaches the server without egressctl
#   reuse       upstream connections kept between requests: client
#               connections to one name share one upstream TLS connection
#               (in order), another name at its address gets its own, a
#               kept one the server closes as a request comes: that request
#               again on a new one
#   ca          --ca CERT,KEY: CMD is given that CA and the leaves are its
#               (a client trusting it alone gets 200), its key in no file
#               egressctl wrote; a key not the certificate's, and a
#               certificate that is no CA, refused at start
#
# The test network: lib.sh's (docs/testing.md), the leak sensor on the
# inet side. dnsmasq on 198.18.0.1:53 answers ok.i.test 203.0.113.10,
# plain.i.test .11, bad.i.test .12, wrong.i.test .13; webservers.py serves
# keep-alive HTTPS (--tlsvhost, a certificate of a test CA made here, given
# to egressctl as --upstream-ca) at .10 and .11, at .12 with a certificate
# the test CA did not sign, at .13 with one it signed for other.test. The confined commands resolve through /etc/resolv.conf,
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
A_OK=203.0.113.10
A_PLAIN=203.0.113.11
A_BAD=203.0.113.12
A_WRONG=203.0.113.13	# wrong.i.test: a certificate of the test CA for other.test
A_GITSRV=203.0.113.14	# git.i.test: git http-backend over TLS (clients/gitsrv.py)
WEBLOG=$W/web.log
ALL_TESTS="allowed post paths fronting limited kvpath badcert websocket h2only bigbody trust env secrets hooks git ca reuse"

# a test CA, a server certificate it signs for *.i.test, one it did not
# sign, and one it signs for another name (other.test)
cert_setup() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$W/testca.key" -out "$W/testca.crt" -subj "/CN=egr test CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
		>"$W/openssl.out" 2>&1 &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$W/srv.key" -out "$W/srv.csr" -subj /CN=ok.i.test >>"$W/openssl.out" 2>&1 &&
		printf 'subjectAltName=DNS:*.i.test\n' >"$W/srv.ext" &&
		openssl x509 -req -in "$W/srv.csr" -CA "$W/testca.crt" -CAkey "$W/testca.key" \
			-CAcreateserial -days 2 -extfile "$W/srv.ext" -out "$W/srv.crt" >>"$W/openssl.out" 2>&1 &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
			-keyout "$W/bad.key" -out "$W/bad.crt" -subj /CN=bad.i.test \
			-addext "subjectAltName=DNS:bad.i.test" >>"$W/openssl.out" 2>&1 &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$W/other.key" -out "$W/other.csr" -subj /CN=other.test >>"$W/openssl.out" 2>&1 &&
		printf 'subjectAltName=DNS:other.test\n' >"$W/other.ext" &&
		openssl x509 -req -in "$W/other.csr" -CA "$W/testca.crt" -CAkey "$W/testca.key" \
			-CAcreateserial -days 2 -extfile "$W/other.ext" -out "$W/other.crt" >>"$W/openssl.out" 2>&1 ||
		return 1
	chmod 0644 "$W/testca.crt" "$W/srv.crt" "$W/bad.crt" "$W/other.crt"
}

web_start() {	# web_start TAG ARGS...: webservers.py in the inet netns, READY awaited
	local tag=$1 i
	shift
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$WEBLOG" "$@" \
		>"$W/$tag.ready" 2>"$W/$tag.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/$tag.ready" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "webservers $tag failed: $(cat "$W/$tag.err")"
	return 1
}

inspect_setup() {
	local i n
	e2e_base_setup || return 1
	cert_setup || { echo "openssl: $(tail -3 "$W/openssl.out")"; return 1; }
	printf 'nameserver %s\noptions timeout:2 attempts:1\n' "$RESOLV_NS" >"$W/resolv.conf"
	chmod 0644 "$W/resolv.conf"
	if ! e2e_private_mntns; then
		echo "not in a private mount namespace: resolv.conf left alone"
		return 1
	fi
	mount --bind "$W/resolv.conf" /etc/resolv.conf || return 1
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dns-inet.pid" \
		--no-resolv --no-hosts --no-poll --bind-interfaces --listen-address="$INET_DNS" --port=53 \
		--local=/test/ --no-negcache --cache-size=0 --host-record=ctl.test,203.0.113.99 \
		--host-record=ok.i.test,$A_OK --host-record=two.i.test,$A_OK --host-record=plain.i.test,$A_PLAIN \
		--host-record=bad.i.test,$A_BAD --host-record=wrong.i.test,$A_WRONG \
		--host-record=git.i.test,$A_GITSRV \
		>"$W/dns-inet.out" 2>&1 &
	PIDS+=($!)
	web_start web --bind "$A_OK,$A_PLAIN" --tlsvhost 443 --cert "$W/srv.crt" --key "$W/srv.key" ||
		return 1
	web_start webbad --bind "$A_BAD" --tlsvhost 443 --cert "$W/bad.crt" --key "$W/bad.key" ||
		return 1
	web_start webwrong --bind "$A_WRONG" --tlsvhost 443 --cert "$W/other.crt" --key "$W/other.key" ||
		return 1
	cp "$E2E_SRC/clients/iclient.py" "$C/" && chmod 0755 "$C/iclient.py" || return 1
	sensor_start || return 1
	for i in $(seq 40); do
		n=$(in_sbx dig +short +time=1 +tries=1 @"$INET_DNS" ctl.test A 2>/dev/null)
		[ "$n" = 203.0.113.99 ] && break
		sleep 0.1
	done
	[ "$n" = 203.0.113.99 ] || { echo "dnsmasq: ctl.test gave '$n'"; return 1; }
	cat >"$W/prelude.sh" <<EOF
RW=$RW
IC="$PY $C/iclient.py"
# cu KEY CURLARGS...: "KEY code=HTTP rc=EXIT", headers in \$RW/KEY.hdr, body in \$RW/KEY.body
cu() {
	k=\$1; shift
	r=\$(curl -sS --max-time 10 -D "\$RW/\$k.hdr" -o "\$RW/\$k.body" -w "\$k code=%{http_code}" "\$@" 2>"\$RW/\$k.err")
	rc=\$?
	echo "\$r rc=\$rc"
}
EOF
	chmod 0644 "$W/prelude.sh"
}

# policy TAG JSON: the policy file of TAG
policy() { printf '%s\n' "$2" >"$W/$1.policy.json"; chmod 0644 "$W/$1.policy.json"; }

# irun TAG ARGS...: egressctl run as nobody, the suite's resolver and test
# CA, the decision log in $W/TAG.jlog; a policy file $W/TAG.policy.json
# when there is one
irun() {
	local tag=$1
	local -a pol=()
	shift
	[ -f "$W/$tag.policy.json" ] && pol=(--policy "$W/$tag.policy.json")
	egr "$tag" ${EGR_V:+-vv} --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" \
		--upstream-ca "$W/testca.crt" --log "$W/$tag.jlog" "${pol[@]}" "$@"
}

# res TAG KEY: the "KEY code=... rc=..." line CMD printed
res() { grep -a "^$2 " "$W/$1.out" | tail -1; }
a_code() {	# a_code NAME TAG KEY CODE
	local l
	l=$(res "$2" "$3")
	if [[ $l == *" code=$4 "* ]]; then ok "$1"; else
		fail "$1" "want code=$4, got '$l' (stderr: $(head -c 300 "$RW/$3.err" 2>/dev/null | tr '\n' '|'); egressctl: $(head -c 300 "$W/$2.err" | tr '\n' '|'))"
	fi
}
a_perr() {	# a_perr NAME KEY VALUE: the response of KEY had x-proxy-error: VALUE
	a_grep "$1" "$RW/$2.hdr" "^x-proxy-error: $3"$'\r'"?\$"
}

web_mark() { WEBN=$(wc -l <"$WEBLOG"); }
web_new() { tail -n +"$((WEBN + 1))" "$WEBLOG"; }
web_saw() {
	if web_new | grep -aqE "$2"; then ok "$1"; else fail "$1" "server never logged /$2/: $(web_new | tail -3 | tr "\n" "|")"; fi
}
web_none() {
	if web_new | grep -aqE "$2"; then fail "$1" "LEAK: the server logged /$2/: $(web_new | grep -aE "$2" | head -2 | tr '\n' '|')"; else ok "$1"; fi
}
SYN_OK="tcp[tcpflags] & tcp-syn != 0 and dst host $A_OK"

# a curl in the sbx netns, outside egressctl, trusting the test CA (controls)
ctl_curl() { in_sbx curl -sS --max-time 5 --cacert "$W/testca.crt" "$@"; }

# ---------------------------------------------------------------- tests

test_allowed() {
	local t=i_allowed
	policy $t '{"allow": [{"rule": "ok.i.test", "methods": ["GET", "HEAD"]}]}'
	script $t <<'EOF'
cu curl https://ok.i.test/a/curl
$IC get https://ok.i.test/a/urllib
node -e 'fetch("https://ok.i.test/a/node").then(async r => console.log(JSON.stringify({ok: true, code: String(r.status), body: await r.text()})), e => console.log(JSON.stringify({ok: false, errno: String(e.cause && e.cause.code)})))'
git ls-remote https://ok.i.test/a/repo.git >"$RW/git.out" 2>&1; echo "git rc=$?"
echo "requests $(/usr/bin/python3 -c 'import requests; print(requests.get("https://ok.i.test/a/requests", timeout=5).status_code)' 2>&1 | tail -1)"
[ -x "$RW/kvget" ] && "$RW/kvget" https://ok.i.test/a/go "$NODE_EXTRA_CA_CERTS"
[ -f "$RW/KvGet.class" ] && java -XX:-UsePerfData -cp "$RW" KvGet https://ok.i.test/a/java "$NODE_EXTRA_CA_CERTS"
EOF
	# Go's and Java's own TLS stacks, built here outside the sandbox, given
	# the CA file the run names (NODE_EXTRA_CA_CERTS: the CA alone)
	if ! command -v go >/dev/null; then
		fail inspect.allowed.go.present "go is not installed (tools/install-deps.sh installs golang-go)"
	elif ! GOCACHE="$W/gocache" HOME="$W" GOPATH="$W/gopath" GO111MODULE=off \
		go build -o "$RW/kvget" "$E2E_SRC/clients/kvget.go" >"$W/go-build.out" 2>&1; then
		fail inspect.allowed.go.build "$(tail -3 "$W/go-build.out" | tr '\n' '|')"
	fi
	if ! command -v javac >/dev/null; then
		fail inspect.allowed.java.present "javac is not installed (tools/install-deps.sh installs default-jdk-headless)"
	elif javac -d "$RW" "$E2E_SRC/clients/KvGet.java" >"$W/javac.out" 2>&1; then
		chmod 0644 "$RW/KvGet.class"
	else
		fail inspect.allowed.java.build "$(tail -3 "$W/javac.out" | tr '\n' '|')"
	fi
	web_mark
	irun $t -- sh "$W/$t.sh"
	a_code inspect.allowed.curl $t curl 200
	web_saw inspect.allowed.curl.server "^VHOST local=$(re "$A_OK"):443 .*method=GET target=/a/curl host=ok\.i\.test"
	a_jlog inspect.allowed.curl.log "$W/$t.jlog" decision=allow source=connect host=ok.i.test \
		method=GET path=/a/curl inspected=true
	a_jlog inspect.allowed.session.log "$W/$t.jlog" decision=allow source=connect \
		host=ok.i.test port=443 inspected=true 'rule=ok\.i\.test'
	egr_json $t 1
	a_eq inspect.allowed.urllib code "$P_code" 200
	web_saw inspect.allowed.urllib.server "method=GET target=/a/urllib host=ok\.i\.test"
	egr_json $t 2
	a_eq inspect.allowed.node code "$P_code" 200
	web_saw inspect.allowed.node.server "method=GET target=/a/node host=ok\.i\.test"
	a_grep inspect.allowed.requests "$W/$t.out" '^requests 200$'
	web_saw inspect.allowed.requests.server "method=GET target=/a/requests host=ok\.i\.test"
	a_grep inspect.allowed.go "$W/$t.out" '"client": ?"go".*"code": ?"200"'
	web_saw inspect.allowed.go.server "method=GET target=/a/go host=ok\.i\.test"
	a_grep inspect.allowed.java "$W/$t.out" '"client": "java".*"code": "200"'
	web_saw inspect.allowed.java.server "method=GET target=/a/java host=ok\.i\.test"
	# git's request got through TLS (the server's answer is no repository)
	web_saw inspect.allowed.git.server "method=GET target=/a/repo\.git/info/refs\?service=git-upload-pack"
	a_jlog_none inspect.allowed.no_deny "$W/$t.jlog" decision=deny
}

test_post() {
	local t=i_post base
	# control: without egressctl the POST reaches the server
	web_mark
	ctl_curl -o /dev/null -X POST -d x=1 https://ok.i.test/p/ctl --resolve "ok.i.test:443:$A_OK"
	web_saw inspect.post.control "method=POST target=/p/ctl"
	policy $t '{"allow": [{"rule": "ok.i.test", "methods": ["GET", "HEAD"]}]}'
	script $t <<'EOF'
cu post -X POST -d secret=1 https://ok.i.test/p/post
EOF
	web_mark
	base=$(sensor_now "$SYN_OK")
	irun $t -- sh "$W/$t.sh"
	a_code inspect.post.403 $t post 403
	a_perr inspect.post.header post blocked-by-method-policy
	a_grep inspect.post.body "$RW/post.body" "method POST not allowed"
	web_none inspect.post.server_none "target=/p/post"
	a_jlog inspect.post.log "$W/$t.jlog" decision=deny method=POST path=/p/post inspected=true
	sensor_none_since inspect.post.sensor_none "$base" "$SYN_OK"
}

test_paths() {
	local t=i_paths
	web_mark
	ctl_curl -o /dev/null https://ok.i.test/priv/ctl --resolve "ok.i.test:443:$A_OK"
	web_saw inspect.paths.control "target=/priv/ctl"
	policy $t '{"allow": [{"rule": "ok.i.test", "paths": ["/pub"]}]}'
	script $t <<'EOF'
curl -sS --max-time 10 -w 'ka %{http_code} %{num_connects}\n' -o /dev/null https://ok.i.test/priv/x -o /dev/null https://ok.i.test/pub/y
curl -sS --max-time 10 --noproxy '*' -w 'tp %{http_code} %{num_connects}\n' -o /dev/null https://ok.i.test/priv/t -o /dev/null https://ok.i.test/pub/t
curl -sS --max-time 10 --proxy "$ALL_PROXY" -w 'sk %{http_code}\n' -o /dev/null https://ok.i.test/pub/s
cu hdr https://ok.i.test/priv/h
EOF
	web_mark
	irun $t -- sh "$W/$t.sh"
	a_grep inspect.paths.keepalive "$W/$t.out" "^ka 403 1$"
	a_grep inspect.paths.keepalive.reused "$W/$t.out" "^ka 200 0$"
	a_perr inspect.paths.header hdr blocked-by-path-policy
	web_saw inspect.paths.pub "method=GET target=/pub/y"
	web_none inspect.paths.priv_none "target=/priv/"
	a_jlog inspect.paths.log.deny "$W/$t.jlog" decision=deny path=/priv/x inspected=true \
		source=connect
	a_jlog inspect.paths.log.allow "$W/$t.jlog" decision=allow path=/pub/y inspected=true
	# the transparent path: judged by its SNI, inspected the same way
	a_grep inspect.paths.transparent "$W/$t.out" "^tp 403 1$"
	a_grep inspect.paths.transparent.reused "$W/$t.out" "^tp 200 0$"
	a_jlog inspect.paths.transparent.log "$W/$t.jlog" decision=deny source=transparent \
		path=/priv/t inspected=true
	a_grep inspect.paths.socks "$W/$t.out" "^sk 200$"
	a_jlog inspect.paths.socks.log "$W/$t.jlog" decision=allow source=socks5 path=/pub/s \
		inspected=true
}

test_fronting() {
	local t=i_front
	web_mark
	ctl_curl -o /dev/null -H 'Host: evil.test' https://ok.i.test/f/ctl --resolve "ok.i.test:443:$A_OK"
	web_saw inspect.fronting.control "target=/f/ctl host=evil\.test"
	policy $t '{"allow": [{"rule": "ok.i.test", "inspect": true}]}'
	script $t <<'EOF'
cu front -H 'Host: evil.test' https://ok.i.test/f/x
EOF
	web_mark
	irun $t -- sh "$W/$t.sh"
	a_code inspect.fronting.421 $t front 421
	a_perr inspect.fronting.header front host-mismatch
	web_none inspect.fronting.server_none "target=/f/x"
}

test_limited() {
	local t=i_limited
	script $t <<'EOF'
cu get https://ok.i.test/l/get
cu head -I https://ok.i.test/l/head
cu post -X POST -d x=1 https://ok.i.test/l/post
cu del -X DELETE https://ok.i.test/l/del
cu opt -X OPTIONS https://ok.i.test/l/opt
EOF
	web_mark
	irun $t --limited --allow ok.i.test -- sh "$W/$t.sh"
	a_code inspect.limited.get $t get 200
	a_code inspect.limited.head $t head 200
	a_code inspect.limited.options $t opt 200
	web_saw inspect.limited.server_options "method=OPTIONS target=/l/opt"
	a_code inspect.limited.post $t post 403
	a_perr inspect.limited.post.header post blocked-by-method-policy
	a_grep inspect.limited.post.body "$RW/post.body" "read-only \(limited mode\)"
	a_code inspect.limited.delete $t del 403
	web_saw inspect.limited.server_get "method=GET target=/l/get"
	web_none inspect.limited.server_none "target=/l/(post|del)"

	# the policy file's "mode": "limited" is --limited
	t=i_limited_file
	policy $t '{"mode": "limited", "allow": ["ok.i.test"]}'
	script $t <<'EOF'
cu get https://ok.i.test/lf/get
cu put -X PUT -d x=1 https://ok.i.test/lf/put
EOF
	web_mark
	irun $t -- sh "$W/$t.sh"
	a_code inspect.limited.file.get $t get 200
	a_code inspect.limited.file.put $t put 403
	a_perr inspect.limited.file.put.header put blocked-by-method-policy
	web_saw inspect.limited.file.server_get "method=GET target=/lf/get"
	web_none inspect.limited.file.server_none "target=/lf/put"
}

test_kvpath() {
	local t=i_kv
	policy $t '{"allow": ["plain.i.test", {"rule": "ok.i.test", "inspect": true}]}'
	script $t <<EOF
echo "noproxy=\$NO_PROXY"
curl -sS --noproxy '*' --max-time 10 -o /dev/null -w 'plain %{http_code} %{local_port}\n' --cacert $W/testca.crt https://plain.i.test/kv/plain
curl -sS --noproxy '*' --max-time 10 -o /dev/null -w 'ok %{http_code} %{local_port}\n' https://ok.i.test/kv/ok
EOF
	web_mark
	irun $t -- sh "$W/$t.sh"
	a_grep inspect.kv.noproxy_plain "$W/$t.out" "^noproxy=.*plain\.i\.test"
	a_nogrep inspect.kv.noproxy_not_inspected "$W/$t.out" "^noproxy=.*ok\.i\.test"
	# control: the uninspected host goes direct, its server sees the client's own port
	local pport oport
	pport=$(awk '$1 == "plain" { print $3 }' "$W/$t.out")
	oport=$(awk '$1 == "ok" { print $3 }' "$W/$t.out")
	a_grep inspect.kv.plain_200 "$W/$t.out" "^plain 200 "
	web_saw inspect.kv.plain_direct "^TLS local=$(re "$A_PLAIN"):443 peer=198\.18\.0\.2:${pport:-none} "
	a_jlog inspect.kv.plain_kernel "$W/$t.jlog" source=kernel decision=allow host=plain.i.test
	# the inspected one: through the transparent proxy, never direct
	a_grep inspect.kv.ok_200 "$W/$t.out" "^ok 200 "
	web_none inspect.kv.ok_not_direct "^TLS local=$(re "$A_OK"):443 peer=198\.18\.0\.2:${oport:-none} "
	a_jlog_none inspect.kv.ok_no_kernel "$W/$t.jlog" source=kernel host=ok.i.test
	a_jlog inspect.kv.ok_inspected "$W/$t.jlog" source=transparent host=ok.i.test \
		path=/kv/ok inspected=true
	"$EGRESSCTL" check --policy "$W/$t.policy.json" ok.i.test >"$W/$t.check" 2>&1
	a_grep inspect.kv.check_inspected "$W/$t.check" "inspected"
	"$EGRESSCTL" check --policy "$W/$t.policy.json" --json plain.i.test >"$W/$t.check2" 2>&1
	a_grep inspect.kv.check_plain "$W/$t.check2" '"inspected":false'
}

test_badcert() {
	local t=i_bad
	# control: the server answers a client that does not check (curl -k)
	web_mark
	in_sbx curl -sSk --max-time 5 -o /dev/null https://bad.i.test/b/ctl --resolve "bad.i.test:443:$A_BAD"
	web_saw inspect.badcert.control "method=GET target=/b/ctl"
	in_sbx curl -sS --max-time 5 --cacert "$W/testca.crt" -o /dev/null https://other.test/b/ctl2 \
		--resolve "other.test:443:$A_WRONG"
	web_saw inspect.badcert.control_name "method=GET target=/b/ctl2 host=other\.test"
	policy $t '{"allow": [{"rule": "bad.i.test", "inspect": true}, {"rule": "wrong.i.test", "inspect": true}]}'
	script $t <<'EOF'
cu bad https://bad.i.test/b/x
cu wrong https://wrong.i.test/b/y
EOF
	web_mark
	irun $t -- sh "$W/$t.sh"
	a_code inspect.badcert.502 $t bad 502
	a_perr inspect.badcert.header bad upstream-tls-failed
	a_grep inspect.badcert.body "$RW/bad.body" "certificate verify failed"
	web_none inspect.badcert.server_none "target=/b/x"
	web_saw inspect.badcert.handshake_refused "^TLSERR local=$(re "$A_BAD"):443"
	# a certificate of a trusted CA for another name
	a_code inspect.badcert.name.502 $t wrong 502
	a_perr inspect.badcert.name.header wrong upstream-tls-failed
	a_grep inspect.badcert.name.body "$RW/wrong.body" "certificate verify failed: hostname mismatch"
	web_none inspect.badcert.name.server_none "target=/b/y"
}

test_websocket() {
	local t=i_ws
	policy $t '{"allow": [{"rule": "ok.i.test", "methods": ["GET"]}]}'
	script $t <<'EOF'
$IC ws ok.i.test /ws/x
EOF
	web_mark
	irun $t -- sh "$W/$t.sh"
	egr_json $t
	a_eq inspect.ws.101 code "$P_code" 101
	a_eq inspect.ws.echo echo "$P_echo" hello-ws
	web_saw inspect.ws.server "^VHOSTWS local=$(re "$A_OK"):443 .*hello-ws"
	a_jlog inspect.ws.log "$W/$t.jlog" decision=allow method=GET path=/ws/x inspected=true
}

# Regression: a client handshake that failed at once (this h2-only offer)
# failed inside bufferevent_enable(), whose callback closed the session
# under inspect_start(), which then used it (heap-use-after-free; an ASan
# build of egressctl aborted here). Callbacks now come from the loop.
test_h2only() {
	local t=i_h2
	policy $t '{"allow": [{"rule": "ok.i.test", "inspect": true}]}'
	script $t <<'EOF'
echo Q | openssl s_client -connect ok.i.test:443 -servername ok.i.test -alpn h2 -CAfile "$SSL_CERT_FILE" >"$RW/h2.out" 2>&1; echo "h2only rc=$?"
curl -sS --noproxy '*' --http2 --max-time 10 -o /dev/null -w 'both %{http_code} %{http_version}\n' https://ok.i.test/h/both
EOF
	irun $t -- sh "$W/$t.sh"
	a_grep inspect.h2only.refused "$W/$t.out" "^h2only rc=[1-9]"
	a_grep inspect.h2only.alert "$RW/h2.out" "no application protocol"
	a_grep inspect.h2only.h1_fallback "$W/$t.out" "^both 200 1\.1$"
}

# VmRSS of pid $1 in KiB
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

test_bigbody() {
	local t=i_big i before during
	policy $t '{"allow": [{"rule": "ok.i.test", "inspect": true}]}'
	script $t <<EOF
sleep 1
\$IC slow ok.i.test /b/67108864/cl $RW/big.mark 3
EOF
	rm -f "$RW/big.mark"
	egr_bg $t --cgroup "$(cg_name $t)" --user nobody --dns-upstream "$INET_DNS" \
		--upstream-ca "$W/testca.crt" --policy "$W/$t.policy.json" -- sh "$W/$t.sh"
	# from the response's head on, the client reads nothing for 3 s
	for i in $(seq 200); do [ -e "$RW/big.mark" ] && break; sleep 0.05; done
	before=$(rss "$EGR_PID")
	sleep 2
	during=$(rss "$EGR_PID")
	egr_join 30
	egr_json $t
	a_eq inspect.big.complete n "$P_n" 67108864
	note "egressctl VmRSS ${before:-?} KiB at the response's head, ${during:-?} KiB 2 s later, the client reading nothing"
	if [ -n "$before" ] && [ -n "$during" ] && [ "$during" -lt $((before + 16384)) ]; then
		ok inspect.big.memory_bounded
	else
		fail inspect.big.memory_bounded "VmRSS grew from ${before:-?} to ${during:-?} KiB"
	fi
}

test_trust() {
	local t=i_trust u mem
	# controls, outside egressctl: uid 0 without capabilities changes a
	# root 0444 file in a root 0755 directory (it owns them: chmod, then
	# write); root reads a process's memory; nobody ptraces its own process
	mkdir -m 0755 "$W/ctl" && echo ca >"$W/ctl/bundle.pem" && chmod 0444 "$W/ctl/bundle.pem"
	setpriv --inh-caps=-all --bounding-set=-all sh -c "chmod 0644 $W/ctl/bundle.pem && echo evil >>$W/ctl/bundle.pem" 2>/dev/null
	a_grep inspect.trust.control.write "$W/ctl/bundle.pem" evil
	setpriv --reuid=65534 --regid=65534 --clear-groups -- sleep 20 &
	local spid=$! dir
	PIDS+=("$spid")
	wait_for 5 grep -qx sleep "/proc/$spid/comm" # exec'd: setpriv's uid change made it undumpable until then
	jv "$(nobody "$PY" "$C/iclient.py" ptrace "$spid")"
	a_ok inspect.trust.control.ptrace
	policy $t '{"allow": [{"rule": "ok.i.test", "inspect": true}]}'
	for u in nobody root; do
		script $t.$u <<EOF
echo "bundle=\$SSL_CERT_FILE"
for f in "\$SSL_CERT_FILE" "\$NODE_EXTRA_CA_CERTS"; do
	(echo evil >>"\$f") 2>/dev/null && echo "wrote \$f"
	chmod 0644 "\$f" 2>/dev/null && echo "chmod \$f"
	rm -f "\$f" 2>/dev/null; [ -e "\$f" ] || echo "removed \$f"
done
touch "\$(dirname "\$SSL_CERT_FILE")/new" 2>/dev/null && echo "created in the directory"
while [ ! -e $RW/trust.pid ]; do sleep 0.05; done
p=\$(cat $RW/trust.pid)
\$IC mem \$p
\$IC ptrace \$p
\$IC ptrace $spid
\$IC keyfiles "\$(dirname "\$SSL_CERT_FILE")" $W/$t.$u.jlog
EOF
		rm -f "$RW/trust.pid"
		base=$(sensor_now tcp)
		egr_bg $t.$u --cgroup "$(cg_name "$t-$u")" --user "$u" --dns-upstream "$INET_DNS" \
			--upstream-ca "$W/testca.crt" --policy "$W/$t.policy.json" --log "$W/$t.$u.jlog" \
			-- sh "$W/$t.$u.sh"
		echo "$EGR_PID" >"$RW/trust.pid"
		# control: root outside reads egressctl's memory
		jv "$("$PY" "$C/iclient.py" mem "$EGR_PID")"
		a_ok inspect.trust.$u.control.mem
		egr_join 20
		a_grep inspect.trust.$u.bundle_named "$W/$t.$u.out" "^bundle=/tmp/egressctl-ca\.[A-Za-z0-9]+/bundle\.pem$"
		a_nogrep inspect.trust.$u.not_changed "$W/$t.$u.out" "^(wrote|chmod|removed|created)"
		egr_json $t.$u 1
		a_denied inspect.trust.$u.mem_refused
		egr_json $t.$u 2
		a_denied inspect.trust.$u.ptrace_egressctl_refused
		egr_json $t.$u 3
		a_denied inspect.trust.$u.ptrace_outside_refused
		egr_json $t.$u 4
		a_eq inspect.trust.$u.no_key_in_files keys "$P_keys" "[]"
		sensor_none_since inspect.trust.$u.sensor_none "$base" tcp
	done
	dir=$(sed -n 's|^bundle=\(/tmp/egressctl-ca\.[A-Za-z0-9]*\)/bundle\.pem$|\1|p' "$W/$t.root.out")
	if [ -n "$dir" ] && [ ! -e "$dir" ]; then ok inspect.trust.removed_at_exit; else
		fail inspect.trust.removed_at_exit "the trust files' directory '${dir:-?}' is still there"
	fi
}

test_env() {
	local t=i_env
	policy $t '{"allow": [{"rule": "ok.i.test", "inspect": true}]}'
	cat >"$W/$t.sh" <<'EOF'
for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO PIP_CERT NPM_CONFIG_CAFILE AWS_CA_BUNDLE; do
	eval "f=\${$v:-}"
	echo "$v=$f certs=$(grep -c 'BEGIN CERTIFICATE' "$f" 2>/dev/null) mode=$(stat -c %a:%U "$f" 2>/dev/null)"
done
EOF
	chmod 0644 "$W/$t.sh"
	irun $t -- sh "$W/$t.sh"
	for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT NPM_CONFIG_CAFILE AWS_CA_BUNDLE; do
		a_grep inspect.env.$v "$W/$t.out" "^$v=/tmp/egressctl-ca\.[^ ]+/bundle\.pem certs=([2-9]|[1-9][0-9]+) mode=444:root$"
	done
	a_grep inspect.env.NODE_EXTRA_CA_CERTS "$W/$t.out" "^NODE_EXTRA_CA_CERTS=/tmp/egressctl-ca\.[^ ]+/ca\.pem certs=1 mode=444:root$"
	# nothing inspects: none of them
	rm -f "$W/$t.policy.json"
	irun $t --allow ok.i.test -- sh "$W/$t.sh"
	a_nogrep inspect.env.none_all "$W/$t.out" "=/tmp/egressctl-ca"
}

# a_summary_secrets NAME FILE: the JSON summary's "secrets" for TOK: its
# use on ok.i.test, its leak attempts by place (request, dns, sni,
# connect), each with who tried it; the destinations' words hide it.
a_summary_secrets() {
	local r
	r=$("$PY" - "$2" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    s = {e["name"]: e for e in d["secrets"]}["TOK"]
    # the header of /s/use, the bodies of /s/bodyok, /s/bodyjson, /s/bodychunked
    assert s["used"] == 4 and s["used_at"] == [{"host": "ok.i.test", "requests": 4}], s["used_at"]
    la = s["leak_attempts"]
    where = {a["where"] for a in la}
    assert {"request", "dns", "sni", "connect", "socks5"} <= where, where
    assert s["leaks"] == sum(a["count"] for a in la), (s["leaks"], la)
    assert any(a["where"] == "request" and a["destination"] == "plain.i.test:443" for a in la), la
    assert any(a["where"] == "dns" and a["destination"] == "x{TOK}.i.test" for a in la), la
    assert all(a["who"] and a["who"][0]["comm"] and a["who"][0]["pid"] > 0 for a in la), la
    assert not any("suggest" in x for x in d["destinations"] if "{TOK}" in x["destination"]), d
    print("ok")
except Exception as e:
    print("bad: %r" % (e,))
EOF
)
	if [ "$r" = ok ]; then ok "$1"; else fail "$1" "$r"; fi
}

test_secrets() {
	local t=i_secrets val cval f rnd rnd2 ph
	val="realtok-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	cval=65534
	policy $t '{"allow": ["ok.i.test", {"rule": "plain.i.test", "inspect": true}],
	  "secrets": {"UIDTOK": {"from": "command:id -u", "hosts": ["ok.i.test", "plain.i.test"]}}}'
	script $t <<EOF
echo "ph=\$TOK uph=\$UIDTOK"
H=\$(printf %s "\$TOK" | tail -c 32)
cu use -H "Authorization: Bearer \$TOK" -H "X-K: \$UIDTOK" https://ok.i.test/s/use
cu other -H "Authorization: Bearer \$TOK" https://plain.i.test/s/other
cu url "https://plain.i.test/s/url?k=\$TOK"
cu plainhttp -H "X-K: \$TOK" http://plain.i.test/s/plain
cu body -X POST --data-binary "x=1&k=\$TOK&y=2" https://plain.i.test/s/body
cu bodyok -X POST --data-binary "k=\$TOK" https://ok.i.test/s/bodyok
cu bodyjson -X POST -H 'Content-Type: application/json' --data-binary "{\"k\": \"\$TOK\", \"n\": 1}" https://ok.i.test/s/bodyjson
cu bodybin -X POST -H 'Content-Type: application/octet-stream' --data-binary "k=\$TOK" https://ok.i.test/s/bodybin
cu bodychunked -X POST -H 'Transfer-Encoding: chunked' --data-binary "k=\$TOK" https://ok.i.test/s/bodychunked
cu bodyother -X POST -H 'Content-Type: application/json' --data-binary "{\"k\": \"\$TOK\"}" https://plain.i.test/s/bodyother
cu bodystream -X POST -H 'Content-Type: application/octet-stream' -H 'Transfer-Encoding: chunked' --data-binary "x=\$TOK" https://plain.i.test/s/bodystream
head -c 1572864 /dev/zero | tr '\\0' a >$RW/big.txt; printf '&k=%s' "\$TOK" >>$RW/big.txt
cu bodybig -X POST -H 'Transfer-Encoding: chunked' --data-binary @$RW/big.txt https://ok.i.test/s/bodybig
cu connect -p "https://\$H.i.test/s/connect"
curl -sS --max-time 5 --proxy "\$ALL_PROXY" -o /dev/null "https://\$H.i.test/s/socks" 2>"$RW/socks.err"; echo "socks rc=\$?"
curl -sS --max-time 5 --noproxy '*' --resolve "\$H.i.test:443:$A_OK" -o /dev/null "https://\$H.i.test/s/sni" 2>/dev/null; echo "sni rc=\$?"
echo "dns \$(dig +time=2 +tries=1 "x\$H.i.test" A | grep -o 'status: [A-Z]*')"
echo "self_environ \$(grep -c realtok /proc/self/environ)"
while [ ! -e $RW/sec.pid ]; do sleep 0.05; done
p=\$(cat $RW/sec.pid)
cat /proc/\$p/environ >/dev/null 2>&1; echo "egr_environ rc=\$?"
\$IC mem \$p
\$IC ptrace \$p
EOF
	rm -f "$RW/sec.pid"
	web_mark
	TOKV=$val SUDO_UID=$cval SUDO_GID=$cval egr_bg $t --cgroup "$(cg_name "$t")" --user nobody \
		--dns-upstream "$INET_DNS" --upstream-ca "$W/testca.crt" --log "$W/$t.jlog" \
		--policy "$W/$t.policy.json" --secret "TOK=env:TOKV@ok.i.test" \
		--summary "$W/$t.sum.json" --summary-format json \
		--suggest-policy "$W/$t.suggest.json" -- sh "$W/$t.sh"
	echo "$EGR_PID" >"$RW/sec.pid"
	egr_join 30
	a_grep inspect.secrets.placeholder "$W/$t.out" "^ph=EGRESSCTL_SECRET_TOK_[0-9a-f]{32} uph=EGRESSCTL_SECRET_UIDTOK_[0-9a-f]{32}$"
	a_code inspect.secrets.use $t use 200
	web_saw inspect.secrets.value_arrived "auth=Bearer_$val xk=$cval req=[0-9]+ method=GET target=/s/use "
	a_code inspect.secrets.other_host $t other 403
	a_perr inspect.secrets.other_host.header other blocked-by-secret-policy
	a_code inspect.secrets.url $t url 403
	a_code inspect.secrets.plain_http $t plainhttp 403
	a_code inspect.secrets.body $t body 403
	a_perr inspect.secrets.body.header body blocked-by-secret-policy
	# a body of a text type to the secret's host: the value, and the length
	# that goes with it (a chunked one too, sent decoded); a binary one as
	# it was
	a_code inspect.secrets.body_own_host $t bodyok 200
	web_saw inspect.secrets.body_own_host.server \
		"target=/s/bodyok .*len=$(printf 'k=%s' "$val" | wc -c) sha=$(printf 'k=%s' "$val" | sha256sum | cut -d' ' -f1)\$"
	a_code inspect.secrets.body_json $t bodyjson 200
	web_saw inspect.secrets.body_json.server \
		"target=/s/bodyjson .*sha=$(printf '{"k": "%s", "n": 1}' "$val" | sha256sum | cut -d' ' -f1)\$"
	ph=$(sed -n 's/^ph=\(EGRESSCTL_SECRET_TOK_[0-9a-f]*\) .*/\1/p' "$W/$t.out")
	a_code inspect.secrets.body_binary $t bodybin 200
	web_saw inspect.secrets.body_binary.as_sent \
		"target=/s/bodybin .*sha=$(printf 'k=%s' "$ph" | sha256sum | cut -d' ' -f1)\$"
	a_code inspect.secrets.body_chunked $t bodychunked 200
	web_saw inspect.secrets.body_chunked.swapped \
		"target=/s/bodychunked .*len=$(printf 'k=%s' "$val" | wc -c) sha=$(printf 'k=%s' "$val" | sha256sum | cut -d' ' -f1)\$"
	# a chunked one past 1 MiB: it streams as it was sent
	a_code inspect.secrets.body_big $t bodybig 200
	web_saw inspect.secrets.body_big.as_sent \
		"target=/s/bodybig .*len=$(stat -c %s "$RW/big.txt") sha=$(sha256sum <"$RW/big.txt" | cut -d' ' -f1)\$"
	# TOK's placeholder in a body to plain.i.test (a host of UIDTOK's, not
	# TOK's): held whole (a JSON, a form) or streamed (binary), refused
	a_code inspect.secrets.body_held_other $t bodyother 403
	a_perr inspect.secrets.body_held_other.header bodyother blocked-by-secret-policy
	a_code inspect.secrets.body_streamed_other $t bodystream 403
	a_perr inspect.secrets.plain_http.header plainhttp blocked-by-secret-policy
	a_grep inspect.secrets.connect "$RW/connect.err" "CONNECT tunnel failed, response 403"
	a_grep inspect.secrets.sni "$W/$t.out" "^sni rc=[1-9][0-9]*$"
	a_grep inspect.secrets.socks5 "$W/$t.out" "^socks rc=[1-9][0-9]*$"
	a_jlog inspect.secrets.log.socks5 "$W/$t.jlog" decision=deny source=socks5 "reason=.*secret TOK.*"
	a_grep inspect.secrets.dns "$W/$t.out" "^dns status: REFUSED$"
	web_none inspect.secrets.nothing_elsewhere "target=/s/(other|url|plain|connect|socks|sni|body|bodyother) "
	a_jlog inspect.secrets.log.other "$W/$t.jlog" decision=deny host=plain.i.test \
		"reason=.*secret TOK.*exfiltration attempt"
	a_jlog inspect.secrets.log.dns "$W/$t.jlog" decision=deny source=dns "reason=.*secret TOK.*"
	a_jlog inspect.secrets.log.sni "$W/$t.jlog" decision=deny source=transparent "reason=.*secret TOK.*"
	a_grep inspect.secrets.self_environ "$W/$t.out" "^self_environ 0$"
	a_grep inspect.secrets.egr_environ_refused "$W/$t.out" "^egr_environ rc=[1-9]"
	egr_json $t 1
	a_denied inspect.secrets.mem_refused
	egr_json $t 2
	a_denied inspect.secrets.ptrace_refused
	a_grep inspect.secrets.summary "$W/$t.err" "secret TOK: put into 4 requests, [0-9]+ attempts to send it elsewhere denied"
	# the summary file: the secret by name, its use per host, its leak
	# attempts (where, by whom); the suggested policy proposes none of them
	rnd=$(sed -n 's/^ph=EGRESSCTL_SECRET_TOK_\([0-9a-f]*\) .*/\1/p' "$W/$t.out")
	a_summary_secrets inspect.secrets.summary_json "$W/$t.sum.json"
	a_nogrep inspect.secrets.suggest.no_leak "$W/$t.suggest.json" "EGRESSCTL_SECRET|${rnd:-norandom}"
	# plain.i.test:80 saw only a leak (plain HTTP with the placeholder): for review
	a_grep inspect.secrets.suggest.review "$W/$t.suggest.json" "secret TOK's placeholder sent to it"
	# markdown, and a leak that is only a DNS name
	TOKV=$val irun ${t}_md --allow ok.i.test --secret "TOK=env:TOKV@ok.i.test" \
		--summary "$W/$t.sum.md" --summary-format markdown -- sh -c \
		'dig +time=1 +tries=1 "x${TOK#EGRESSCTL_SECRET_TOK_}.i.test" A >/dev/null; echo "ph=$TOK"'
	rnd2=$(sed -n 's/^ph=EGRESSCTL_SECRET_TOK_//p' "$W/${t}_md.out")
	a_grep inspect.secrets.summary_md.secret "$W/$t.sum.md" "^- \*\*TOK\*\*: put into 0 requests; 1 leak attempt denied$"
	a_grep inspect.secrets.summary_md.leak "$W/$t.sum.md" "^  - dns x\{TOK\}\.i\.test: 1, by [^ ]+\\\[[0-9]+\\\]$"
	for f in "$W/$t.sum.json" "$W/$t.sum.md"; do
		a_nogrep "inspect.secrets.placeholder_absent.$(basename "$f")" "$f" \
			"EGRESSCTL_SECRET|${rnd:-norandom}|${rnd2:-norandom}"
	done
	for f in "$W/$t.jlog" "$W/$t.out" "$W/$t.err" "$W/$t.sum.json" "$W/$t.sum.md" "$W/$t.suggest.json"; do
		a_nogrep "inspect.secrets.value_absent.$(basename "$f")" "$f" "$val|auth=Bearer"
	done
	# refusals: a bad --secret, a source that fails
	irun $t --allow ok.i.test --secret "TOK=vault:x@ok.i.test" -- true
	a_grep inspect.secrets.bad_kind "$W/$t.err" "--secret TOK=vault:x@ok\.i\.test: unknown source \"vault:x\""
	irun $t --allow ok.i.test --secret "TOK=env:TOKV_MISSING@ok.i.test" -- true
	a_rc inspect.secrets.missing.exit 125 $t
	a_grep inspect.secrets.missing.said "$W/$t.err" "secret TOK \(env:TOKV_MISSING\): egressctl's environment has no TOKV_MISSING"
}

test_hooks() {
	local t=i_hooks val kval f
	val="hooktok-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	kval="hookkey-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	policy $t '{"allow": [
	  {"rule": "ok.i.test", "strip_headers": ["cookie"],
	   "set_headers": {"Authorization": {"secret": "TOK", "prefix": "Bearer ", "require_placeholder": true}}},
	  {"rule": "plain.i.test", "set_headers": {"X-K": {"secret": "KEY"}}}],
	  "secrets": {"TOK": {"from": "env:TOKV", "hosts": ["ok.i.test"]},
	              "KEY": {"from": "env:KEYV", "hosts": ["plain.i.test"]}}}'
	# control: without egressctl, the requests the hooks refuse reach the
	# server as the client sent them
	web_mark
	ctl_curl -o /dev/null -H "Authorization: Bearer other" -H "Cookie: sid=1" https://ok.i.test/h/ctl --resolve "ok.i.test:443:$A_OK"
	ctl_curl -o /dev/null -H "Authorization: Bearer a" -H "Authorization: Bearer b" https://ok.i.test/h/ctl2 --resolve "ok.i.test:443:$A_OK"
	web_saw inspect.hooks.control.reaches "cookie=sid=1 nauth=1 auth=Bearer_other .*target=/h/ctl "
	web_saw inspect.hooks.control.twice_reaches "nauth=2 .*target=/h/ctl2 "
	script $t <<'EOF'
cu ph -H "Authorization: Bearer $TOK" -H "Cookie: sid=1" https://ok.i.test/h/ph
cu missing https://ok.i.test/h/missing
cu mismatch -H "Authorization: Bearer other" https://ok.i.test/h/mismatch
cu twice -H "Authorization: Bearer $TOK" -H "Authorization: Bearer $TOK" https://ok.i.test/h/twice
cu noprefix -H "Authorization: $TOK" https://ok.i.test/h/noprefix
curl -sS --max-time 10 -o /dev/null -w "ka1 code=%{http_code} \n" -H "Authorization: Bearer $TOK" \
	https://ok.i.test/h/ka1 --next -sS --max-time 10 -o /dev/null -D "$RW/ka2.hdr" \
	-w "ka2 code=%{http_code} connects=%{num_connects} \n" https://ok.i.test/h/ka2 2>"$RW/ka1.err"
cu setk -H "X-K: client-value" https://plain.i.test/h/setk
cu setk_none https://plain.i.test/h/setk_none
cu plainhttp http://plain.i.test/h/plain
EOF
	web_mark
	TOKV=$val KEYV=$kval irun $t -- sh "$W/$t.sh"
	a_rc inspect.hooks.exit 0 $t
	a_code inspect.hooks.placeholder $t ph 200
	web_saw inspect.hooks.value_arrived "cookie=- nauth=1 auth=Bearer_$val .*target=/h/ph "
	for f in missing mismatch twice noprefix; do
		a_code "inspect.hooks.$f" $t $f 403
		a_perr "inspect.hooks.$f.header" $f blocked-by-header-policy
	done
	a_jlog inspect.hooks.log.missing "$W/$t.jlog" decision=deny host=ok.i.test path=/h/missing \
		"reason=header Authorization: the placeholder of secret TOK is required and was not sent .*"
	a_jlog inspect.hooks.log.twice "$W/$t.jlog" decision=deny path=/h/twice "reason=header Authorization: sent more than once .*"
	# one kept-alive connection: the first request passes, the second,
	# without the placeholder, is refused on its own
	a_code inspect.hooks.keepalive.first $t ka1 200
	a_code inspect.hooks.keepalive.second $t ka2 403
	a_grep inspect.hooks.keepalive.same_connection "$W/$t.out" "^ka2 code=403 connects=0 $"
	a_code inspect.hooks.set_replaces $t setk 200
	web_saw inspect.hooks.set_replaces.server "xk=$kval .*target=/h/setk "
	a_code inspect.hooks.set_added $t setk_none 200
	web_saw inspect.hooks.set_added.server "xk=$kval .*target=/h/setk_none "
	a_code inspect.hooks.plain_http $t plainhttp 403
	a_perr inspect.hooks.plain_http.header plainhttp blocked-by-header-policy
	web_none inspect.hooks.refused_never_at_server "target=/h/(missing|mismatch|twice|noprefix|ka2|plain)"
	for f in "$W/$t.jlog" "$W/$t.out" "$W/$t.err"; do
		a_nogrep "inspect.hooks.value_absent.$(basename "$f")" "$f" "$val|$kval"
	done
	# --audit: the refused request goes through, without the value
	script ${t}_audit <<'EOF'
cu amissing https://ok.i.test/h/amissing
EOF
	web_mark
	TOKV=$val KEYV=$kval irun ${t}_audit --audit --policy "$W/$t.policy.json" -- sh "$W/${t}_audit.sh"
	a_code inspect.hooks.audit.through ${t}_audit amissing 200
	web_saw inspect.hooks.audit.no_value "auth=- .*target=/h/amissing "
	a_jlog inspect.hooks.audit.logged "$W/${t}_audit.jlog" decision=would-deny path=/h/amissing \
		"reason=header Authorization: .*required.*"
	# refused at start: a secret nobody defined, one that may not go to
	# every name the rule allows, a header that frames the request
	policy ${t}_undef '{"allow": [{"rule": "ok.i.test", "set_headers": {"X-K": {"secret": "NOPE"}}}]}'
	irun ${t}_undef -- true
	a_rc inspect.hooks.undefined.exit 125 ${t}_undef
	a_grep inspect.hooks.undefined.said "$W/${t}_undef.err" 'header X-K: no secret NOPE'
	policy ${t}_wide '{"allow": [{"rule": "*.i.test", "set_headers": {"X-K": {"secret": "TOK"}}}],
	  "secrets": {"TOK": {"from": "env:TOKV", "hosts": ["ok.i.test"]}}}'
	TOKV=$val irun ${t}_wide -- true
	a_rc inspect.hooks.wide.exit 125 ${t}_wide
	a_grep inspect.hooks.wide.said "$W/${t}_wide.err" 'secret TOK may not go to every name the rule allows'
	policy ${t}_frame '{"allow": [{"rule": "ok.i.test", "strip_headers": ["Transfer-Encoding"]}]}'
	irun ${t}_frame -- true
	a_rc inspect.hooks.framing.exit 125 ${t}_frame
	a_grep inspect.hooks.framing.said "$W/${t}_frame.err" 'Transfer-Encoding routes or frames the request'
}

test_git() {
	local t=i_git g=$W/git log=$W/git.log
	git init -q --bare "$g/repo.git" && git -C "$g/repo.git" config http.receivepack true &&
		git init -q "$g/work" && echo one >"$g/work/f" && git -C "$g/work" add f &&
		git -C "$g/work" -c user.name=t -c user.email=t@example.test commit -q -m one &&
		git -C "$g/work" push -q "$g/repo.git" HEAD:refs/heads/main 2>"$W/git-init.err" &&
		git -C "$g/repo.git" symbolic-ref HEAD refs/heads/main || {
		fail inspect.git.setup "cannot make the test repository: $(tail -2 "$W/git-init.err" 2>/dev/null)"
		return
	}
	: >"$log"
	nsenter --net="$NS_INET" "$PY" "$E2E_SRC/clients/gitsrv.py" --bind "$A_GITSRV" --port 443 \
		--cert "$W/srv.crt" --key "$W/srv.key" --root "$g" --log "$log" >"$W/gitsrv.ready" 2>"$W/gitsrv.err" &
	PIDS+=($!)
	wait_secs 10 grep -q READY "$W/gitsrv.ready" || {
		fail inspect.git.server "gitsrv.py did not start: $(head -c 300 "$W/gitsrv.err")"
		return
	}
	# control: without egressctl a clone and a push reach the server
	in_sbx env HOME="$W" GIT_SSL_CAINFO="$W/testca.crt" git -c http.curloptResolve=git.i.test:443:$A_GITSRV \
		clone -q https://git.i.test/repo.git "$W/ctl-clone" >"$W/git-ctl.out" 2>&1 &&
		echo ctl >>"$W/ctl-clone/f" &&
		git -C "$W/ctl-clone" -c user.name=t -c user.email=t@example.test commit -q -am ctl &&
		in_sbx env HOME="$W" GIT_SSL_CAINFO="$W/testca.crt" git -C "$W/ctl-clone" \
			-c http.curloptResolve=git.i.test:443:$A_GITSRV push -q origin HEAD:main >>"$W/git-ctl.out" 2>&1
	a_grep inspect.git.control.push_reaches "$log" "^GIT method=POST path=/repo\\.git/git-receive-pack query=- status=200$"
	policy $t '{"allow": [{"rule": "git.i.test", "methods": ["GET", "POST"],
	  "paths": ["/repo.git/info/refs", "/repo.git/git-upload-pack"]}]}'
	script $t <<'EOF'
export HOME=$RW/githome
mkdir -p $HOME
git clone -q https://git.i.test/repo.git $RW/clone >$RW/clone.out 2>&1; echo "clone rc=$?"
echo "clone f=$(tr '\n' ' ' <$RW/clone/f)"
cd $RW/clone && echo two >>f && git -c user.name=t -c user.email=t@example.test commit -q -am two &&
	git push -q origin HEAD:main >$RW/push.out 2>&1; echo "push rc=$?"
EOF
	: >"$log"
	irun $t -- sh "$W/$t.sh"
	a_grep inspect.git.clone "$W/$t.out" '^clone rc=0$'
	a_grep inspect.git.clone.content "$W/$t.out" '^clone f=one ctl $'
	a_grep inspect.git.clone.at_server "$log" "^GIT method=POST path=/repo\\.git/git-upload-pack query=- status=200$"
	a_grep inspect.git.push_refused "$W/$t.out" '^push rc=[1-9][0-9]*$'
	a_grep inspect.git.push_said "$RW/push.out" '403'
	a_nogrep inspect.git.push_never_at_server "$log" 'git-receive-pack query=- '
	a_jlog inspect.git.push_logged "$W/$t.jlog" decision=deny host=git.i.test method=POST \
		path=/repo.git/git-receive-pack 'reason=path not allowed.*'
}

test_ca() {
	local t=i_ca
	policy $t '{"allow": [{"rule": "ok.i.test", "inspect": true}]}'
	script $t <<EOF
cmp -s "\$NODE_EXTRA_CA_CERTS" $W/testca.crt && echo "ca=ours"
cu ca --cacert $W/testca.crt https://ok.i.test/c/x
\$IC keyfiles "\$(dirname "\$SSL_CERT_FILE")"
EOF
	irun $t --ca "$W/testca.crt,$W/testca.key" -- sh "$W/$t.sh"
	a_grep inspect.ca.given "$W/$t.out" "^ca=ours$"
	a_code inspect.ca.leaf_of_it $t ca 200
	egr_json $t
	a_eq inspect.ca.no_key_in_files keys "$P_keys" "[]"
	irun $t --ca "$W/testca.crt,$W/srv.key" -- true
	a_rc inspect.ca.wrong_key.exit 125 $t
	a_grep inspect.ca.wrong_key.said "$W/$t.err" "--ca: the key is not the certificate's"
	irun $t --ca "$W/srv.crt,$W/srv.key" -- true
	a_rc inspect.ca.not_ca.exit 125 $t
	a_grep inspect.ca.not_ca.said "$W/$t.err" "--ca: .*srv\.crt is no CA certificate"
	irun $t --ca "$W/testca.crt" -- true
	a_rc inspect.ca.no_comma.exit 125 $t
	a_grep inspect.ca.no_comma.said "$W/$t.err" "--ca .*testca\.crt: expected CERT,KEY"
}

# Upstream connections kept between requests (inspect/pool.c): separate
# client connections to one name, one request each, go over one upstream
# TLS connection, in order (the server's req= count); another name at the
# same address gets a connection of its own (its SNI, its Host, req=1),
# never the first's; a kept connection the server closes as the next
# request comes (/drop-next) costs the client nothing: the request goes
# again on a new one, once.
test_reuse() {
	local t=i_reuse n
	policy $t '{"allow": [{"rule": "ok.i.test", "methods": ["GET"]}, {"rule": "two.i.test", "methods": ["GET"]}]}'
	script $t <<'EOF'
for i in 1 2 3 4; do cu r$i curl https://ok.i.test/r/$i; done
cu two curl https://two.i.test/r/two
cu d1 curl https://ok.i.test/drop-next
cu d2 curl https://ok.i.test/r/after-drop
EOF
	web_mark
	irun $t -- sh "$W/$t.sh"
	for n in 1 2 3 4; do a_code "inspect.reuse.r$n" $t "r$n" 200; done
	web_saw inspect.reuse.in_order "^VHOST local=$(re "$A_OK"):443 .* req=4 method=GET target=/r/4 host=ok\\.i\\.test "
	a_code inspect.reuse.two $t two 200
	web_saw inspect.reuse.two.own_sni "^TLS local=$(re "$A_OK"):443 .* sni=two\\.i\\.test "
	web_saw inspect.reuse.two.own_conn "^VHOST .* req=1 method=GET target=/r/two host=two\\.i\\.test "
	a_code inspect.reuse.drop.first $t d1 200
	a_code inspect.reuse.drop.again $t d2 200
	web_saw inspect.reuse.drop.dropped "^VHOSTDROP local=$(re "$A_OK"):443 .* target=/r/after-drop\$"
	web_saw inspect.reuse.drop.new_conn "^VHOST .* req=1 method=GET target=/r/after-drop host=ok\\.i\\.test "
	a_eq inspect.reuse.drop.once "requests for /r/after-drop at the server" \
		"$(web_new | grep -ac "target=/r/after-drop")" 2
	# 7 requests to ok.i.test: two TLS connections (the second after the drop)
	a_eq inspect.reuse.handshakes "TLS connections to ok.i.test" \
		"$(web_new | grep -ac "^TLS local=$(re "$A_OK"):443 .* sni=ok\\.i\\.test ")" 2
	a_jlog inspect.reuse.logged "$W/$t.jlog" decision=allow host=ok.i.test method=GET path=/r/4 inspected=true
}

suite_main inspect.sh inspect_setup "ip nsenter setpriv tcpdump ss curl dig dnsmasq openssl node git" "$@"
