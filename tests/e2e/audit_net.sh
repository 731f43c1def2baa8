# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # used by audit.sh and ask.sh; P_* from jv
# The network, names, servers and helpers of audit.sh and ask.sh (the
# network as the top of audit.sh says, drawn in docs/testing.md). Sourced
# after lib.sh.


# the log-disk test's tmpfs mounts go before the work dir does
eval "lib_$(declare -f e2e_cleanup)"
e2e_cleanup() {
	local m
	for m in "$W"/*.fs; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	lib_e2e_cleanup
}

INET_DNS=198.18.0.1
RESOLV_NS=198.51.100.53
A_A=203.0.113.10
A_B=203.0.113.11
A_BLOCKED=203.0.113.20
A_GIT=203.0.113.22
A_FOURTH=203.0.113.44
A_TR=203.0.113.50
A_TR_AUDIT=203.0.113.51
V6_DENIED=2001:db8:2::5
V6_AUDIT=2001:db8:2::6
UDP_AUDIT=198.51.100.60
WEBLOG=$W/web.log
DNSLOG=$W/dns-inet.log
SYNCN=0

# ------------------------------------------------------------------ setup

audit_setup() {
	local i n
	e2e_base_setup || return 1
	printf 'nameserver %s\noptions timeout:2 attempts:1\n' "$RESOLV_NS" >"$W/resolv.conf"
	chmod 0644 "$W/resolv.conf"
	# never over the host's own file: only in the namespace unshare made
	if ! e2e_private_mntns; then
		echo "not in a private mount namespace: resolv.conf left alone"
		return 1
	fi
	mount --bind "$W/resolv.conf" /etc/resolv.conf || { echo "cannot bind-mount resolv.conf"; return 1; }
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$W/tls.key" -out "$W/tls.crt" -subj /CN=a.example.test \
		-addext "subjectAltName=DNS:*.example.test,DNS:git.other.test,DNS:fourth.third.test,DNS:blocked.test" \
		>"$W/openssl.out" 2>&1 || { echo "openssl: $(tail -3 "$W/openssl.out")"; return 1; }
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dns-inet.pid" \
		--no-resolv --no-hosts --no-poll --bind-interfaces --listen-address="$INET_DNS" --port=53 \
		--local=/test/ --no-negcache --cache-size=0 --log-queries --log-facility="$DNSLOG" \
		--host-record=a.example.test,$A_A --host-record=b.example.test,$A_B \
		--host-record=git.other.test,$A_GIT --host-record=fourth.third.test,$A_FOURTH \
		--host-record=blocked.test,$A_BLOCKED --host-record=ctl.test,203.0.113.99 \
		>"$W/dns-inet.out" 2>&1 &
	PIDS+=($!)
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$WEBLOG" --bind 0.0.0.0,:: \
		--http 80 --tls 443 --banner 22 --cert "$W/tls.crt" --key "$W/tls.key" \
		--idle "${WEB_IDLE:-15}" >"$W/web.ready" 2>"$W/web.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/web.ready" 2>/dev/null && break
		sleep 0.05
	done
	grep -q READY "$W/web.ready" || { echo "webservers failed: $(cat "$W/web.err")"; return 1; }
	sensor_start || return 1
	for i in $(seq 40); do
		n=$(in_sbx dig +short +time=1 +tries=1 @"$INET_DNS" ctl.test A 2>/dev/null)
		[ "$n" = 203.0.113.99 ] && break
		sleep 0.1
	done
	[ "$n" = 203.0.113.99 ] || { echo "dnsmasq: ctl.test gave '$n': $(cat "$W/dns-inet.out")"; return 1; }
	# what confined scripts source: every client says its pid, so the
	# summary's COMM[PID] and the log's pid can be checked against it
	cat >"$W/prelude.sh" <<EOF
PY=$PY
C=$C
RW=$RW
W=$W
A_TR=$A_TR
A_TR_AUDIT=$A_TR_AUDIT
V6_DENIED=$V6_DENIED
V6_AUDIT=$V6_AUDIT
UDP_AUDIT=$UDP_AUDIT
RESOLV_NS=$RESOLV_NS
# xp KEY CMD...: CMD runs with the pid announced first ("PID KEY <pid>"),
# its stdout and stderr in \$RW/KEY.out and .err, then "RC KEY <status>"
xp() {
	k=\$1; shift
	sh -c 'echo "PID \$0 \$\$" >&3; exec "\$@" 3>&-' "\$k" "\$@" 3>&1 >"\$RW/\$k.out" 2>"\$RW/\$k.err"
	echo "RC \$k \$?"
}
# cu KEY CURLARGS...: curl under xp; "CODE KEY <http code>", body in \$RW/KEY.body
cu() {
	k=\$1; shift
	xp "\$k" curl -sS --max-time 10 -o "\$RW/\$k.body" -w '%{http_code}' "\$@"
	echo "CODE \$k \$(cat "\$RW/\$k.out")"
}
# (result lines go through printf: dash's echo expands the backslashes of JSON)
# pr KEY PROBEARGS...: one probe.py JSON line as "PR KEY <json>"
pr() { k=\$1; shift; printf 'PR %s %s\\n' "\$k" "\$(\$PY \$C/probe.py --timeout 6 "\$@")"; }
# pc KEY PCLIENTARGS...: one pclient.py JSON line as "PR KEY <json>"
pc() { k=\$1; shift; printf 'PR %s %s\\n' "\$k" "\$(\$PY \$C/pclient.py --timeout 5 "\$@")"; }
# burst KEY N URL: burst.py through the HTTP proxy, as "PR KEY <json>"
burst() { k=\$1; shift; printf 'PR %s %s\\n' "\$k" "\$(\$PY \$C/burst.py --tag "\$k" "\$@")"; }
# udpsend KEY ADDR PORT: one datagram, "PR KEY {ok, pid}"
udpsend() {
	k=\$1
	printf 'PR %s %s\\n' "\$k" "\$(\$PY -c 'import json, os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"audit-udp", (sys.argv[1], int(sys.argv[2]))); r = {"ok": True}
except OSError as e:
    r = {"ok": False, "errno": str(e)}
r["pid"] = os.getpid(); print(json.dumps(r))' "\$2" "\$3")"
}
# await FILE: wait (up to 30 s) until the suite creates FILE
await() { i=0; while [ ! -e "\$1" ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done; }
EOF
	chmod 0644 "$W/prelude.sh"
}

# ------------------------------------------------------------- helpers

# arun TAG EGRESSCTL-RUN-ARGS... -- CMD...: egressctl run, confined as
# nobody, resolving at the suite's dnsmasq (never the host's resolvers)
arun() {
	local tag=$1
	shift
	egr "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" "$@"
}


# val TAG KIND KEY: the rest of the first "KIND KEY ..." line of TAG's output
val() { sed -nE "s/^$2 $(re "$3") //p" "$W/$1.out" 2>/dev/null | head -1; }

# pjv TAG KEY: jv the JSON of "PR KEY {...}" in TAG's output
pjv() {
	local line
	line=$(val "$1" PR "$2")
	if [ -z "$line" ]; then
		jv '{"ok": false, "errno": "NOJSON"}'
		P_json="no result line for $2 (egressctl rc=$EGR_RC, stderr: $(head -c 300 "$W/$1.err" | tr '\n' '|'))"
		return 1
	fi
	jv "$line"
}

# a_code NAME TAG KEY ERE: curl's HTTP code for KEY matches ERE
a_code() {
	local c
	c=$(val "$2" CODE "$3")
	if [[ $c =~ ^($4)$ ]]; then ok "$1"; else
		fail "$1" "curl $3: HTTP code '${c:-none}', want /$4/ (curl stderr: $(head -c 200 "$RW/$3.err" 2>/dev/null | tr '\n' '|'); egressctl rc=$EGR_RC, stderr: $(head -c 300 "$W/$2.err" | tr '\n' '|'))"
	fi
}

a_val() {	# a_val NAME WHAT GOT ERE
	if [[ $3 =~ ^($4)$ ]]; then ok "$1"; else fail "$1" "$2: got '$3', want /$4/"; fi
}

# dns_sync: a query for a fresh name straight to dnsmasq, waited for in its
# log: every query that reached dnsmasq before is logged by then
dns_sync() {
	local n
	SYNCN=$((SYNCN + 1))
	n=sync$SYNCN.ctl.test
	in_sbx dig +time=2 +tries=1 @"$INET_DNS" "$n" A >/dev/null 2>&1
	wait_for 3 grep -q "query\\[A\\] $(re "$n") from" "$DNSLOG"
}

# a_never_asked NAME ERE: dnsmasq never saw a query matching ERE
a_never_asked() {
	dns_sync
	if ! grep -Eiq -- "$2" "$DNSLOG" 2>/dev/null; then ok "$1"; else
		fail "$1" "dnsmasq saw: $(grep -Ei -- "$2" "$DNSLOG" | head -2 | tr '\n' '|')"
	fi
}

# a_before NAME FILE ERE1 ERE2: the first line matching ERE1 comes before
# the first line matching ERE2 (both present)
a_before() {
	local l1 l2
	l1=$(grep -nE -- "$3" "$2" | head -1 | cut -d: -f1)
	l2=$(grep -nE -- "$4" "$2" | head -1 | cut -d: -f1)
	if [ -n "$l1" ] && [ -n "$l2" ] && [ "$l1" -lt "$l2" ]; then ok "$1"; else
		fail "$1" "want /$3/ (line ${l1:-none}) before /$4/ (line ${l2:-none}) in $(basename "$2")"
	fi
}

# a_jlog_fields NAME FILE: every line of the decision log is one JSON object
# with time, schema (2), run_id, hostname, decision, reason, source, pid,
# comm, cgroup (pid and comm may lack only in the catch-all's records:
# packets have no task; ci only when the environment names a CI job); no
# other keys than the documented ones; decision and source from the
# documented sets
a_jlog_fields() {
	local r
	r=$("$PY" - "$2" <<'EOF'
import json, sys
need = ("time", "schema", "run_id", "hostname", "decision", "reason", "source", "pid", "comm", "cgroup")
known = set(need) | {"host", "port", "ip", "method", "rule", "ci"}
n = 0
try:
    f = open(sys.argv[1])
except OSError as e:
    print("cannot read the log: %s" % e); sys.exit()
for i, ln in enumerate(f):
    n += 1
    try:
        d = json.loads(ln)
    except ValueError:
        print("line %d is not JSON: %r" % (i + 1, ln[:200])); sys.exit()
    taskless = d.get("source") == "bpf" and d.get("reason") == "dropped by the catch-all"
    miss = [k for k in need if k not in d and not (taskless and k in ("pid", "comm"))]
    extra = sorted(set(d) - known)
    if miss or extra or d.get("schema") != 2 or d.get("decision") not in ("allow", "deny", "would-deny", "redirect") or \
            d.get("source") not in ("bpf", "http", "connect", "socks5", "transparent", "dns"):
        print("line %d: missing %s, unknown %s, or bad decision/source: %s" % (i + 1, miss, extra, ln.strip()[:300]))
        sys.exit()
print("ok" if n else "empty log")
EOF
)
	if [ "$r" = ok ]; then ok "$1"; else fail "$1" "$r"; fi
}

# jcount FILE KEY=ERE...: how many JSON lines of FILE match every KEY=ERE
jcount() {
	"$PY" - "$@" <<'EOF'
import json, re, sys
path, conds = sys.argv[1], [c.split("=", 1) for c in sys.argv[2:]]
def s(v):
    return v if isinstance(v, str) else json.dumps(v)
n = 0
try:
    for ln in open(path):
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if all(k in d and re.fullmatch(v, s(d[k])) for k, v in conds):
            n += 1
except OSError:
    pass
print(n)
EOF
}
