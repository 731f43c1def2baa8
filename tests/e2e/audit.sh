#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of what egressctl tells about a run: the exit summary,
# denial lines (and their rate limit), the JSON decision log (and its
# non-blocking writer, and a full disk under it), --audit, --suggest-policy,
# and `egressctl status`. The --ask tests, on the same network: ask.sh.
# Each test asserts the client's result AND the world's (the servers' logs,
# the upstream resolver's query log, the leak sensor).
#
#   tests/e2e/audit.sh build/egressctl        (as root; make e2e does this)
#   E2E_TESTS="summary status" ...   run only these test functions
#   E2E_KEEP=1 ...                   keep /tmp/egr-e2e-PID (logs, pcap)
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion ("# ..." lines are
# notes), and as the last line "N passed, M failed".  Exit 1 if any failed,
# 77 if not root or no cgroup2.
#
# The test network: lib.sh's, drawn in docs/testing.md (nothing ever
# leaves the machine); set up by audit_net.sh. In the sandbox host's
# namespace: egressctl with its proxy and DNS responder, outside the
# cgroup, always --dns-upstream 198.18.0.1; the confined commands as
# nobody, their /etc/resolv.conf naming 198.51.100.53, where nothing
# serves DNS (the suite runs in a private mount namespace with that file
# bind-mounted): their DNS reaches egressctl's responder or nothing. In
# the "internet" (AnyIP for 198.51.100.0/24, 203.0.113.0/24,
# 2001:db8:2::/64): dnsmasq on 198.18.0.1:53 (names below, --log-queries:
# what arrived); webservers.py on 0.0.0.0 and [::]: HTTP :80, TLS :443
# (self-signed, made by this run), banner+echo :22. The leak sensor
# listens on the internet's veth.
#
# Names (dnsmasq; .test is local, unknown .test names are NXDOMAIN):
#   a.example.test 203.0.113.10   b.example.test 203.0.113.11
#   git.other.test 203.0.113.22   fourth.third.test 203.0.113.44
#   blocked.test   203.0.113.20 (never allowed)
# Addresses without a name: 203.0.113.50 (transparent, denied), .51
# (transparent, audit), 2001:db8:2::5 (IPv6, denied), 2001:db8:2::6 (IPv6,
# audit), 198.51.100.60 (UDP, audit), 198.51.100.53 (the resolver nothing
# serves).  Everything a test expects to be left alone is checked at the
# sensor.

set -u
. "$(dirname "$0")/lib.sh"
# A private mount namespace: the confined commands' /etc/resolv.conf names
# a test address, bind-mounted over the host's file for this run only.
e2e_reexec --mntns "$@"
. "$(dirname "$0")/audit_net.sh"

# ======================================================================
# 1. the exit summary, denial lines and decision records of one run:
#    proxy allowed and denied, transparent denied, IPv6, a refused name
# ======================================================================
test_summary() {
	local t=summary cg p_ok p_den p_tr p_v6 p_dns
	local base
	base=$(sensor_now "dst host $A_TR or dst host $V6_DENIED or dst host $RESOLV_NS or dst host $A_BLOCKED")
	script "$t" <<'EOF'
cu summary.ok http://a.example.test/summary.ok
cu summary.denied http://blocked.test/summary.denied
cu summary.tr --noproxy '*' http://$A_TR/summary.tr
pr summary.v6 tcp6 $V6_DENIED 443
pr summary.dns dns_udp $RESOLV_NS secret.denied.test
EOF
	# --no-kernel-verify: curl asks the proxy for a.example.test too (not in
	# NO_PROXY), so each row has one source
	arun "$t" --log "$W/$t.jlog" --allow a.example.test --no-kernel-verify -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	cg=$(cgid "$t")
	p_ok=$(val "$t" PID "$t.ok")
	p_den=$(val "$t" PID "$t.denied")
	p_tr=$(val "$t" PID "$t.tr")
	pjv "$t" "$t.v6"
	p_v6=$P_pid
	a_denied "$t.v6.client_denied"
	pjv "$t" "$t.dns"
	p_dns=$P_pid
	a_val "$t.dns.client_refused" "probe dns_udp secret.denied.test errno" "$P_errno" "RCODE5"
	a_code "$t.allowed.curl" "$t" "$t.ok" 200
	a_grep "$t.allowed.server_saw" "$WEBLOG" "^HTTP local=$(re "$A_A"):80 .* target=(http://a\\.example\\.test)?/$t\\.ok "
	a_code "$t.denied.curl" "$t" "$t.denied" 403
	a_code "$t.transparent.curl" "$t" "$t.tr" "403|000"
	a_nogrep "$t.denied.servers_saw_nothing" "$WEBLOG" "blocked\\.test|$(re "$A_TR")|$t\\.(denied|tr)"
	a_never_asked "$t.dns.upstream_never_asked" "secret\\.denied\\.test"
	sensor_none_since "$t.sensor" "$base" "dst host $A_TR or dst host $V6_DENIED or dst host $RESOLV_NS or dst host $A_BLOCKED"

	# the summary (stderr): header, denied rows first, then allowed
	local e=$W/$t.err
	a_grep "$t.summary.header" "$e" "^egressctl: summary: 1 allowed, 4 denied, 5 destinations\$"
	a_grep "$t.summary.proxy_row" "$e" \
		"^  denied +1  blocked\\.test:80 +curl\\[${p_den:-none}\\]  --allow blocked\\.test\$"
	a_grep "$t.summary.transparent_row" "$e" \
		"^  denied +1  $(re "$A_TR"):80 +curl\\[${p_tr:-none}\\]  --allow $(re "$A_TR")(/32)?(:80)?\$"
	a_grep "$t.summary.ipv6_row" "$e" \
		"^  denied +1  \\[$(re "$V6_DENIED")\\]:443 +python3\\[${p_v6:-none}\\]  \\(ipv6 denied\\)\$"
	a_grep "$t.summary.dns_row" "$e" \
		"^  denied +1  secret\\.denied\\.test(:53)? +python3\\[${p_dns:-none}\\]  --allow secret\\.denied\\.test\$"
	a_grep "$t.summary.allowed_row" "$e" "^  allowed +1  a\\.example\\.test:80\$"
	a_before "$t.summary.denied_rows_first" "$e" "^  denied " "^  allowed "
	a_nogrep "$t.summary.no_row_for_redirects" "$e" "^  (denied|allowed) .*(to the transparent proxy|to the DNS responder)"

	# denial lines as they happened
	a_grep "$t.line.proxy" "$e" \
		"^egressctl: denied curl\\[${p_den:-none}\\] → blocked\\.test:80 \\(.+, http\\)\$"
	a_grep "$t.line.transparent" "$e" \
		"^egressctl: denied curl\\[${p_tr:-none}\\] → $(re "$A_TR"):80 \\(.+, transparent\\)\$"
	a_grep "$t.line.kernel_ipv6" "$e" \
		"^egressctl: denied python3\\[${p_v6:-none}\\] → \\[$(re "$V6_DENIED")\\]:443 \\(ipv6 denied\\)\$"
	a_grep "$t.line.dns" "$e" \
		"^egressctl: denied python3\\[${p_dns:-none}\\] → secret\\.denied\\.test(:53)? \\(.+, dns\\)\$"
	a_nogrep "$t.line.no_line_for_allowed" "$e" "^egressctl: (denied|would deny) curl\\[${p_ok:-none}\\]"

	# the decision log
	local j=$W/$t.jlog
	a_jlog_fields "$t.log.fields" "$j"
	a_jlog "$t.log.kernel_ipv6" "$j" decision=deny source=bpf "reason=ipv6 denied" \
		"ip=$(re "$V6_DENIED")" port=443 "pid=${p_v6:-none}" comm=python3 "cgroup=${cg:-none}"
	a_jlog "$t.log.proxy_allow" "$j" decision=allow source=http host=a.example.test port=80 \
		method=GET "pid=${p_ok:-none}" comm=curl "cgroup=${cg:-none}" 'rule=a\.example\.test'
	a_jlog "$t.log.proxy_deny" "$j" decision=deny source=http host=blocked.test port=80 \
		"reason=.+" "pid=${p_den:-none}" comm=curl "cgroup=${cg:-none}"
	a_jlog "$t.log.transparent_deny" "$j" decision=deny source=transparent "ip=$(re "$A_TR")" \
		port=80 "pid=${p_tr:-none}" comm=curl "cgroup=${cg:-none}"
	a_jlog "$t.log.dns_deny" "$j" decision=deny source=dns host=secret.denied.test \
		"reason=.+" "pid=${p_dns:-none}" comm=python3 "cgroup=${cg:-none}"
	a_jlog "$t.log.kernel_redirect" "$j" decision=redirect source=bpf "ip=$(re "$A_TR")" port=80 \
		"pid=${p_tr:-none}" comm=curl
	a_nogrep "$t.log.no_paths" "$j" "$t\\.(ok|denied|tr)"
}

# ======================================================================
# 2. --audit: a denied host is reached, everything is logged would-deny
# ======================================================================
test_audit() {
	local t=audit p_http p_tls p_tr p_v6 p_udp p_dns
	script "$t" <<'EOF'
cu audit.http http://b.example.test/audit.http
cu audit.tls -k https://b.example.test/audit.tls
cu audit.tr --noproxy '*' http://$A_TR_AUDIT/audit.tr
pr audit.v6 tcp6 $V6_AUDIT 22
udpsend audit.udp $UDP_AUDIT 9
pr audit.dns dns_udp $RESOLV_NS b.example.test
EOF
	arun "$t" --audit --log "$W/$t.jlog" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	p_http=$(val "$t" PID "$t.http")
	p_tls=$(val "$t" PID "$t.tls")
	p_tr=$(val "$t" PID "$t.tr")
	a_code "$t.http.curl_200" "$t" "$t.http" 200
	a_grep "$t.http.body" "$RW/$t.http.body" "^hello GET (http://b\\.example\\.test)?/$t\\.http via $(re "$A_B"):80\$"
	a_grep "$t.http.server_saw" "$WEBLOG" "^HTTP local=$(re "$A_B"):80 .* target=(http://b\\.example\\.test)?/$t\\.http "
	a_code "$t.tls.curl_200" "$t" "$t.tls" 200
	a_grep "$t.tls.server_saw" "$WEBLOG" "^HTTPS local=$(re "$A_B"):443 .* target=/$t\\.tls "
	a_code "$t.transparent.curl_200" "$t" "$t.tr" 200
	a_grep "$t.transparent.server_saw" "$WEBLOG" "^HTTP local=$(re "$A_TR_AUDIT"):80 .* target=/$t\\.tr "
	pjv "$t" "$t.v6"
	p_v6=$P_pid
	a_ok "$t.ipv6.connects"
	a_val "$t.ipv6.banner" "data from [$V6_AUDIT]:22" "$P_data" "SSH-2\\.0-egr-22.*"
	a_grep "$t.ipv6.server_saw" "$WEBLOG" "^ACCEPT banner local=\\[$(re "$V6_AUDIT")\\]:22 "
	pjv "$t" "$t.udp"
	p_udp=$P_pid
	a_ok "$t.udp.sent"
	sensor_saw "$t.udp.sensor_saw" "udp and dst host $UDP_AUDIT and dst port 9"
	pjv "$t" "$t.dns"
	p_dns=$P_pid
	a_val "$t.dns.answered" "answer for b.example.test (ok/errno/data)" "$P_ok/$P_errno/$P_data" "true//$(re "$A_B")"

	local j=$W/$t.jlog e=$W/$t.err
	a_jlog_fields "$t.log.fields" "$j"
	a_jlog "$t.log.http" "$j" decision=would-deny source=http host=b.example.test port=80 \
		"pid=${p_http:-none}" comm=curl
	a_jlog "$t.log.connect" "$j" decision=would-deny source=connect host=b.example.test port=443 \
		"pid=${p_tls:-none}" comm=curl
	a_jlog "$t.log.transparent" "$j" decision=would-deny source=transparent "ip=$(re "$A_TR_AUDIT")" \
		port=80 "pid=${p_tr:-none}" comm=curl
	a_jlog "$t.log.kernel_ipv6" "$j" decision=would-deny source=bpf "ip=$(re "$V6_AUDIT")" port=22 \
		"pid=${p_v6:-none}" comm=python3
	a_jlog "$t.log.kernel_udp" "$j" decision=would-deny source=bpf "ip=$(re "$UDP_AUDIT")" port=9 \
		"pid=${p_udp:-none}" comm=python3
	a_jlog "$t.log.dns" "$j" decision=would-deny source=dns host=b.example.test \
		"pid=${p_dns:-none}" comm=python3
	a_jlog_none "$t.log.no_deny" "$j" decision=deny
	# each attempt once: the catch-all must not report again what a socket
	# hook already recorded and let through
	a_jlog_none "$t.log.no_catchall_duplicates" "$j" decision=would-deny source=bpf "reason=dropped by the catch-all"
	a_grep "$t.summary.header" "$e" "^egressctl: summary: [0-9]+ allowed, [1-9][0-9]* would deny, [0-9]+ destinations\$"
	# one row per destination: python3's lookup of b.example.test is noted
	# on the row of curl's connection to it, not a row of its own
	a_grep "$t.summary.row" "$e" \
		"^  would deny +1  b\\.example\\.test:80 \\(dns: would deny\\) +curl\\[${p_http:-none}\\], python3\\[${p_dns:-none}\\]  --allow b\\.example\\.test\$"
	a_nogrep "$t.summary.no_dns_row" "$e" "^  would deny +[0-9]+  b\\.example\\.test +"
	a_grep "$t.summary.ipv6_row" "$e" \
		"^  would deny +1  \\[$(re "$V6_AUDIT")\\]:22 +python3\\[${p_v6:-none}\\]  \\(ipv6 denied\\)\$"
	a_nogrep "$t.summary.no_denied_rows" "$e" "^  denied "
	a_nogrep "$t.summary.no_taskless_rows" "$e" "^  would deny .*(\\[0\\]|:0 )"
	a_grep "$t.summary.counts_attempts" "$e" "^egressctl: summary: 0 allowed, 5 would deny, 5 destinations\$"
	a_grep "$t.line.would_deny" "$e" \
		"^egressctl: would deny curl\\[${p_http:-none}\\] → b\\.example\\.test:80 \\(.+, http\\)\$"
	a_nogrep "$t.line.nothing_denied" "$e" "^egressctl: denied "
}

# ======================================================================
# 3. --suggest-policy from an audit run, then enforce it
# ======================================================================
test_suggest() {
	local t=suggest p=$W/suggest.policy.json r base
	# two names of example.test (CONNECT and plain HTTP through the proxy),
	# and plain TCP to git.other.test:22 by name (resolv.conf -> responder
	# -> the transparent path or the fast path)
	script "$t" <<'EOF'
cu suggest.a -k https://a.example.test/suggest.a
cu suggest.b http://b.example.test/suggest.b
pc suggest.git tcp git.other.test 22 --send 'hello-git\n' --until hello-git
EOF
	script "${t}_fourth" <<'EOF'
cu suggest.fourth http://fourth.third.test/suggest.fourth
EOF
	# the audit runs also look up a name shaped like data sent out in DNS
	script "${t}_exfil" <<'EOF'
pr suggest.exfil dns_udp $RESOLV_NS mfrggzdfmztwq2lknnwg23tp.example.test
EOF
	# two audit runs into one file: the second merges with the first
	local run
	for run in 1 2; do
		arun "${t}_audit$run" --audit --suggest-policy "$p" --log "$W/${t}_audit$run.jlog" -- \
			/bin/sh -c ". $W/$t.sh; . $W/${t}_exfil.sh"
		a_rc "$t.audit$run.exit" 0 "${t}_audit$run"
		a_code "$t.audit$run.a_200" "${t}_audit$run" "$t.a" 200
		a_code "$t.audit$run.b_200" "${t}_audit$run" "$t.b" 200
		pjv "${t}_audit$run" "$t.git"
		a_val "$t.audit$run.git_banner_echo" "data from git.other.test:22" "$P_data" "SSH-2\\.0-egr-22"$'\r\n'"hello-git"$'\n'
		a_grep "$t.audit$run.said_written" "$W/${t}_audit$run.err" "suggested policy written to $(re "$p")"
		r=$("$PY" - "$p" "$W/$t.rules$run" "$W/$t.review$run" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("unreadable: %s" % e); sys.exit()
if not isinstance(d, dict) or d.get("version") != 1 or not isinstance(d.get("allow"), list):
    print("not {version: 1, allow: [...]}: %s" % json.dumps(d)[:300]); sys.exit()
obs = d.get("observed") or {}
with open(sys.argv[2], "w") as f:
    for r in d["allow"]:
        f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
with open(sys.argv[3], "w") as f:
    for r, why in sorted((obs.get("review") or {}).items()):
        f.write("%s %s\n" % (r, ",".join(why)))
    for r, e in sorted((obs.get("rules") or {}).items()):
        f.write("rule %s count=%s runs=%s first=%s last=%s\n" % (r, e.get("count"), e.get("runs"),
                e.get("first_seen"), e.get("last_seen")))
print("ok")
EOF
)
		note "$t: suggested policy after run $run: $(tr -s '\n ' '  ' <"$p" 2>/dev/null | head -c 1500)"
		a_val "$t.policy$run.schema" "suggested policy" "$r" ok
	done
	# run 1: every name was used once: marked for review, none allowed
	a_nogrep "$t.policy1.nothing_allowed" "$W/$t.rules1" '.'
	a_grep "$t.policy1.review_seen_once" "$W/$t.review1" '^a\.example\.test seen once$'
	a_grep "$t.policy1.review_tcp" "$W/$t.review1" '^tcp://git\.other\.test:22 seen once$'
	# run 2: merged (counts summed, first and last seen kept): allowed now
	a_grep "$t.policy2.merged_counts" "$W/$t.review2" \
		'^rule a\.example\.test count=2 runs=2 first=20[0-9-]+T[0-9:.]+Z last=20[0-9-]+T[0-9:.]+Z$'
	a_grep "$t.policy2.names" "$W/$t.rules2" '^a\.example\.test$'
	a_grep "$t.policy2.names_b" "$W/$t.rules2" '^b\.example\.test$'
	a_grep "$t.policy2.tcp_rule" "$W/$t.rules2" '^tcp://git\.other\.test:22$'
	# two names of example.test: below the threshold (3) of "**.example.test"
	a_nogrep "$t.policy2.not_widened" "$W/$t.rules2" '^\*\*\.'
	a_nogrep "$t.policy2.no_addresses" "$W/$t.rules2" '^(\[|[0-9.]+(/|:|$))'
	# a name only looked up, whose connection has a rule: no rule of its own
	a_nogrep "$t.policy2.no_dns_only_rule" "$W/$t.rules2" '^git\.other\.test$'
	# the exfiltration-shaped name: never allowed, however often seen
	a_nogrep "$t.policy2.exfil_not_allowed" "$W/$t.rules2" 'mfrggzdfmztwq2lknnwg23tp'
	a_grep "$t.policy2.exfil_review" "$W/$t.review2" '^mfrggzdfmztwq2lknnwg23tp\.example\.test high-entropy label$'
	# audit mode forwards every query, this one too (the README warns)
	dns_sync
	a_grep "$t.audit.exfil_forwarded" "$DNSLOG" 'query\[A\] mfrggzdfmztwq2lknnwg23tp\.example\.test from'
	if [ ! -s "$p" ]; then
		fail "$t.enforce" "no suggested policy to enforce"
		return 0
	fi
	chmod 0644 "$p"

	# the same script, enforced: nothing denied
	arun "${t}_enforce" --policy "$p" --log "$W/${t}_enforce.jlog" -- /bin/sh "$W/$t.sh"
	a_rc "$t.enforce.exit" 0 "${t}_enforce"
	a_code "$t.enforce.a_200" "${t}_enforce" "$t.a" 200
	a_code "$t.enforce.b_200" "${t}_enforce" "$t.b" 200
	pjv "${t}_enforce" "$t.git"
	a_val "$t.enforce.git_banner_echo" "data from git.other.test:22" "$P_data" "SSH-2\\.0-egr-22"$'\r\n'"hello-git"$'\n'
	a_grep "$t.enforce.summary_zero_denied" "$W/${t}_enforce.err" "^egressctl: summary: [1-9][0-9]* allowed, 0 denied, "
	a_nogrep "$t.enforce.no_denied_rows" "$W/${t}_enforce.err" "^  denied "
	a_nogrep "$t.enforce.no_denial_lines" "$W/${t}_enforce.err" "^egressctl: denied "
	a_jlog_none "$t.enforce.no_deny_records" "$W/${t}_enforce.jlog" "decision=deny|would-deny"
	a_jlog "$t.enforce.log_has_allows" "$W/${t}_enforce.jlog" decision=allow 'host=(a|b)\.example\.test' 'rule=(a|b)\.example\.test'

	# a fourth name the audit run never used: denied under the policy
	base=$(sensor_now "dst host $A_FOURTH")
	arun "${t}_fourth" --policy "$p" --log "$W/${t}_fourth.jlog" -- /bin/sh "$W/${t}_fourth.sh"
	a_rc "$t.fourth.exit" 0 "${t}_fourth"
	a_code "$t.fourth.curl_403" "${t}_fourth" "$t.fourth" 403
	a_grep "$t.fourth.summary_row" "$W/${t}_fourth.err" \
		"^  denied +1  fourth\\.third\\.test:80 +curl\\[$(val "${t}_fourth" PID "$t.fourth")\\]  --allow fourth\\.third\\.test\$"
	a_jlog "$t.fourth.log" "$W/${t}_fourth.jlog" decision=deny source=http host=fourth.third.test port=80 comm=curl
	a_nogrep "$t.fourth.server_saw_nothing" "$WEBLOG" "fourth\\.third\\.test|$(re "$A_FOURTH")"
	sensor_none_since "$t.fourth.sensor" "$base" "dst host $A_FOURTH"
}

# ======================================================================
# 4. egressctl status while a run is alive, and after it ended
# ======================================================================
test_status() {
	local t=status cgdir r i
	script "$t" <<'EOF'
cu status.ok http://a.example.test/status.ok
cu status.denied http://blocked.test/status.denied
cu status.tr --noproxy '*' http://a.example.test/status.tr
pr status.v6 tcp6 $V6_DENIED 80
pc status.git tcp git.other.test 22 --until egr-22
touch $RW/status.ready
await $W/status.go
EOF
	cgdir=$(cg_path "$t")
	egr_bg "$t" --cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" --log "$W/$t.jlog" \
		--allow a.example.test --allow tcp://git.other.test:22 -- /bin/sh "$W/$t.sh"
	if ! egr_wait_pins "$cgdir" || ! wait_for 20 test -e "$RW/$t.ready"; then
		fail "$t.setup" "the run did not come up or its traffic did not finish (cgroup id ${CGID:-none}, stderr: $(head -c 400 "$W/$t.err" | tr '\n' '|'))"
		touch "$W/$t.go"
		egr_join 10
		return 0
	fi
	in_sbx timeout 10 "$EGRESSCTL" status >"$W/$t.text" 2>"$W/$t.text.err"
	a_val "$t.text.exit" "egressctl status exit" "$?" 0
	in_sbx timeout 10 "$EGRESSCTL" status -j >"$W/$t.json" 2>"$W/$t.json.err"
	a_val "$t.json.exit" "egressctl status -j exit" "$?" 0
	# our cgroup's block of the text output
	awk -v h="cgroup $cgdir (id $CGID)" '$0 == h { on = 1; print; next } /^cgroup / { on = 0 } on' \
		"$W/$t.text" >"$W/$t.block"
	a_grep "$t.text.cgroup" "$W/$t.block" "^cgroup $(re "$cgdir") \\(id $CGID\\)\$"
	a_grep "$t.text.run_pid_command" "$W/$t.block" "^  run: +egressctl\\[$EGR_PID\\] -- /bin/sh $(re "$W/$t.sh")\$"
	a_grep "$t.text.policy" "$W/$t.block" "^  policy: +2 rules"
	a_grep "$t.text.proxy_counters" "$W/$t.block" "^  proxy: +[1-9][0-9]* allowed, [1-9][0-9]* denied, [0-9]+ unattributed"
	a_grep "$t.text.dns_counters" "$W/$t.block" "^  dns: +[1-9][0-9]* queries"
	a_grep "$t.text.kernel_counters" "$W/$t.block" "^  kernel: +[1-9][0-9]* redirected, [1-9][0-9]* denied, [1-9][0-9]* fast-path, [0-9]+ loopback"
	a_grep "$t.text.programs" "$W/$t.block" "^  programs: +[1-9][0-9]* attached"
	r=$("$PY" - "$W/$t.json" "$CGID" "$EGR_PID" "$cgdir" "$W/$t.sh" <<'EOF'
import json, sys
path, cgid, pid, cgdir, script = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
try:
    doc = json.loads(open(path).read())
except (OSError, ValueError) as e:
    print("not JSON: %s" % e); sys.exit()
if not isinstance(doc, list):
    print("not a JSON array: %s" % type(doc).__name__); sys.exit()
mine = [o for o in doc if isinstance(o, dict) and o.get("cgroup_id") == cgid]
if len(mine) != 1:
    print("%d entries for cgroup id %d among %d" % (len(mine), cgid, len(doc))); sys.exit()
o = mine[0]
bad = []
def need(obj, keys, where):
    for k in keys:
        if not isinstance(obj, dict) or k not in obj:
            bad.append("%s.%s missing" % (where, k))
need(o, ("cgroup_id", "cgroup", "pins", "programs", "kernel", "run"), "entry")
k = o.get("kernel") or {}
need(k, ("redirected", "denied", "would_deny", "fast_path", "loopback_local"), "kernel")
run = o.get("run") or {}
need(run, ("pid", "cgroup_id", "cgroup", "command", "rules", "audit", "proxy", "dns"), "run")
px, dn = run.get("proxy") or {}, run.get("dns") or {}
need(px, ("allowed", "denied", "unattributed"), "run.proxy")
need(dn, ("queries", "refused"), "run.dns")
if bad:
    print("; ".join(bad) + ": " + json.dumps(o)[:500]); sys.exit()
checks = [
    (o["cgroup"] == cgdir, "cgroup %r" % o["cgroup"]),
    (o["programs"] >= 1, "programs %r" % o["programs"]),
    (run["pid"] == pid, "run.pid %r, want %d" % (run["pid"], pid)),
    (script in run["command"], "run.command %r" % run["command"]),
    (run["cgroup_id"] == cgid, "run.cgroup_id %r" % run["cgroup_id"]),
    (run["rules"] == 2, "run.rules %r" % run["rules"]),
    (run["audit"] is False, "run.audit %r" % run["audit"]),
    (px["allowed"] >= 2, "proxy.allowed %r (2 allowed requests)" % px["allowed"]),
    (px["denied"] >= 1, "proxy.denied %r" % px["denied"]),
    (dn["queries"] >= 1, "dns.queries %r" % dn["queries"]),
    (k["denied"] >= 1, "kernel.denied %r (an IPv6 connect)" % k["denied"]),
    (k["redirected"] >= 1, "kernel.redirected %r (a transparent connection)" % k["redirected"]),
    (k["fast_path"] >= 1, "kernel.fast_path %r (tcp://git.other.test:22)" % k["fast_path"]),
]
wrong = [w for okk, w in checks if not okk]
print("ok" if not wrong else "; ".join(wrong) + " | " + json.dumps(o)[:600])
EOF
)
	if [ "$r" = ok ]; then ok "$t.json.entry"; else fail "$t.json.entry" "$r"; fi
	a_code "$t.traffic.allowed" "$t" "$t.ok" 200
	a_code "$t.traffic.transparent" "$t" "$t.tr" 200
	a_code "$t.traffic.denied" "$t" "$t.denied" 403
	touch "$W/$t.go"
	egr_join 20
	a_rc "$t.exit" 0 "$t"
	# after the run: gone from status, text and JSON
	in_sbx timeout 10 "$EGRESSCTL" status >"$W/$t.after.text" 2>&1
	in_sbx timeout 10 "$EGRESSCTL" status -j >"$W/$t.after.json" 2>&1
	a_nogrep "$t.after.text_gone" "$W/$t.after.text" "\\(id $CGID\\)\$|^cgroup $(re "$cgdir") "
	r=$("$PY" -c '
import json, sys
try:
    doc = json.loads(open(sys.argv[1]).read())
except (OSError, ValueError) as e:
    print("not JSON: %s" % e); sys.exit()
print("ok" if not [o for o in doc if o.get("cgroup_id") == int(sys.argv[2])] else "still listed")' \
		"$W/$t.after.json" "$CGID")
	a_val "$t.after.json_gone" "status -j after the run" "$r" ok
	expect "$t.after.socket_gone" "/run/egressctl/$CGID.sock still exists" test ! -e "/run/egressctl/$CGID.sock"
	expect "$t.after.pins_gone" "$PIN_ROOT/$CGID still exists" test ! -e "$PIN_ROOT/$CGID"
}

# ======================================================================
# 5. a log reader that reads nothing slows neither connections nor exit
# ======================================================================
test_backpressure() {
	local t=backpressure n=300 f_secs p_secs lines_file dropped r end exitlag rd
	script "$t" <<'EOF'
exec >$RW/backpressure.$1.out 2>&1 </dev/null
burst backpressure.$1 300 http://a.example.test/bp
EOF
	# the reference: the same requests with the log in a file
	arun "${t}_file" --log "$W/${t}_file.jlog" --allow a.example.test -- /bin/sh "$W/$t.sh" file
	a_rc "$t.file.exit" 0 "${t}_file"
	sed -n 's/^PR [^ ]* //p' "$RW/$t.file.out" >"$W/$t.file.res"
	jv "$(head -1 "$W/$t.file.res")"
	a_val "$t.file.all_200" "codes" "$P_codes" "\\{\"200\": $n\\}"
	f_secs=$P_secs
	lines_file=$(grep -c . "$W/${t}_file.jlog" 2>/dev/null)
	note "$t: $n requests with --log FILE: ${f_secs}s, $lines_file log lines"

	# a reader that shrinks its pipe to one page, then reads nothing until
	# egressctl has exited; then it counts what it got
	cat >"$W/$t.reader.py" <<'EOF'
import fcntl, json, os, sys, time
flag, out, ready = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    fcntl.fcntl(0, 1031, 4096)          # F_SETPIPE_SZ
except OSError:
    pass
size = fcntl.fcntl(0, 1032)             # F_GETPIPE_SZ
open(ready, "w").close()
t0 = time.monotonic()
while not os.path.exists(flag) and time.monotonic() - t0 < 45:
    time.sleep(0.05)
waited = time.monotonic() - t0
lines = good = 0
bad = []
for ln in sys.stdin.buffer:
    lines += 1
    try:
        json.loads(ln)
        good += 1
    except ValueError:
        bad.append(ln[:60].decode("latin-1") + "..." + ln[-40:].decode("latin-1"))
json.dump({"pipe": size, "lines": lines, "good": good, "bad": bad[:3], "waited": round(waited, 2)},
          open(out, "w"))
EOF
	rm -f "$W/$t.exit" "$W/$t.ready"
	(
		wait_for 5 test -e "$W/$t.ready"
		timeout -k 2 60 nsenter --net="$NS_SBX" env --default-signal=INT,QUIT \
			"$EGRESSCTL" run --cgroup "$(cg_name "${t}_pipe")" --user nobody --dns-upstream "$INET_DNS" \
			--log fd:3 --allow a.example.test -- /bin/sh "$W/$t.sh" pipe 3>&1 >/dev/null \
			2>"$W/${t}_pipe.err" </dev/null
		echo "$? $(date +%s.%N)" >"$W/$t.exit.tmp"
		mv "$W/$t.exit.tmp" "$W/$t.exit"
	) | timeout -k 2 70 "$PY" "$W/$t.reader.py" "$W/$t.exit" "$W/$t.reader.json" "$W/$t.ready"
	if [ ! -s "$W/$t.exit" ]; then
		fail "$t.pipe.exit" "egressctl did not finish (stderr: $(head -c 300 "$W/${t}_pipe.err" | tr '\n' '|'))"
		return 0
	fi
	read -r EGR_RC end <"$W/$t.exit"
	a_rc "$t.pipe.exit" 0 "${t}_pipe"
	sed -n 's/^PR [^ ]* //p' "$RW/$t.pipe.out" >"$W/$t.pipe.res"
	jv "$(head -1 "$W/$t.pipe.res")"
	a_val "$t.pipe.all_200" "codes" "$P_codes" "\\{\"200\": $n\\}"
	p_secs=$P_secs
	note "$t: $n requests with --log fd:3 into a reader that reads nothing: ${p_secs}s"
	r=$("$PY" -c 'import sys; f, p = float(sys.argv[1]), float(sys.argv[2]); print("ok" if p < 3 * f + 0.5 else "slow")' \
		"${f_secs:-0}" "${p_secs:-999}")
	a_val "$t.connections_not_slowed" "${p_secs}s with a stuck log reader vs ${f_secs}s with a file (limit 3x + 0.5 s)" "$r" ok
	exitlag=$("$PY" -c 'import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 2))' "${end:-0}" "${P_end:-0}")
	note "$t: egressctl exited ${exitlag}s after CMD's last request"
	r=$("$PY" -c 'import sys; print("ok" if float(sys.argv[1]) < 5 else "late")' "$exitlag")
	a_val "$t.exit_prompt" "egressctl's exit ${exitlag}s after CMD finished (limit 5 s)" "$r" ok
	rd=$(cat "$W/$t.reader.json" 2>/dev/null)
	note "$t: reader: $rd"
	[ -n "$rd" ] || rd='{}'
	jv "$rd"
	dropped=$(sed -nE 's/^egressctl: the log.s reader was too slow: ([0-9]+) lines dropped$/\1/p' "$W/${t}_pipe.err" | tail -1)
	note "$t: summary says ${dropped:-nothing about} dropped lines; the reader got ${P_good:-?} lines of the $lines_file the file run logged"
	a_val "$t.reader_was_stuck" "pipe size / lines the stuck reader got (fewer than the file run's $lines_file)" \
		"${P_pipe:-?}/${P_good:-?}" "4096/[0-9]+"
	if [ -n "${P_good:-}" ] && [ -n "$lines_file" ] && [ "$P_good" -ge "$lines_file" ]; then
		note "$t: the reader got every line: nothing to drop"
	fi
	r=$("$PY" -c '
import sys
got, dropped, want = int(sys.argv[1] or 0), int(sys.argv[2] or 0), int(sys.argv[3] or 0)
print("ok" if want and abs(got + dropped - want) <= 1 else
      "the reader got %d lines, the summary says %d dropped: %d of %d decisions unaccounted for" % (got, dropped, want - got - dropped, want))' \
		"${P_good:-0}" "${dropped:-0}" "${lines_file:-0}")
	a_val "$t.lines_written_or_counted" "lines written + dropped (summary) vs decisions" "$r" ok
	if [ -n "${P_lines:-}" ] && [ "$P_lines" = "${P_good:-}" ]; then ok "$t.lines_whole"; else
		fail "$t.lines_whole" "the reader got ${P_lines:-?} lines, ${P_good:-?} of them whole JSON objects; the others: ${P_bad:-?}"
	fi
}

# ======================================================================
# 6. denial lines are rate-limited; the summary still counts them all
# ======================================================================
test_ratelimit() {
	local t=ratelimit shown more e pid
	script "$t" <<'EOF'
burst ratelimit.burst 100 http://blocked.test/rl
EOF
	arun "$t" --log "$W/$t.jlog" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	pjv "$t" "$t.burst"
	pid=$P_pid
	a_val "$t.all_403" "codes of 100 denied requests" "$P_codes" '\{"403": 100\}'
	e=$W/$t.err
	shown=$(grep -c '^egressctl: denied ' "$e")
	more=$(sed -nE 's/^egressctl: ([0-9]+) more denials not shown \(the summary has them\)$/\1/p' "$e" | awk '{ s += $1 } END { print s + 0 }')
	note "$t: $shown denial lines shown, 'more denials' lines say ${more:-nothing}"
	a_val "$t.lines_limited" "denial lines for 100 quick denials (burst 20)" "$shown" "2[0-9]|30"
	a_grep "$t.more_line" "$e" "^egressctl: [0-9]+ more denials not shown \\(the summary has them\\)\$"
	a_val "$t.shown_plus_more" "lines shown + 'more' counts" "$((shown + ${more:-0}))" 100
	a_grep "$t.summary.header" "$e" "^egressctl: summary: 0 allowed, 100 denied, 1 destinations\$"
	a_grep "$t.summary.row" "$e" "^  denied +100  blocked\\.test:80 +python3\\[${pid:-none}\\]  --allow blocked\\.test\$"
	a_val "$t.log_has_all" "deny records in the log" "$(jcount "$W/$t.jlog" decision=deny host=blocked.test)" 100

	# the limiter itself: a later denial, after tokens came back, says how
	# many were held back before it
	script "${t}_late" <<'EOF'
burst ratelimit.late 100 http://blocked.test/rl
sleep 0.5
burst ratelimit.last 1 http://blocked.test/last
EOF
	arun "${t}_late" --allow a.example.test -- /bin/sh "$W/${t}_late.sh"
	a_rc "$t.late.exit" 0 "${t}_late"
	e=$W/${t}_late.err
	shown=$(grep -c '^egressctl: denied ' "$e")
	more=$(sed -nE 's/^egressctl: ([0-9]+) more denials not shown \(the summary has them\)$/\1/p' "$e" | awk '{ s += $1 } END { print s + 0 }')
	a_grep "$t.late.more_line" "$e" "^egressctl: [0-9]+ more denials not shown \\(the summary has them\\)\$"
	a_val "$t.late.shown_plus_more" "lines shown + 'more' counts" "$((shown + ${more:-0}))" 101
	a_grep "$t.late.summary" "$e" "^egressctl: summary: 0 allowed, 101 denied, 1 destinations\$"
}

# ======================================================================
# 7. a full disk under --log is a write error, not a slow reader
# ======================================================================
# Regression: on ENOSPC the writer stopped logging for the rest of the run
# without a word, and the summary blamed "the log's reader" (was too slow).
# Now: one warning naming the file and ENOSPC, lines counted as lost (apart
# from a slow reader's drops), writing resumes when space is freed (said
# once), and lines wait in memory meanwhile. The log sits on a small tmpfs
# (the suite's private mount namespace) filled to the last page.
logdisk_mount() {	# logdisk_mount DIR: a full 256 KiB tmpfs at DIR
	mkdir -p "$1" && mount -t tmpfs -o size=256k,mode=0755 egr-e2e-logfs "$1" || return 1
	dd if=/dev/zero of="$1/fill" bs=4k >/dev/null 2>&1	# until ENOSPC
	[ "$(df --output=avail -B1 "$1" | tail -1 | tr -d ' ')" = 0 ]
}

# logdisk_run TAG BINARY [ARGS...]: a run whose log is on a full tmpfs;
# CMD: 200 denied requests, then (once the suite has freed the space and
# egressctl said it writes again) 50 allowed ones
logdisk_run() {
	local tag=$1 bin=$2 fs=$W/$1.fs
	shift 2
	if ! logdisk_mount "$fs"; then
		fail "$tag.setup" "cannot mount a full tmpfs at $fs"
		umount "$fs" 2>/dev/null
		return 1
	fi
	script "$tag" <<SCRIPT
burst $tag.a 200 http://blocked.test/full
touch \$RW/$tag.a.done
await $W/$tag.b.go
burst $tag.b 50 http://a.example.test/resumed
SCRIPT
	EGRESSCTL=$bin egr_bg "$tag" --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" \
		--log "$fs/decisions.jsonl" --allow a.example.test "$@" -- /bin/sh "$W/$tag.sh"
	wait_secs 30 test -e "$RW/$tag.a.done"
	wait_secs 5 grep -q "cannot write" "$W/$tag.err"
	cp "$W/$tag.err" "$W/$tag.err.during"
	rm -f "$fs/fill"
	wait_secs 10 grep -q "writing again" "$W/$tag.err"
	touch "$W/$tag.b.go"
	egr_join 60
	LOGDISK_FILE=$fs/decisions.jsonl
}

# whole_json FILE: the number of lines of FILE when each is one whole JSON
# object, else why not
whole_json() {
	"$PY" - "$1" <<'PYEOF'
import json, sys
n = 0
try:
    f = open(sys.argv[1], "rb")
except OSError as e:
    print("cannot read the log: %s" % e); sys.exit()
for i, ln in enumerate(f):
    try:
        json.loads(ln)
        if not ln.endswith(b"\n"):
            raise ValueError("no newline")
    except ValueError as e:
        print("line %d is not a whole JSON line (%s): %r" % (i + 1, e, ln[:120])); sys.exit()
    n += 1
print(n)
PYEOF
}

test_log_disk() {
	local t=logdisk f e n lost total
	test_build "$t" || return 0

	# the test build with an 8 KiB buffer: the outage outlasts it
	logdisk_run "$t" "$EGRT" --test-log-buffer 8192 || return 0
	f=$LOGDISK_FILE e=$W/$t.err
	a_rc "$t.exit" 0 "$t"
	pjv "$t" "$t.a"
	a_val "$t.served_during_fault" "codes of 200 denied requests while the disk was full" "${P_codes:-}" '\{"403": 200\}'
	pjv "$t" "$t.b"
	a_val "$t.served_after" "codes of 50 requests after space was freed" "${P_codes:-}" '\{"200": 50\}'
	a_grep "$t.warning_during_fault" "$W/$t.err.during" \
		"^egressctl: log $(re "$f"): cannot write: No space left on device \\(ENOSPC\\); "
	a_val "$t.warned_once" "'cannot write' lines" "$(grep -c 'cannot write' "$e")" 1
	a_grep "$t.resumed_said" "$e" "^egressctl: log $(re "$f"): writing again after ENOSPC; [0-9]+ lines lost meanwhile\$"
	a_val "$t.resumed_once" "'writing again' lines" "$(grep -c 'writing again' "$e")" 1
	lost=$(grep -E "^egressctl: [0-9]+ log lines lost: write error ENOSPC \\(No space left on device\\) on $(re "$f") \\(writing resumed\\)\$" "$e" | awk '{ print $2 }')
	a_val "$t.summary_lost" "summary: lines lost to ENOSPC (200 lines of ~250 bytes, 8 KiB buffer)" "${lost:-none}" "[1-9][0-9]*"
	a_nogrep "$t.not_a_slow_reader" "$e" "reader was too slow"
	n=$(whole_json "$f")
	a_val "$t.file_whole_lines" "lines in the log" "$n" "[0-9]+"
	a_val "$t.resumed_lines" "allow records for the 50 requests after the fault" \
		"$(jcount "$f" decision=allow source=http host=a.example.test)" 50
	total=$(sed -nE 's/^egressctl: summary: ([0-9]+) allowed, ([0-9]+) denied, .*/\1 \2/p' "$e")
	a_val "$t.decisions" "allowed and denied in the summary" "$total" "50 200"
	if [[ $n =~ ^[0-9]+$ ]] && [[ ${lost:-x} =~ ^[0-9]+$ ]]; then
		a_val "$t.file_plus_lost" "lines in the file + lines lost" "$((n + lost))" 250
	else
		fail "$t.file_plus_lost" "lines in the file '$n', lost '${lost:-none}'"
	fi
	note "$t: 250 decisions, $n in the file, ${lost:-?} lost while the disk was full"
	umount "$W/$t.fs" 2>/dev/null

	# the release binary's 4 MiB buffer holds a short outage: nothing lost
	logdisk_run "${t}_hold" "$EGRESSCTL" || return 0
	f=$LOGDISK_FILE e=$W/${t}_hold.err
	a_rc "$t.hold.exit" 0 "${t}_hold"
	a_val "$t.hold.warned_once" "'cannot write' lines" \
		"$(grep -c "^egressctl: log $(re "$f"): cannot write: No space left on device (ENOSPC)" "$e")" 1
	a_grep "$t.hold.resumed" "$e" "^egressctl: log $(re "$f"): writing again after ENOSPC; 0 lines lost meanwhile\$"
	a_grep "$t.hold.summary" "$e" "^egressctl: no log line lost: writes to $(re "$f") failed \\(ENOSPC\\) and were retried\$"
	n=$(whole_json "$f")
	a_val "$t.hold.all_lines" "lines in the log (every decision, written after the fault)" "$n" 250
	a_val "$t.hold.denials_kept" "deny records of the 200 requests during the fault" \
		"$(jcount "$f" decision=deny source=http host=blocked.test)" 200
	umount "$W/${t}_hold.fs" 2>/dev/null
}

# ======================================================================
# proxy limits: beyond --max-conns new clients are refused cleanly while
# open ones go on; a tunnel silent for --idle-timeout seconds is closed
# ======================================================================
test_limits() {
	local t=limits r
	in_sbx timeout 30 "$EGRESSCTL" run -q --max-conns 2 --cgroup "$(cg_name lim_m)" --user nobody \
		--dns-upstream "$INET_DNS" --allow a.example.test -- "$PY" "$C/limits.py" maxconns \
		a.example.test >"$W/lim_m.out" 2>"$W/lim_m.err"
	r=$(cat "$W/lim_m.out")
	# over the limit, an HTTP client gets 503 (it was a reset)
	a_val "$t.max.third_refused" "third connection" "$r" ".*\"third\": \"b'HTTP/1\\.1 503 Service Unavailable[^\"]*x-proxy-error: overloaded.*"
	a_val "$t.max.first_goes_on" "first tunnel" "$r" ".*\"first\": \"HTTP/1.[01] [0-9]+.*"
	a_val "$t.max.second_goes_on" "second tunnel" "$r" ".*\"second\": \"HTTP/1.[01] [0-9]+.*"
	in_sbx timeout 30 "$EGRESSCTL" run -q --idle-timeout 2 --cgroup "$(cg_name lim_i)" --user nobody \
		--dns-upstream "$INET_DNS" --allow a.example.test -- "$PY" "$C/limits.py" idle \
		a.example.test >"$W/lim_i.out" 2>"$W/lim_i.err"
	a_val "$t.idle.closed" "tunnel after 4 s of silence" "$(cat "$W/lim_i.out")" \
		".*\"after_idle\": \"(closed|error [A-Za-z]+)\".*"
}

# a CI workflow's name in UTF-8 (GitHub's: "Build café 🚀") in the records'
# "ci": kept as UTF-8, as JSON reads it back (before: each byte past ASCII
# a \u00XX of its own, café read cafÃ©), a control in it escaped
test_utf8() {
	local t=utf8 a
	new4 a
	have_egr || return 0
	export GITHUB_ACTIONS=true GITHUB_WORKFLOW=$'Build café 🚀\e[1m'
	arun "$t" --log "$W/$t.jlog" -- "$PY" -c '
import socket, sys
try:
    socket.create_connection((sys.argv[1], 80), timeout=2)
except OSError:
    pass' "$a"
	unset GITHUB_ACTIONS GITHUB_WORKFLOW
	a_rc "$t.exit" 0 "$t"
	a_val "$t.workflow" "the denial record's ci.workflow, as JSON reads it" "$("$PY" -c '
import json, sys
for l in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(l)
    if r.get("ip") == sys.argv[2] and r.get("decision") == "deny":
        print(ascii(r["ci"]["workflow"])); break' "$W/$t.jlog" "$a" 2>&1)" "^'Build caf\\\\xe9 \\\\U0001f680\\\\x1b\\[1m'\$"
	a_grep "$t.raw" "$W/$t.jlog" '"workflow":"Build café 🚀\\u001b\[1m"'
	sensor_none "$t.sensor" "dst host $a"
}

ALL_TESTS="summary audit suggest status backpressure ratelimit log_disk limits utf8"

suite_main audit.sh audit_setup "ip nsenter setpriv unshare mount tcpdump ss curl dig dnsmasq openssl timeout" "$@"
