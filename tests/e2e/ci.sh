#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of egressctl in CI: the GitHub Action (action.yml,
# contrib/ci/) against a simulated runner, the GitLab snippet's script
# against a simulated gitlab-runner, the decision log's sinks (fd:N, a
# file opened anew on SIGUSR1, syslog, OTLP/HTTP, its identity fields),
# --summary FILE, and an egressctl run inside a confined command.
#
#   tests/e2e/ci.sh build/egressctl        (as root; make e2e does this)
#   E2E_TESTS="github logs" ...   run only these test functions
#   E2E_KEEP=1 ...                keep /tmp/egr-e2e-PID
#
# The network, names and servers are audit.sh's (audit_net.sh): dnsmasq on
# 198.18.0.1 (a.example.test 203.0.113.10, blocked.test .20, git.other.test
# .22), HTTP :80 on every address of the test "internet", the leak sensor
# on its veth. The log receivers (clients/logrecv.py) listen on loopback of
# the sandbox host's namespace, or on a unix socket in the work dir.
#
# The simulated GitHub runner: a cgroup egr-e2e-PID-runner holding a
# "Runner.Listener" (a loop of requests of its own) and a "Runner.Worker"
# (bash under that name) with the variables Actions sets; the worker runs
# node on the action's main.js, then a "step" (curl to an allowed and a
# denied host), then node on post.js, as the runner would.
#
# github_runner is that runner as a hosted one is, sudo and docker
# together: a job user made for the run (useradd egrciPID, ghjob.sh as
# cisudo.sh's) with passwordless sudo from /etc/sudoers.d/egr-e2e-PID and
# in the group of a real dockerd's socket (egrcidkPID, dockerd.sh as
# docker.sh's: data, exec root and pid file in the work dir, its bridge
# 198.19.6.0/24 in the sandbox host's namespace, routed by the test
# internet, the image imported from busybox-static). Its socket is where a
# runner's is, /run/docker.sock, on a tmpfs the test mounts over /run in
# this suite's own mount namespace (the host's /run untouched; the test
# namespaces' /run/netns moved onto it), unmounted at the end of the test.
# Its attempts each go to an address of their own, 203.0.113.30-.47. The
# user, its group and sudoers file, dockerd, its containers and the v1
# cgroups runc made for them are removed at the end of the test, and by
# the EXIT trap however the run ends.
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion, and as the last
# line "N passed, M failed".  Exit 1 if any failed, 77 if not root.

set -u
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"
. "$(dirname "$0")/audit_net.sh"
. "$(dirname "$0")/ghjob.sh"   # github_runner's job user and its job (cisudo.sh's)
. "$(dirname "$0")/dockerd.sh" # github_runner's dockerd (docker.sh's)

REPO=$(cd "$E2E_SRC/../.." && pwd)
GH_DENIED=203.0.113.21	# what the confined steps' denied requests would reach
GL_DENIED=203.0.113.23
# github_runner: the job user (ghjob.sh), its sudoers file, dockerd's
# socket group it is in; dockerd's socket where a runner's is, on the
# test's tmpfs over /run (run_tmpfs), root's hard link beside it
JU=egrci$$
SUDOERS=/etc/sudoers.d/egr-e2e-$$
DKG=egrcidk$$
SOCK=/run/docker.sock
ROOTSOCK=/run/egr-e2e-$$-own/docker.sock
GR_PROBES=uid,mount_cgroup2,proc_outside_root_cgroup,unshare_net,nsenter,setns,bpf
# ... and a fresh address for each attempt of its job, so the sensor tells
# them apart: before the action (control), confined, after the post step
GR_SUDO_CTL=203.0.113.30	# sudo curl
GR_SUDO=203.0.113.31
GR_ESC_CTL=203.0.113.32		# sudo: root cgroup's cgroup.procs, then curl
GR_ESC=203.0.113.33
GR_RUN_CTL=203.0.113.34		# docker run
GR_RUN=203.0.113.35
GR_BUILD_CTL=203.0.113.36	# docker build's RUN
GR_BUILD=203.0.113.37
GR_SDK_CTL=203.0.113.38		# sudo docker run
GR_SDK=203.0.113.39
GR_CGP_CTL=203.0.113.40		# docker run --cgroup-parent
GR_CGP=203.0.113.41
GR_AFTER=203.0.113.42		# docker run after the post step
GR_SUID_CTL=203.0.113.46	# a setuid shell a container made, then cgroup.procs, curl
GR_SUID=203.0.113.47
GR_ACT_CTL=203.0.113.48		# a container action (root, the workspace and docker's socket bound)
GR_ACT=203.0.113.49
GR_SVC_CTL=203.0.113.94		# the job's service asked to fetch (a database's COPY ... FROM PROGRAM)
GR_SVC=203.0.113.95
GR_SVC_NET=github_network_$(printf '%032x' $$) # the runner's network for the job's services

# github_runner's leftovers (a failure's) go before the namespaces and
# cgroups do: its processes, dockerd and its containers, the tmpfs over
# /run, the job user and its sudoers file, the v1 cgroups runc made, the
# socket's group
eval "ci_$(declare -f e2e_cleanup)"
e2e_cleanup() {
	gr_teardown
	ghjob_cleanup
	dockerd_cgroups_rm
	getent group "$DKG" >/dev/null && groupdel "$DKG"
	ci_e2e_cleanup
}

# tcg TAG: a cgroup this suite makes (removed by e2e_cleanup)
tcg() { echo "$CGROOT/egr-e2e-$$-$1"; }

# recv_start TAG ARGS...: clients/logrecv.py ARGS in the sbx netns; waits
# for READY. RECV_PID.
recv_start() {
	local tag=$1
	shift
	nsenter --net="$NS_SBX" "$PY" "$C/logrecv.py" "$@" >"$W/$tag.ready" 2>"$W/$tag.rerr" &
	RECV_PID=$!
	PIDS+=("$RECV_PID")
	wait_secs 10 grep -q READY "$W/$tag.ready" || {
		fail "$tag.receiver" "logrecv.py $* did not start: $(head -c 300 "$W/$tag.rerr")"
		return 1
	}
}

# a_py NAME PYTHON ARGS...: the snippet prints "ok" or what is wrong
a_py() {
	local name=$1 code=$2 r
	shift 2
	r=$("$PY" -c "$code" "$@" 2>&1)
	if [ "$r" = ok ]; then ok "$name"; else fail "$name" "$r"; fi
}

# ======================================================================
# Every record says who wrote it: schema version, run id, host name, and
# the CI job when the environment names one (GitHub's variables here)
# ======================================================================
test_identity() {
	local t=identity j
	have_egr || return 0
	j=$W/$t.jlog
	script "$t" <<'EOF'
cu identity.ok http://a.example.test/identity
cu identity.no http://blocked.test/identity
EOF
	GITHUB_ACTIONS=true GITHUB_RUN_ID=4242 GITHUB_RUN_ATTEMPT=2 GITHUB_JOB='build "x"' \
		GITHUB_REPOSITORY=org/repo arun "$t" --log "$j" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_jlog_fields "$t.log.fields" "$j"
	a_jlog "$t.log.identity" "$j" schema=2 'run_id=[0-9a-f]{32}' "hostname=$(re "$(hostname)")" \
		decision=allow host=a.example.test
	a_py "$t.log.ci" '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ci = [d.get("ci") for d in lines]
want = {"system": "github", "run_id": "4242", "run_attempt": "2", "job": "build \"x\"", "repository": "org/repo"}
runs = set(d.get("run_id") for d in lines)
print("ok" if lines and all(c == want for c in ci) and len(runs) == 1 else "ci %r, run ids %r" % (ci[:2], runs))' "$j"
	# another run: another run id; no CI variables: no "ci"
	arun "${t}_2" --log "$W/${t}_2.jlog" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_py "$t.log.run_ids_differ" '
import json, sys
a = set(json.loads(l)["run_id"] for l in open(sys.argv[1]))
b = set(json.loads(l)["run_id"] for l in open(sys.argv[2]))
c = [json.loads(l).get("ci") for l in open(sys.argv[2])]
print("ok" if len(a) == len(b) == 1 and a != b and not any(c) else "run ids %r %r, ci %r" % (a, b, c[:2]))' "$j" "$W/${t}_2.jlog"
}

# ======================================================================
# --log fd:N, --log - refused for run, a file opened anew on SIGUSR1
# ======================================================================
test_logs() {
	local t=logs n_old n_new
	have_egr || return 0
	script "$t" <<'EOF'
cu logs.one http://a.example.test/one
EOF
	# fd:3: the decisions go there, CMD's output does not (--no-kernel-verify:
	# curl through the proxy, one decision per request, none from DNS)
	timeout -k 2 30 nsenter --net="$NS_SBX" "$EGRESSCTL" run --cgroup "$(cg_name "$t")" --user nobody \
		--dns-upstream "$INET_DNS" --log fd:3 --allow a.example.test --no-kernel-verify -- \
		/bin/sh -c ". $W/$t.sh; echo CMD-OUTPUT" 3>"$W/$t.fd3" >"$W/$t.out" 2>"$W/$t.err" </dev/null
	EGR_RC=$?
	a_rc "$t.fd.exit" 0 "$t"
	a_jlog "$t.fd.decisions" "$W/$t.fd3" decision=allow host=a.example.test source=http
	a_nogrep "$t.fd.no_cmd_output" "$W/$t.fd3" CMD-OUTPUT
	a_grep "$t.fd.cmd_output_on_stdout" "$W/$t.out" '^CMD-OUTPUT$'
	a_nogrep "$t.fd.no_decisions_on_stdout" "$W/$t.out" '"decision"'
	# -: CMD writes to the same stdout: refused, with the way out
	arun "${t}_dash" --log - --allow a.example.test -- /bin/true
	a_rc "$t.dash.refused" 125 "${t}_dash"
	a_grep "$t.dash.said" "$W/${t}_dash.err" '^egressctl: --log -: CMD writes to the same standard output; give a file, fd:N'
	# a file moved away (logrotate), SIGUSR1, the next lines in a new file
	script "${t}_rot" <<'EOF'
cu logs.before http://a.example.test/before
touch $RW/logs.rot.moved.ready
await $W/logs.rot.go
cu logs.after http://a.example.test/after
EOF
	egr_bg "${t}_rot" --cgroup "$(cg_name "${t}_rot")" --user nobody --dns-upstream "$INET_DNS" \
		--log "$W/$t.rot.jlog" --allow a.example.test --no-kernel-verify -- /bin/sh "$W/${t}_rot.sh"
	wait_secs 20 test -e "$RW/logs.rot.moved.ready"
	wait_secs 5 grep -q '"decision":"allow"' "$W/$t.rot.jlog"
	mv "$W/$t.rot.jlog" "$W/$t.rot.jlog.1"
	kill -USR1 "$EGR_PID"
	wait_secs 5 test -e "$W/$t.rot.jlog"
	touch "$W/logs.rot.go"
	egr_join 20
	a_rc "$t.rot.exit" 0 "${t}_rot"
	n_old=$(jcount "$W/$t.rot.jlog.1" decision=allow host=a.example.test)
	n_new=$(jcount "$W/$t.rot.jlog" decision=allow host=a.example.test)
	a_val "$t.rot.old_file" "allow records in the moved file" "$n_old" 1
	a_val "$t.rot.new_file" "allow records in the new file" "$n_new" 1
	a_code "$t.rot.cmd_kept_running" "${t}_rot" "logs.after" 200
	a_grep "$t.rot.reopened_said" "$W/${t}_rot.err" "^egressctl: log $(re "$W/$t.rot.jlog") opened anew\$"
}

# ======================================================================
# --log syslog:PATH: one RFC 5424 datagram per record, the JSON as MSG
# ======================================================================
test_syslog() {
	local t=syslog
	have_egr || return 0
	recv_start "$t" syslog "$W/$t.sock" "$W/$t.got" || return 0
	script "$t" <<'EOF'
cu syslog.ok http://a.example.test/syslog
cu syslog.no http://blocked.test/syslog
EOF
	arun "$t" --log "syslog:$W/$t.sock" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	wait_secs 5 grep -q blocked "$W/$t.got"
	a_py "$t.framing" '
import json, re, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
pat = re.compile(r"^<(\d+)>egressctl\[(\d+)\]: (\{.*\})$")
seen = {}
for m in msgs:
    g = pat.match(m)
    if not g:
        print("not <PRI>egressctl[PID]: JSON: %r" % m[:200]); sys.exit()
    pri, rec = int(g.group(1)), json.loads(g.group(3))
    if pri // 8 != 3:
        print("facility %d (want 3, daemon): %r" % (pri // 8, m[:200])); sys.exit()
    seen[(rec.get("decision"), rec.get("host"))] = pri % 8
ok = seen.get(("allow", "a.example.test")) == 6 and seen.get(("deny", "blocked.test")) == 4
print("ok" if ok else "severities by (decision, host): %r" % seen)' "$W/$t.got"
	kill "$RECV_PID" 2>/dev/null
	# no syslog socket there: refused at start, by name
	arun "${t}_none" --log "syslog:$W/nothing.sock" --allow a.example.test -- /bin/true
	a_rc "$t.none.refused" 125 "${t}_none"
	a_grep "$t.none.said" "$W/${t}_none.err" "cannot reach the syslog socket $(re "$W/nothing.sock")"
}

# --log-format ecs: Elastic Common Schema names, each field once, none both
# a value and an object (what an ECS index would reject as a conflict)
test_ecs() {
	local t=ecs
	have_egr || return 0
	script "$t" <<'EOF'
cu ecs.ok http://a.example.test/ecs
cu ecs.no http://blocked.test/ecs
EOF
	GITHUB_ACTIONS=true GITHUB_RUN_ID=78 GITHUB_JOB=ecs \
		arun "$t" --log "$W/$t.jlog" --log-format ecs --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_py "$t.fields" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for r in recs:
    keys = set(r)
    clash = [k for k in keys for p in keys if k != p and k.startswith(p + ".")]
    if clash or r.get("ecs.version", "").split(".")[0] != "8" or "@timestamp" not in r:
        print("conflict %r or no ecs.version/@timestamp: %r" % (clash, r)); sys.exit()
deny = [r for r in recs if r.get("event.action") == "deny" and r.get("destination.domain") == "blocked.test"]
allow = [r for r in recs if r.get("event.action") == "allow" and r.get("destination.domain") == "a.example.test"
         and r.get("rule.name") == "a.example.test" and r.get("event.outcome") == "success"]
ok = deny and deny[0].get("event.outcome") == "failure" and deny[0].get("destination.port") == 80 and \
    isinstance(deny[0].get("process.pid"), int) and deny[0].get("process.name") == "curl" and \
    deny[0].get("event.reason") == "no rule allows it" and deny[0].get("labels.ci_run_id") == "78" and \
    "decision" not in deny[0] and allow
print("ok" if ok else "deny %r; allow %r" % (deny[:1], allow[:1]))' "$W/$t.jlog"
	arun "${t}_bad" --log "$W/$t.bad" --log-format xml --allow a.example.test -- /bin/true
	a_rc "$t.bad.refused" 2 "${t}_bad"
}

# A real journald (started here, its sockets and journal on tmpfs mounts
# of this suite's own mount namespace) files each record under egressctl's
# identifier and pid with the JSON line as its message: RFC 5424 on the
# local socket reached it as one unparsed message.
test_journald() {
	local t=journald jd=/lib/systemd/systemd-journald jpid d made=
	have_egr || return 0
	if [ ! -x "$jd" ] || ! command -v journalctl >/dev/null; then
		note "$t: no systemd-journald here: skipped"
		return 0
	fi
	if ! e2e_private_mntns; then
		note "$t: no mount namespace of the suite's own (unshare): skipped"
		return 0
	fi
	for d in /run/systemd /run/log; do
		[ -d "$d" ] || { mkdir "$d" && made="$made $d"; }
		mount -t tmpfs -o mode=0755 tmpfs "$d" || { fail "$t.setup" "cannot mount a tmpfs on $d"; return; }
	done
	mkdir /run/systemd/journal
	"$jd" >"$W/$t.jd.out" 2>&1 &
	jpid=$!
	wait_secs 10 test -S /run/systemd/journal/dev-log
	script "$t" <<'EOF'
cu journald.ok http://a.example.test/journald
cu journald.no http://blocked.test/journald
EOF
	arun "$t" --log syslog:/run/systemd/journal/dev-log --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	wait_secs 5 sh -c 'journalctl -D /run/log/journal -o json --no-pager SYSLOG_IDENTIFIER=egressctl 2>/dev/null | grep -q blocked.test'
	journalctl -D /run/log/journal -o json --no-pager SYSLOG_IDENTIFIER=egressctl >"$W/$t.got" 2>&1
	kill "$jpid" 2>/dev/null
	wait "$jpid" 2>/dev/null
	umount /run/log /run/systemd
	for d in $made; do rmdir "$d"; done
	a_py "$t.parsed" '
import json, sys
recs = {}
for l in open(sys.argv[1]):
    e = json.loads(l)
    m = json.loads(e["MESSAGE"])  # the JSON line, whole
    if e.get("SYSLOG_FACILITY") != "3" or not e.get("SYSLOG_PID", "").isdigit():
        print("facility or pid: %r" % l[:300]); sys.exit()
    recs[(m.get("decision"), m.get("host"))] = e.get("PRIORITY")
ok = recs.get(("allow", "a.example.test")) == "6" and recs.get(("deny", "blocked.test")) == "4"
print("ok" if ok else "priorities by (decision, host): %r" % recs)' "$W/$t.got"
}

# ======================================================================
# --log otlp:https://: a collector behind TLS (its certificate checked
# against --log-ca, its address against the certificate) gets the records
# with the headers of --log-header and $OTEL_EXPORTER_OTLP_LOGS_HEADERS;
# the token is in no line egressctl writes. A collector whose certificate
# the CA did not sign gets nothing: the records are lost, counted, with
# the TLS reason in the summary, and connections go on.
# ======================================================================
test_otlp_tls() {
	local t=otlp_tls port=14321 bad=14322 d
	have_egr || return 0
	d=$W/$t.pki
	mkdir -p "$d"
	if ! (cd "$d" &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj /CN=otlp-test-ca -keyout ca.key -out ca.pem &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=collector \
			-keyout srv.key -out srv.csr &&
		printf 'subjectAltName=IP:127.0.0.1\n' >ext &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
			-extfile ext -out srv.pem &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj /CN=other-ca -keyout other.key -out other.pem) >"$W/$t.pki.log" 2>&1; then
		fail "$t.pki" "openssl: $(tail -3 "$W/$t.pki.log" | tr '\n' '|')"
		return
	fi
	chmod 0644 "$d"/*.pem
	recv_start "$t" otlp 127.0.0.1 "$port" "$W/$t.got" --tls "$d/srv.pem" "$d/srv.key" || return 0
	# a second apart: the first batch goes on the loop, the last at exit
	script "$t" <<'EOF'
cu otlp_tls.ok http://a.example.test/otlp_tls
sleep 2
cu otlp_tls.no http://blocked.test/otlp_tls
EOF
	OTEL_EXPORTER_OTLP_LOGS_HEADERS='x-team=egress%20ctl' \
		arun "$t" --log "otlp:https://127.0.0.1:$port/v1/logs" --log-ca "$d/ca.pem" \
		--log-header 'authorization: Bearer tok-s3cr3t-77' --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_py "$t.received" '
import json, sys
try:
    reqs = [json.loads(l) for l in open(sys.argv[1])]
    recs = [r for q in reqs for rl in json.loads(q["body"])["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
except (OSError, ValueError, KeyError) as e:
    print("what the collector got does not read: %r: %s" % (e, open(sys.argv[1]).read()[:300])); sys.exit()
hdr = reqs[0]["headers"] if reqs else {}
deny = [r for r in recs if json.loads(r["body"]["stringValue"]).get("decision") == "deny"]
attrs = {a["key"]: list(a["value"].values())[0] for a in deny[0]["attributes"]} if deny else {}
ok = deny and hdr.get("authorization") == "Bearer tok-s3cr3t-77" and hdr.get("x-team") == "egress ctl" and \
    attrs.get("server.address") == "blocked.test" and deny[0].get("eventName") == "egressctl.policy_decision"
ok = ok and len(reqs) >= 2 and all(q["headers"].get("authorization") == "Bearer tok-s3cr3t-77" for q in reqs)
print("ok" if ok else "%d requests, headers %r, %d deny records" % (len(reqs), hdr, len(deny)))' "$W/$t.got"
	a_nogrep "$t.token_not_said" "$W/$t.err" "tok-s3cr3t"
	a_nogrep "$t.token_not_in_output" "$W/$t.out" "tok-s3cr3t"
	kill "$RECV_PID" 2>/dev/null
	# the collector's certificate from a CA that --log-ca does not name
	recv_start "${t}_bad" otlp 127.0.0.1 "$bad" "$W/${t}_bad.got" --tls "$d/srv.pem" "$d/srv.key" || return 0
	arun "${t}_bad" --log "otlp:https://127.0.0.1:$bad/v1/logs" --log-ca "$d/other.pem" \
		--allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.bad.exit" 0 "${t}_bad"
	a_grep "$t.bad.served" "$W/${t}_bad.out" "^CODE otlp_tls\\.ok 200\$"
	a_val "$t.bad.nothing_received" "requests the collector took" "$(grep -c . "$W/${t}_bad.got" 2>/dev/null || echo 0)" "^0\$"
	a_grep "$t.bad.summary_says_tls" "$W/${t}_bad.err" "certificate verify failed"
	kill "$RECV_PID" 2>/dev/null
	# the plain-http form refuses a CA: said at start
	arun "${t}_plain" --log "otlp:http://127.0.0.1:$bad/v1/logs" --log-ca "$d/ca.pem" \
		--allow a.example.test -- /bin/true
	a_rc "$t.plain_ca.refused" 125 "${t}_plain"
}

# ======================================================================
# --log otlp:URL: OTLP/HTTP logs, JSON encoding, batched; a collector
# that fails: counted and said in the summary, connections unharmed
# ======================================================================
test_otlp() {
	local t=otlp port=14318 bad=14319 dead=14320
	have_egr || return 0
	recv_start "$t" otlp 127.0.0.1 "$port" "$W/$t.got" || return 0
	script "$t" <<'EOF'
burst otlp.burst 300 http://a.example.test/otlp
cu otlp.no http://blocked.test/otlp
EOF
	GITHUB_ACTIONS=true GITHUB_RUN_ID=77 GITHUB_JOB=otlp \
		arun "$t" --log "otlp:http://127.0.0.1:$port/v1/logs" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	pjv "$t" "$t.burst"
	a_val "$t.requests_served" "codes of 300 requests" "${P_codes:-}" '\{"200": 300\}'
	local secs_otlp=${P_secs:-?}
	arun "${t}_file" --log "$W/${t}_file.jlog" --allow a.example.test -- /bin/sh "$W/$t.sh"
	pjv "${t}_file" "$t.burst"
	note "$t: 300 requests in ${secs_otlp}s with --log otlp:, ${P_secs:-?}s with --log FILE (a figure, not a test)"
	a_py "$t.records" '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
recs, bad = [], []
for q in reqs:
    if q["path"] != "/v1/logs" or q["type"] != "application/json":
        bad.append("path %r type %r" % (q["path"], q["type"]))
    d = json.loads(q["body"])
    for rl in d["resourceLogs"]:
        attrs = {a["key"]: a["value"]["stringValue"] for a in rl["resource"]["attributes"]}
        if attrs.get("service.name") != "egressctl" or attrs.get("egressctl.ci.system") != "github" or \
                attrs.get("cicd.pipeline.run.id") != "77" or len(attrs.get("egressctl.run_id", "")) != 32:
            bad.append("resource %r" % attrs)
        for sl in rl["scopeLogs"]:
            for r in sl["logRecords"]:
                recs.append(r)
allow = [r for r in recs if json.loads(r["body"]["stringValue"]).get("decision") == "allow"]
deny = [r for r in recs if json.loads(r["body"]["stringValue"]).get("decision") == "deny"]
def attr(r, k):
    for a in r["attributes"]:
        if a["key"] == k:
            return list(a["value"].values())[0]
if bad:
    print("; ".join(bad[:3])); sys.exit()
if len(allow) != 300 or len(deny) != 1:
    print("%d allow, %d deny records in %d requests" % (len(allow), len(deny), len(reqs))); sys.exit()
if len(reqs) < 2 or max(len(json.loads(q["body"])["resourceLogs"][0]["scopeLogs"][0]["logRecords"]) for q in reqs) > 256:
    print("not batched by at most 256: %d requests" % len(reqs)); sys.exit()
d = deny[0]
# semantic-convention names, one event name, our decision, reason and rule
ok = d["severityNumber"] == 13 and attr(d, "server.address") == "blocked.test" and \
    attr(d, "server.port") in (80, "80") and attr(d, "network.transport") == "tcp" and \
    attr(d, "network.protocol.name") in ("http", None) and \
    d.get("eventName") == "egressctl.policy_decision" and attr(d, "event.name") == "egressctl.policy_decision" and \
    attr(d, "egressctl.decision") == "deny" and attr(d, "egressctl.reason") == "no rule allows it" and \
    d["timeUnixNano"].isdigit() and str(attr(d, "process.pid")).isdigit() and attr(d, "process.executable.name") == "curl"
a = allow[0]
ok = ok and attr(a, "egressctl.rule") == "a.example.test" and attr(a, "server.address") == "a.example.test"
print("ok" if ok else "deny record %r; allow record %r" % (d, a))' "$W/$t.got"
	kill "$RECV_PID" 2>/dev/null
	# a collector that answers 500, and one that is not there: nothing
	# arrives, the requests are served all the same, the summary says so
	recv_start "${t}_500" otlp 127.0.0.1 "$bad" "$W/${t}_500.got" --status 500 || return 0
	arun "${t}_500" --log "otlp:http://127.0.0.1:$bad" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.500.exit" 0 "${t}_500"
	pjv "${t}_500" "$t.burst"
	a_val "$t.500.requests_served" "codes of 300 requests" "${P_codes:-}" '\{"200": 300\}'
	a_grep "$t.500.summary" "$W/${t}_500.err" \
		"^egressctl: log otlp http://127\\.0\\.0\\.1:$bad: 0 records sent, 0 dropped \\(the queue or socket was full\\), 301 lost \\(HTTP 500\\)\$"
	kill "$RECV_PID" 2>/dev/null
	arun "${t}_dead" --log "otlp:http://127.0.0.1:$dead/v1/logs" --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.dead.exit" 0 "${t}_dead"
	pjv "${t}_dead" "$t.burst"
	a_val "$t.dead.requests_served" "codes of 300 requests" "${P_codes:-}" '\{"200": 300\}'
	a_grep "$t.dead.summary" "$W/${t}_dead.err" "^egressctl: log otlp http://127\\.0\\.0\\.1:$dead/v1/logs: 0 records sent, .*301 lost \\(no answer\\)\$"
	# a URL of another scheme: refused at start
	arun "${t}_ftp" --log "otlp:ftp://127.0.0.1:$port" --allow a.example.test -- /bin/true
	a_rc "$t.ftp.refused" 125 "${t}_ftp"
}

# ======================================================================
# --summary FILE in markdown and JSON; a name's lookup and its
# connection are one row
# ======================================================================
test_summary_file() {
	local t=sumfile
	have_egr || return 0
	script "$t" <<'EOF'
cu sumfile.tr --noproxy '*' http://a.example.test/sumfile
cu sumfile.no http://blocked.test/sumfile
EOF
	echo "# before" >"$W/$t.md"
	arun "$t" --summary "$W/$t.md" --summary-format markdown --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_grep "$t.md.kept" "$W/$t.md" '^# before$'
	a_grep "$t.md.header" "$W/$t.md" '^### egressctl: 1 allowed, 1 denied, 2 destinations$'
	a_grep "$t.md.merged_row" "$W/$t.md" '^\| allowed \| 1 \| a\.example\.test:80 \\\(dns: allowed\\\) \|  \|  \|$'
	a_grep "$t.md.denied_row" "$W/$t.md" '^\| denied \| 1 \| blocked\.test:80 \| curl\\\[[0-9]+\\\] \| --allow blocked\.test \|$'
	a_grep "$t.stderr_too" "$W/$t.err" '^egressctl: summary: 1 allowed, 1 denied, 2 destinations$'
	arun "${t}_json" -q --summary "$W/$t.json" --summary-format json --allow a.example.test -- /bin/sh "$W/$t.sh"
	a_py "$t.json.rows" '
import json, sys
d = json.loads(open(sys.argv[1]).read())
rows = {r["destination"]: r for r in d["destinations"]}
a = rows.get("a.example.test:80", {})
ok = d["schema"] == 2 and set(rows) == {"a.example.test:80", "blocked.test:80"} and \
    a.get("host") == "a.example.test" and a.get("port") == 80 and a.get("allowed") == 1 and \
    a.get("dns_allowed", 0) >= 1 and a.get("dns") is True
print("ok" if ok else json.dumps(d)[:600])' "$W/$t.json"
	a_nogrep "$t.json.quiet" "$W/${t}_json.err" '^egressctl: summary:'
	arun "${t}_bad" --summary "$W/x" --summary-format yaml -- /bin/true
	a_rc "$t.bad_format" 2 "${t}_bad"
	# the Action's annotations from such a file: at most `annotations` of
	# them, the rest counted in one more line (three denied, two shown)
	script "${t}_cap" <<'EOF'
cu cap.1 http://blocked.test:81/cap
cu cap.2 http://blocked.test:82/cap
cu cap.3 http://blocked.test:83/cap
EOF
	arun "${t}_cap" -q --summary "$W/$t.cap.json" --summary-format json -- /bin/sh "$W/${t}_cap.sh"
	node -e 'require(process.argv[1]).annotate(process.argv[2], 2)' \
		"$REPO/contrib/ci/github/run.js" "$W/$t.cap.json" >"$W/$t.cap.ann" 2>&1
	a_val "$t.annotations.capped" "::warning lines naming a denied destination (annotations: 2)" \
		"$(grep -c '^::warning title=egressctl denied blocked\.test:8[123]::' "$W/$t.cap.ann")" 2
	a_grep "$t.annotations.rest_counted" "$W/$t.cap.ann" '^::warning title=egressctl::1 more denied destination\(s\): see the job summary$'
	node -e 'require(process.argv[1]).annotate(process.argv[2], 20)' \
		"$REPO/contrib/ci/github/run.js" "$W/$t.cap.json" >"$W/$t.all.ann" 2>&1
	a_val "$t.annotations.all" "::warning lines (annotations: 20, three denied)" "$(grep -c '^::warning' "$W/$t.all.ann")" 3
}

# ======================================================================
# egressctl run inside a confined command: said as it is
# ======================================================================
test_nested() {
	local t=nested
	have_egr || return 0
	cp "$EGRESSCTL" "$RW/egressctl" && chmod 0755 "$RW/egressctl"
	# as nobody, and as a root without capabilities
	arun "$t" --allow a.example.test -- "$RW/egressctl" run --allow a.example.test -- /bin/true
	a_grep "$t.nobody.said" "$W/$t.err" \
		"^egressctl: already confined by egressctl in cgroup /egressctl/$(re "$(cg_name "$t")"): a confined command cannot confine another"
	a_nogrep "$t.nobody.not_cgroup2" "$W/$t.err" 'no cgroup v2 hierarchy|run needs root'
	egr "${t}_root" --cgroup "$(cg_name "${t}_root")" --user root --dns-upstream "$INET_DNS" -- \
		env -u EGRESSCTL_CGROUP "$RW/egressctl" run --allow a.example.test -- /bin/true
	a_grep "$t.root.said" "$W/${t}_root.err" \
		"^egressctl: already confined by egressctl in cgroup /egressctl/$(re "$(cg_name "${t}_root")"): "
	a_nogrep "$t.root.not_cgroup2" "$W/${t}_root.err" 'no cgroup v2 hierarchy'
}

# ======================================================================
# The GitHub Action against a simulated runner
# ======================================================================

# gh_listener TAG: the runner's own long-lived process in the runner's
# cgroup TAG, not the job's: a "Runner.Listener" (root), a loop of
# requests to git.other.test, their codes in $W/TAG.listener. LISTENER_PID.
gh_listener() {
	local tag=$1 cg
	cg=$(tcg "$tag")
	mkdir -p "$cg" "$W/$tag.bin" || return 1
	ln -sf /bin/bash "$W/$tag.bin/Runner.Listener"
	[ -e "$W/$tag.listener" ] || : >"$W/$tag.listener"
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$1" -c "$2"' "$cg" \
		"$W/$tag.bin/Runner.Listener" \
		"while :; do curl -s -o /dev/null -m 3 -w '%{http_code}\n' --resolve git.other.test:80:$A_GIT http://git.other.test/listener >>$W/$tag.listener; sleep 0.3; done" \
		</dev/null >/dev/null 2>&1 &
	LISTENER_PID=$!
	PIDS+=("$LISTENER_PID")
}

# gh_runner TAG MODE LISTENER(yes|no): the runner's cgroup TAG with a
# Runner.Listener (when yes) and a Runner.Worker that runs the action's
# main, a step, its post. Waits for the worker; the step's results are in
# $W/TAG.step, the worker's output in $W/TAG.worker. With GH_USER (a uid)
# the worker runs as that user (sudo is the runner's way to root), with
# GH_BEFORE and GH_STEP shell text that runs before the action's main and
# in the step.
gh_runner() {
	local tag=$1 mode=$2 listener=$3 cg u=${GH_USER:-0} f
	cg=$(tcg "$tag")
	mkdir -p "$cg" "$W/$tag.bin" "$W/$tag.tmp" || return 1
	ln -sf /bin/bash "$W/$tag.bin/Runner.Worker"
	: >"$W/$tag.summary.md"
	: >"$W/$tag.output"
	: >"$W/$tag.state"
	: >"$W/$tag.listener"
	: >"$W/$tag.env"
	[ "$listener" = yes ] && gh_listener "$tag"
	cat >"$W/$tag.worker.sh" <<EOF
set -u
step() {
	echo "step \$1 \$(curl -s -o /dev/null -m 5 -w '%{http_code}' "\${@:2}")" >>$W/$tag.step
}
${GH_BEFORE:-}
# before the action: the step's world as it is
step before-denied --resolve blocked.test:80:$GH_DENIED http://blocked.test/$tag-before
# the runner passes inputs as INPUT_<NAME>, '-' kept (so: env, not export)
env ${GH_INPUTS:-INPUT_MODE=$mode INPUT_ALLOW=a.example.test} INPUT_ALLOW-RUNNER=false \
	INPUT_EGRESSCTL=$EGRESSCTL "INPUT_DAEMON-ARGS=--dns-upstream $INET_DNS ${GH_DAEMON_ARGS:-}" \
	node $REPO/contrib/ci/github/main.js
echo "main \$?" >>$W/$tag.step
# what the runner does for the later steps: the variables of GITHUB_ENV
set -a
. \$GITHUB_ENV
set +a
# a step: what the job does
echo "STEP_CGROUP \$(grep "^0::" /proc/self/cgroup)" >>$W/$tag.step
step allowed http://a.example.test/$tag-allowed
step denied-name http://blocked.test/$tag-denied
step denied --resolve blocked.test:8080:$GH_DENIED http://blocked.test:8080/$tag-denied
${GH_STEP:-}
# the post step, with what the main step saved as STATE_<name>
env \$(sed -n 's/^\([a-z]*\)=/STATE_\1=/p' \$GITHUB_STATE) node $REPO/contrib/ci/github/post.js
echo "post \$?" >>$W/$tag.step
EOF
	: >"$W/$tag.step"
	for f in "$W/$tag.tmp" "$W/$tag.summary.md" "$W/$tag.output" "$W/$tag.state" "$W/$tag.listener" \
		"$W/$tag.step" "$W/$tag.env"; do
		chown "$u:$u" "$f"
	done
	gh_vars "$tag" 9001
	nsenter --net="$NS_SBX" env -i "${GH_VARS[@]}" \
		sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid="$3" --regid="$3" --clear-groups -- "$1" "$2"' \
		"$cg" "$W/$tag.bin/Runner.Worker" "$W/$tag.worker.sh" "$u" </dev/null >"$W/$tag.worker" 2>&1 &
	local wpid=$!
	PIDS+=("$wpid")
	local i
	for i in $(seq 1200); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$wpid" 2>/dev/null && { note "$tag: the worker overstayed 120 s"; kill "$wpid"; }
	wait "$wpid" 2>/dev/null
}

stepv() { sed -n "s/^step $2 //p" "$W/$1.step" | head -1; }

test_github() {
	local t=gh base jobcg dir own had_own
	jobcg="$CGROOT/egressctl/$(cg_name "$t-job")"
	dir=$W/$t.tmp/egressctl
	own=$CGROOT/egressctl/daemon
	[ -d "$own" ] && had_own=1 || had_own=
	have_egr || return 0
	base=$(sensor_now "dst host $A_BLOCKED")
	# a step's plain-HTTP request the proxy denies: the 403's body says why
	GH_STEP="curl -s -m 5 -o $W/$t.body403 -w '%{http_code}' --resolve blocked.test:80:$GH_DENIED \
	http://blocked.test/$t-body >$W/$t.code403 2>/dev/null" gh_runner "$t" block yes
	note "$t: worker: $(tr '\n' '|' <"$W/$t.worker" | head -c 1500)"
	# the control half: before the action, the step reaches the denied host
	a_val "$t.control.before_reached" "code before the action" "$(stepv "$t" before-denied)" 200
	sensor_saw "$t.control.sensor_saw" "dst host $GH_DENIED and tcp dst port 80"
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	# the job's tree got a cgroup of its own: the listener shares the runner's
	a_grep "$t.step.own_cgroup" "$W/$t.step" "^STEP_CGROUP 0::/egressctl/$(re "$(cg_name "$t-job")")\$"
	a_val "$t.step.allowed" "allowed host" "$(stepv "$t" allowed)" 200
	a_val "$t.step.denied_name" "denied host by name (refused lookup)" "$(stepv "$t" denied-name)" 000
	a_val "$t.step.denied" "denied host by address" "$(stepv "$t" denied)" "000|403"
	a_nogrep "$t.step.server_saw_nothing" "$WEBLOG" "$t-denied"
	a_grep "$t.step.denied_403" "$W/$t.code403" '^403$'
	a_grep "$t.step.denied_says_why" "$W/$t.body403" \
		"^egressctl: blocked blocked\\.test:80: no rule allows it"
	a_nogrep "$t.step.denied_403_not_at_server" "$WEBLOG" "$t-body"
	# nothing of the denied step: not direct (port 8080), not through the
	# proxy (which would connect to blocked.test's own address)
	sensor_none "$t.step.sensor_nothing" "dst host $GH_DENIED and tcp dst port 8080"
	sensor_none_since "$t.step.sensor_nothing_by_name" "$base" "dst host $A_BLOCKED"
	a_grep "$t.control.server_saw" "$WEBLOG" "$t-before"
	a_grep "$t.listener.unconfined" "$W/$t.listener" '^200$'
	a_nogrep "$t.listener.never_denied" "$W/$t.listener" '^000$'
	# GITHUB_OUTPUT, the summary, the policy
	a_grep "$t.output.policy" "$W/$t.output" "^policy=$(re "$dir")/egress-policy\\.json\$"
	a_grep "$t.output.log" "$W/$t.output" "^log=$(re "$dir")/decisions\\.jsonl\$"
	a_grep "$t.summary.header" "$W/$t.summary.md" '^### egressctl: [1-9][0-9]* allowed, [1-9][0-9]* denied, [0-9]+ destinations$'
	a_grep "$t.summary.allowed_row" "$W/$t.summary.md" '^\| allowed \| 1 \| a\.example\.test:80 \\\(dns: allowed\\\) \|'
	# the refused lookup of blocked.test and the connection to it: one row
	a_grep "$t.summary.denied_row" "$W/$t.summary.md" \
		'^\| denied \| 1 \| blocked\.test:8080 \\\(dns: denied\\\) \| curl\\\[[0-9]+\\\], curl\\\[[0-9]+\\\] \| --allow blocked\.test:8080 \|$'
	a_nogrep "$t.summary.no_lookup_row" "$W/$t.summary.md" '^\| denied \| [0-9]+ \| blocked\.test \|'
	a_py "$t.policy.loads" '
import json, sys
d = json.load(open(sys.argv[1]))
print("ok" if d.get("version") == 1 and isinstance(d.get("allow"), list) and "observed" in d else json.dumps(d)[:300])' "$dir/egress-policy.json"
	"$EGRESSCTL" check --policy "$dir/egress-policy.json" a.example.test >/dev/null 2>"$W/$t.check.err"
	a_val "$t.policy.loader_accepts" "egressctl check --policy (0 allow, 1 deny; 2: a bad file)" "$?" "0|1"
	a_jlog "$t.log.ci_job" "$dir/decisions.jsonl" decision=deny host=blocked.test \
		'ci=\{"system": "github", "run_id": "9001", "run_attempt": "1", "job": "job-gh", "workflow": "ci", "repository": "org/repo"\}'
	a_jlog "$t.log.attach" "$dir/decisions.jsonl" event=attach source=daemon
	# the denials where the step's log shows them: one annotation per
	# denied destination, with who and the rule (the 000 above said nothing)
	a_grep "$t.annotation" "$W/$t.worker" \
		'^::warning title=egressctl denied blocked\.test:8080::denied blocked\.test:8080 \(.*\), tried by curl\[[0-9]+\].*--allow blocked\.test:8080'
	a_nogrep "$t.annotation.not_allowed" "$W/$t.worker" '^::warning title=egressctl denied a\.example\.test'
	# detached: no daemon, no pins; the cgroup's processes are free again
	local cgid
	cgid=$(stat -c %i "$jobcg" 2>/dev/null)
	expect "$t.detached.pins" "$PIN_ROOT/${cgid:-none} still exists" test ! -e "$PIN_ROOT/${cgid:-none}"
	local dpid
	dpid=$(sed -n 's/^pid=//p' "$dir/state.done" 2>/dev/null)
	expect "$t.detached.daemon_gone" "the daemon ${dpid:-?} still runs" test -n "$dpid" -a ! -e "/proc/${dpid:-0}"
	# ... the daemon itself (the pid was once a subshell's), stopped by the TERM
	a_grep "$t.detached.daemon_stopped" "$dir/daemon.out" 'signal 15: stopping'
	# the cgroup the daemon moved itself to (it ran inside the job's) went with it
	[ -n "$had_own" ] || expect "$t.detached.own_cgroup" "$own is left behind" test ! -d "$own"
	# the finish asked from a cgroup of its own (the daemon refuses the
	# job's), removed after; root's state is gone too
	a_jlog "$t.detached.from_outside" "$dir/decisions.jsonl" event=detach \
		"reason=detached on request of egressctl\\[[0-9]+\\] \\(uid 0, cgroup /egressctl/$(re "$(cg_name "$t-job")")\\.finish\\): confinement lifted"
	expect "$t.detached.finish_cgroup" "$jobcg.finish is left behind" test ! -e "$jobcg.finish"
	expect "$t.detached.state" "/run/egressctl/ci/$(cg_name "$t-job") is left behind" \
		test ! -e "/run/egressctl/ci/$(cg_name "$t-job")"
	kill "$LISTENER_PID" 2>/dev/null
}

test_github_audit() {
	local t=gha dir
	dir=$W/$t.tmp/egressctl
	have_egr || return 0
	# no listener: the worker is alone in its cgroup, which is confined as it is
	gh_runner "$t" audit no
	note "$t: worker: $(tr '\n' '|' <"$W/$t.worker" | head -c 1200)"
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.step.same_cgroup" "$W/$t.step" "^STEP_CGROUP 0::/egr-e2e-$$-$t\$"
	a_grep "$t.said_alone" "$W/$t.worker" "the job's processes are alone in $(re "$(tcg "$t")"): confining it"
	a_val "$t.step.allowed" "allowed host" "$(stepv "$t" allowed)" 200
	a_val "$t.step.audit_reached" "a denied host, audit mode" "$(stepv "$t" denied-name)" 200
	# let through to blocked.test:8080, where nothing listens
	a_val "$t.step.audit_let_through" "a denied host's closed port, audit mode" "$(stepv "$t" denied)" 502
	a_grep "$t.summary.would_deny" "$W/$t.summary.md" '^### egressctl: [0-9]+ allowed, [1-9][0-9]* would deny, '
	a_grep "$t.summary.row" "$W/$t.summary.md" '^\| would deny \| [0-9]+ \| blocked\.test:80'
	a_py "$t.policy.review" '
import json, sys
d = json.load(open(sys.argv[1]))
rev = d.get("observed", {}).get("review", {})
# every name used once: for review, none allowed
ok = rev.get("a.example.test") == ["seen once"] and rev.get("blocked.test") == ["seen once"] and \
    not d.get("allow")
print("ok" if ok else json.dumps(d)[:600])' "$dir/egress-policy.json"
	local cgid
	cgid=$(stat -c %i "$(tcg "$t")" 2>/dev/null)
	expect "$t.detached.pins" "$PIN_ROOT/${cgid:-none} still exists" test ! -e "$PIN_ROOT/${cgid:-none}"
}

# ======================================================================
# Regression: the CI integration acted as root on what the job can write.
# Its state was in $EGR_DIR ($RUNNER_TEMP/egressctl, the job user's): the
# finish ran `sudo "$bin"` with the bin of that state file and `sudo
# kill` on its pid, `sudo chmod` followed a symlink at the policy's path,
# `sudo chown -R` went over the directory, and the root daemon opened its
# --log and --summary there (a planted symlink sent root's writes where
# it pointed). The job user (nobody here, with sudo for the action as a
# runner's user has) plants all of that; the post step must run none of
# it, signal nothing else, follow no symlink, and still deliver the
# summary, the log and the policy. Control half: each planted thing is
# live (the bin runs, the pid is a root process root may signal, each
# symlink leads to its file).
# ======================================================================
test_github_planted() {
	local t=ghp dir v sleeper sdir n
	dir=$W/$t.tmp/egressctl
	sdir=/run/egressctl/ci/$(cg_name "$t-job")
	have_egr || return 0
	if ! command -v sudo >/dev/null || ! e2e_private_mntns; then
		note "$t: no sudo, or no private mount namespace for its sudoers: skipped"
		return 0
	fi
	# the runner's user may sudo (as a hosted runner's); this suite's own sudoers
	printf 'Defaults !use_pty, !lecture, env_reset\nroot ALL=(ALL:ALL) ALL\nnobody ALL=(ALL:ALL) NOPASSWD: ALL\n@includedir /etc/sudoers.d\n' \
		>"$W/sudoers"
	chown root:root "$W/sudoers" && chmod 0440 "$W/sudoers" && mount --bind "$W/sudoers" /etc/sudoers || {
		fail "$t.sudoers" "cannot bind-mount sudoers"
		return 0
	}
	# files of the test's own that root must not touch: root's, 0600
	for v in summary policy log; do
		echo "VICTIM $v" >"$W/$t.victim.$v"
		chmod 0600 "$W/$t.victim.$v"
	done
	# a bin that says when it runs, and a root process outside the job
	printf '#!/bin/sh\necho "ran as $(id -u): $*" >>%s\n' "$RW/$t.evil.ran" >"$W/$t.evil.sh"
	chmod 0755 "$W/$t.evil.sh"
	sleep 600 &
	sleeper=$!
	PIDS+=("$sleeper")
	# control: each is live
	"$W/$t.evil.sh" control
	a_grep "$t.control.bin_runs" "$RW/$t.evil.ran" '^ran as 0: control$'
	expect "$t.control.pid_signalable" "root cannot signal $sleeper" kill -0 "$sleeper"
	# the job plants its symlinks before the action (its directory is its
	# own), and its state's bin and pid after the action wrote them
	GH_USER=65534 GH_BEFORE="mkdir -p $dir
ln -s $W/$t.victim.summary $dir/summary.md
ln -s $W/$t.victim.policy $dir/egress-policy.json
ln -s $W/$t.victim.log $dir/decisions.jsonl
echo \"links \$(readlink -f $dir/summary.md) \$(readlink -f $dir/egress-policy.json) \$(readlink -f $dir/decisions.jsonl)\" >>$W/$t.step" \
	GH_STEP="sed -i -e 's|^bin=.*||' -e 's|^pid=.*|pid=$sleeper|' $dir/state
echo 'bin=$W/$t.evil.sh' >>$dir/state
echo \"STATE \$(tr '\\n' ' ' <$dir/state)\" >>$W/$t.step" \
		gh_runner "$t" block no
	note "$t: worker: $(tr '\n' '|' <"$W/$t.worker" | head -c 1500)"
	note "$t: step: $(tr '\n' '|' <"$W/$t.step" | head -c 600)"
	a_grep "$t.control.links" "$W/$t.step" \
		"^links $(re "$W/$t.victim.summary") $(re "$W/$t.victim.policy") $(re "$W/$t.victim.log")\$"
	a_grep "$t.planted" "$W/$t.step" "^STATE name=.* pid=$sleeper bin=$(re "$W/$t.evil.sh") \$"
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	a_val "$t.step.denied" "denied host by address" "$(stepv "$t" denied)" "000|403"
	# none of it run, signalled or followed
	a_nogrep "$t.bin_not_run" "$RW/$t.evil.ran" 'ran as .*: (summary|detach|kill)'
	expect "$t.pid_not_signalled" "the planted root process $sleeper is gone" kill -0 "$sleeper"
	for v in summary policy log; do
		a_val "$t.victim.$v.untouched" "$W/$t.victim.$v" \
			"$(stat -c '%u %a' "$W/$t.victim.$v") $(cat "$W/$t.victim.$v")" "0 600 VICTIM $v"
	done
	# and delivered: regular files of the job user's, in place of the links
	for v in summary.md egress-policy.json decisions.jsonl; do
		a_val "$t.delivered.$v" "$dir/$v" "$(stat -c '%F %u' "$dir/$v" 2>&1)" "regular file 65534"
	done
	a_grep "$t.delivered.summary" "$dir/summary.md" '^### egressctl: [0-9]+ allowed, [1-9][0-9]* denied'
	a_grep "$t.delivered.step_summary" "$W/$t.summary.md" '^### egressctl: [0-9]+ allowed, [1-9][0-9]* denied'
	a_jlog "$t.delivered.log" "$dir/decisions.jsonl" decision=deny host=blocked.test
	# the finish asked from a cgroup of its own: the daemon takes no
	# command from inside the job's
	a_jlog "$t.detached_from_outside" "$dir/decisions.jsonl" event=detach \
		"reason=detached on request of egressctl\\[[0-9]+\\] \\(uid 0, cgroup /egressctl/$(re "$(cg_name "$t-job")")\\.finish\\): confinement lifted"
	a_py "$t.delivered.policy" '
import json, sys
d = json.load(open(sys.argv[1]))
print("ok" if d.get("version") == 1 and "observed" in d else json.dumps(d)[:300])' "$dir/egress-policy.json"
	# the daemon stopped all the same (by root's own record of it), root's
	# state and the finish's cgroup gone
	n=$(for v in /proc/[0-9]*; do [ "$(readlink "$v/exe" 2>/dev/null)" = "$sdir/egressctl" ] && echo "${v#/proc/}"; done)
	a_val "$t.daemon_stopped" "processes running $sdir/egressctl" "${n:-none}" none
	a_grep "$t.daemon_said_stop" "$dir/daemon.out" 'signal 15: stopping'
	expect "$t.state_removed" "$sdir is left behind" test ! -e "$sdir"
	expect "$t.finish_cgroup_removed" "$CGROOT/egressctl/$(cg_name "$t-job").finish is left behind" \
		test ! -e "$CGROOT/egressctl/$(cg_name "$t-job").finish"
	# what a failure left
	for v in $n; do kill "$v" 2>/dev/null; done
	rm -rf "$sdir"
	kill "$sleeper" 2>/dev/null
	umount -l /etc/sudoers
}

# ======================================================================
# The GitLab script against a simulated gitlab-runner (shell executor)
# ======================================================================
test_gitlab() {
	local t=gl cg
	cg=$(tcg "$t")
	have_egr || return 0
	mkdir -p "$cg" "$W/$t.bin" "$W/$t.proj" || return 0
	ln -sf /bin/bash "$W/$t.bin/gitlab-runner"
	cat >"$W/$t.job.sh" <<EOF
echo "before \$(curl -s -o /dev/null -m 5 -w '%{http_code}' --resolve blocked.test:80:$GL_DENIED http://blocked.test/$t-before)"
$REPO/contrib/ci/gitlab/egressctl.sh start || echo "start failed \$?"
echo "code \$(curl -s -o /dev/null -m 5 -w '%{http_code}' --resolve blocked.test:8080:$GL_DENIED http://blocked.test:8080/$t)"
echo "code2 \$(curl -s -o /dev/null -m 5 -w '%{http_code}' http://a.example.test/$t)"
EOF
	cat >"$W/$t.runner.sh" <<EOF
# the runner: the job's shell, then after_script in a shell of its own
bash $W/$t.job.sh >$W/$t.job.out 2>&1
bash $REPO/contrib/ci/gitlab/egressctl.sh finish >$W/$t.after.out 2>&1
EOF
	nsenter --net="$NS_SBX" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root GITLAB_CI=true \
		CI_JOB_ID=555 CI_JOB_NAME=test CI_PROJECT_DIR="$W/$t.proj" EGR_MODE=block \
		EGR_ALLOW=a.example.test EGR_BIN="$EGRESSCTL" EGR_DAEMON_ARGS="--dns-upstream $INET_DNS" \
		EGR_CGROUP="$(cg_name "$t-job")" \
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$1" "$2"' "$cg" "$W/$t.bin/gitlab-runner" \
		"$W/$t.runner.sh" </dev/null >"$W/$t.runner.out" 2>&1
	note "$t: job: $(tr '\n' '|' <"$W/$t.job.out" | head -c 800)"
	a_grep "$t.control.before" "$W/$t.job.out" '^before 200$'
	sensor_saw "$t.control.sensor_saw" "dst host $GL_DENIED and tcp dst port 80"
	a_grep "$t.denied" "$W/$t.job.out" '^code (000|403)$'
	sensor_none "$t.denied.sensor_nothing" "dst host $GL_DENIED and tcp dst port 8080"
	a_grep "$t.allowed" "$W/$t.job.out" '^code2 200$'
	a_grep "$t.summary" "$W/$t.after.out" '^\| denied \| 1 \| blocked\.test:8080 '
	expect "$t.policy" "no $W/$t.proj/.egressctl/egress-policy.json" test -s "$W/$t.proj/.egressctl/egress-policy.json"
	a_jlog "$t.log.ci" "$W/$t.proj/.egressctl/decisions.jsonl" decision=deny \
		'ci=\{"system": "gitlab", "job_id": "555", "job": "test"\}'
}

# ======================================================================
# The daemon: a target's log opened anew on SIGHUP (its reload), the
# target's --summary FILE written when it is detached
# ======================================================================
test_daemon_logs() {
	local t=dlogs cg dpid i
	cg=$(tcg "$t")
	have_egr || return 0
	mkdir -p "$cg"
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/$t.ctl" --cgroup "$cg" \
		--allow a.example.test --dns-upstream "$INET_DNS" --log "$W/$t.jlog" \
		--summary "$W/$t.sum.json" --summary-format json >"$W/$t.dout" 2>&1 </dev/null &
	dpid=$!
	PIDS+=("$dpid")
	wait_secs 15 grep -q "ready:" "$W/$t.dout" || { fail "$t.ready" "$(tail -c 300 "$W/$t.dout")"; return 0; }
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec curl -s -o /dev/null -m 5 http://a.example.test/one' "$cg"
	wait_secs 5 grep -q '"host":"a.example.test"' "$W/$t.jlog"
	mv "$W/$t.jlog" "$W/$t.jlog.1"
	kill -HUP "$dpid"
	wait_secs 5 test -e "$W/$t.jlog"
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec curl -s -o /dev/null -m 5 http://blocked.test/two' "$cg"
	wait_secs 5 grep -q '"host":"blocked.test"' "$W/$t.jlog"
	a_jlog "$t.old_file" "$W/$t.jlog.1" decision=allow host=a.example.test
	a_jlog_none "$t.old_file_no_later" "$W/$t.jlog.1" host=blocked.test
	a_jlog "$t.new_file" "$W/$t.jlog" decision=deny host=blocked.test
	a_grep "$t.said" "$W/$t.dout" "log $(re "$W/$t.jlog") opened anew"
	timeout 20 "$EGRESSCTL" detach --control "$W/$t.ctl" --cgroup "$cg" >/dev/null 2>&1
	a_py "$t.summary_at_detach" '
import json, sys
d = json.loads(open(sys.argv[1]).read())
rows = {r["destination"]: r for r in d["destinations"]}
ok = rows.get("a.example.test:80", {}).get("allowed") == 1 and rows.get("blocked.test", {}).get("denied", 0) >= 1
print("ok" if ok else json.dumps(d)[:500])' "$W/$t.sum.json"
	kill -TERM "$dpid" 2>/dev/null
	for i in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
}

# harden-runner's inputs, as its users write them: egress-policy for mode,
# allowed-endpoints (host:port) for allow; and both names of the mode at
# odds is an error, not a guess
test_github_aliases() {
	local t=ghal
	have_egr || return 0
	GH_INPUTS="INPUT_EGRESS-POLICY=block INPUT_ALLOWED-ENDPOINTS=a.example.test:80" gh_runner "$t" x no
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_val "$t.step.allowed" "allowed endpoint" "$(stepv "$t" allowed)" 200
	a_val "$t.step.blocked" "egress-policy: block" "$(stepv "$t" denied-name)" 000
	a_grep "$t.annotation" "$W/$t.worker" '^::warning title=egressctl denied blocked\.test'
	t=ghal2
	GH_INPUTS="INPUT_MODE=audit INPUT_EGRESS-POLICY=block" gh_runner "$t" x no
	a_grep "$t.main.fails" "$W/$t.step" '^main 1$'
	a_grep "$t.says" "$W/$t.worker" '^::error::egressctl: mode: audit and egress-policy: block disagree'
}

# ======================================================================
# The action's secrets input: later steps hold placeholders; the value goes
# in inspected HTTPS to the secret's host only; the job's CA is trusted
# ======================================================================
test_github_secrets() {
	local t=ghsec val dir f
	have_egr || return 0
	val="ghsecret-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	dir=$W/$t.tmp/egressctl
	printf '%s\n' '{"allow": ["a.example.test", {"rule": "b.example.test", "inspect": true}]}' \
		>"$W/$t.policy.json"
	chmod 0644 "$W/$t.policy.json"
	# the control half: without egressctl, the header reaches b.example.test
	GH_BEFORE="curl -sk -o /dev/null -H 'Authorization: Bearer x' --resolve b.example.test:443:$A_B https://b.example.test/$t-ctl" \
		GH_INPUTS="INPUT_MODE=block INPUT_POLICY=$W/$t.policy.json INPUT_SECRETS=TOK=$val@a.example.test" \
		GH_DAEMON_ARGS="--upstream-ca $W/tls.crt" \
		GH_STEP="echo \"env TOK=\$TOK\" >>$W/$t.step
step secret-use -H \"Authorization: Bearer \$TOK\" https://a.example.test/$t-use
step secret-other -H \"Authorization: Bearer \$TOK\" https://b.example.test/$t-other
echo \"envval \$(env | grep -c -- '$val')\" >>$W/$t.step
echo \"values_left \$(ls /run/egressctl/ci/*/ | grep -c '^secret-')\" >>$W/$t.step
echo \"bundle \$SSL_CERT_FILE \$NODE_EXTRA_CA_CERTS\" >>$W/$t.step" \
		gh_runner "$t" block no
	a_grep "$t.control.reached" "$WEBLOG" "HTTPS .*target=/$t-ctl .*auth=Bearer_x "
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.placeholder" "$W/$t.step" '^env TOK=EGRESSCTL_SECRET_TOK_[0-9a-f]{32}$'
	a_val "$t.use" "the secret's host" "$(stepv "$t" secret-use)" 200
	a_grep "$t.value_arrived" "$WEBLOG" "HTTPS .*target=/$t-use .*auth=Bearer_$val "
	a_val "$t.other_host" "the placeholder to another host" "$(stepv "$t" secret-other)" 403
	a_nogrep "$t.other_never_at_server" "$WEBLOG" "target=/$t-other"
	a_grep "$t.env_holds_no_value" "$W/$t.step" '^envval 0$'
	a_grep "$t.value_files_gone" "$W/$t.step" '^values_left 0$'
	a_grep "$t.bundle" "$W/$t.step" "^bundle $(re "$dir")/ca-bundle\\.pem $(re "$dir")/ca\\.pem\$"
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	a_jlog "$t.log.leak" "$dir/decisions.jsonl" decision=deny host=b.example.test 'reason=.*secret TOK.*'
	for f in "$W/$t.worker" "$W/$t.step" "$W/$t.env" "$dir/daemon.out" "$dir/decisions.jsonl" \
		"$dir/summary.md" "$W/$t.summary.md"; do
		a_nogrep "$t.value_absent.$(basename "$f")" "$f" "$val"
	done
	# a line that is no secret: refused, and the value is not in the message
	GH_INPUTS="INPUT_MODE=block INPUT_ALLOW=a.example.test INPUT_SECRETS=TOK=$val" gh_runner "${t}2" block no
	a_grep "${t}2.main.fails" "$W/${t}2.step" '^main 1$'
	a_grep "${t}2.said" "$W/${t}2.worker" 'secrets: TOK: expected NAME=VALUE@HOST'
	a_nogrep "${t}2.value_absent" "$W/${t}2.worker" "$val"
}

# ======================================================================
# github_runner: one simulated hosted runner, sudo and docker together.
# A job user (useradd) with passwordless sudo (a sudoers file of the
# test's own, as the runner's) and in dockerd's socket group; a real
# dockerd (dockerd.sh: docker.sh's) listening where a runner's does,
# /run/docker.sock (on a tmpfs of the test's own over /run: the host's
# /run untouched); a Runner.Listener beside the Runner.Worker. Before the
# action (the control halves), as the job user: sudo gives root, and
# through it a request reaches a denied address, root moves itself to the
# root cgroup and reaches another, rootprobe.py's ways out work; docker
# run, docker build's RUN (the classic builder), sudo docker run and
# docker run --cgroup-parent reach theirs, and a container's root makes a
# setuid-root shell in a directory of the job's (bound in) that gives the
# job user root out of the cgroup. The action's main step through
# node, block mode, sudo left to its default (confined), one name
# allowed. After it, as the job user: sudo still gives root, inside the
# job's cgroup, and what it reaches is judged (the allowed name answers,
# the denied address is refused); the root cgroup's cgroup.procs, a
# cgroup2 mount, /proc of a process outside, unshare -n, nsenter and
# setns are refused; docker run's and docker build's containers are under
# the job's cgroup, the allowed name answers, the denied address gets 403;
# sudo docker finds no dockerd, --cgroup-parent is refused, the setuid
# shell gives no root; a container action (root, the workspace and
# docker's socket bound: its control reaches its address and leaves a
# set-uid root file in the workspace) runs, judged, and its file is the
# job user's; nothing of any of them at the sensor. The post step through node: the summary and
# the annotations name the denied destinations, sudo is the runner's
# again (the rule removed), and so is docker (the socket dockerd's:
# a container is dockerd's and reaches an address again, as docs/ci.md
# says of the detach).
# ======================================================================
RUN_TMPFS=
GR_PIDS=()

# run_tmpfs: a tmpfs over /run in the suite's mount namespace, /run/netns
# (the test's network namespaces) moved onto it; run_tmpfs_end unmounts it
run_tmpfs() {
	e2e_private_mntns || return 1
	mkdir "$W/netns.keep" && mount --rbind /run/netns "$W/netns.keep" || return 1
	mount -t tmpfs -o mode=0755 tmpfs /run || { umount -l "$W/netns.keep"; return 1; }
	RUN_TMPFS=1
	mkdir -m 0755 /run/netns && mount --move "$W/netns.keep" /run/netns
}
run_tmpfs_end() {
	[ -n "$RUN_TMPFS" ] || return 0
	umount -l /run && RUN_TMPFS=
}

# gr_rec KEY ARGV...: a step's line "rec KEY ARGV..." (ghjob.sh), each
# word quoted for the worker's bash
gr_rec() {
	printf 'rec'
	printf ' %q' "$@"
	printf '\n'
}

# gr_action KEY WORKSPACE SCRIPT: a step's record of a container action as
# the runner starts one (docker run as the image's user, root, with the
# workspace and docker's socket bound read-write, the workspace its
# working directory): it says its uid, makes a set-uid file "made" in the
# workspace, then runs SCRIPT
gr_action() {
	gr_rec "$1" "$DOCKER" run --rm --workdir /github/workspace -v "$SOCK:/var/run/docker.sock" \
		-v "$2:/github/workspace" "$IMAGE" sh -c "id -u; touch made && chmod 4755 made; $3"
}

# gr_svc KEY ADDR TAG: a step's record of the job's service asked, on the
# port it publishes on 127.0.0.1, to fetch http://ADDR/TAG (it runs what
# it is sent, as a database's superuser has its server run a program)
gr_svc() {
	gr_rec "$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/15433 || exit 1
printf "echo asked; wget -q -O- http://%s/%s 2>&1; exit\n" "$1" "$2" >&3; timeout 20 cat <&3' x "$2" "$3"
}

# gr_teardown: what github_runner started, gone (again at exit): the
# listener, the outside process, the action's root processes (a failure's:
# its post step stops them), dockerd and its containers, the tmpfs
gr_teardown() {
	local p
	for p in "${GR_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	GR_PIDS=()
	for p in /proc/[0-9]*; do
		case $(readlink "$p/exe" 2>/dev/null) in /run/egressctl/ci/e2e-$$-*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
	done
	# (a setuid-root shell is never left behind, E2E_KEEP or not)
	rm -f -- "$RW/ghr.ctl.rsh" "$RW/ghr.rsh"
	dockerd_stop
	run_tmpfs_end
}

test_github_runner() {
	local t=ghr dir cid n jobcg
	have_egr || return 0
	dir=$W/$t.tmp/egressctl
	jobcg=/egressctl/$(cg_name "$t-job")
	for n in /usr/sbin/dockerd "$DOCKER"; do
		[ -x "$n" ] || { fail "$t.setup" "no $n (tools/install-deps.sh --containers)"; return 0; }
	done
	run_tmpfs || { fail "$t.setup" "cannot put a tmpfs over /run in the suite's mount namespace"; return 0; }
	if ! { groupadd "$DKG" && ghjob_user "$DKG" && dockerd_start "$DKG"; } >"$W/$t.setup" 2>&1; then
		fail "$t.setup" "the job user or dockerd: $(tail -c 600 "$W/$t.setup" | tr '\n' '|')"
		gr_teardown
		return 0
	fi
	# the job's service, as the runner starts one before the first step:
	# root's, on the runner's network for the job, its port published on
	# 127.0.0.1 (dockerd's userland proxy)
	if ! { dk_root network create --subnet 198.19.12.0/24 "$GR_SVC_NET" &&
		ip -n "$INET" route add 198.19.12.0/24 via 198.18.0.2 &&
		dk_root run -d --name "egr-e2e-$$-svc" --network "$GR_SVC_NET" -p 127.0.0.1:15433:80 \
			"$IMAGE" nc -ll -p 80 -e sh >"$W/$t.svc.cid"; } >>"$W/$t.setup" 2>&1; then
		fail "$t.setup" "the job's service: $(tail -c 600 "$W/$t.setup" | tr '\n' '|')"
		gr_teardown
		return 0
	fi
	sleep 600 &
	OUTSIDE=$!
	PIDS+=("$OUTSIDE")
	GR_PIDS=("$OUTSIDE")
	gh_listener "$t" || { fail "$t.setup" "no Runner.Listener"; gr_teardown; return 0; }
	GR_PIDS+=("$LISTENER_PID")
	printf 'FROM %s\nRUN tail -1 /proc/self/cgroup; %s\n' "$IMAGE" "$(http "$GR_BUILD_CTL" ghr.ctl.build)" \
		>"$W/$t.ctl.Dockerfile"
	printf 'FROM %s\nRUN tail -1 /proc/self/cgroup; %s %s\n' "$IMAGE" "$(http a.example.test ghr.build.allowed)" \
		"$(http "$GR_BUILD" ghr.build.denied)" >"$W/$t.Dockerfile"
	chmod 0644 "$W/$t.ctl.Dockerfile" "$W/$t.Dockerfile"
	install -d -o "$JU" -g "$(id -g "$JU")" "$RW/ghr-ws" "$RW/ghr-ws-ctl"
	# before the action: the job user's sudo and docker as the runner gave them
	{
		gr_rec ctl.sudo sudo -n id -u
		gr_rec ctl.sudo_reach sudo -n curl -s -o /dev/null -m 5 -w '%{http_code}' "http://$GR_SUDO_CTL/ghr.ctl.sudo"
		gr_rec ctl.cgroup_procs sudo -n sh -c "echo \$\$ >$CGROOT/cgroup.procs; grep ^0:: /proc/self/cgroup; \
curl -s -o /dev/null -m 5 -w '%{http_code}' http://$GR_ESC_CTL/ghr.ctl.esc"
		gr_rec ctl.probe sudo -n sh -c "$PY $C/rootprobe.py --egr-pid $OUTSIDE --outside $OUTSIDE \
--dst 198.51.100.79 --only $GR_PROBES >$RW/ghr-ctl-probe.out 2>&1"
		gr_rec ctl.nsenter sudo -n nsenter -t "$OUTSIDE" -m -n id -u
		gr_rec ctl.unshare sudo -n unshare -n id -u
		gr_rec ctl.run "$DOCKER" run --rm "$IMAGE" sh -c "tail -1 /proc/self/cgroup; $(http "$GR_RUN_CTL" ghr.ctl.run)"
		gr_rec ctl.build sh -c "DOCKER_BUILDKIT=0 $DOCKER build --no-cache -f $W/$t.ctl.Dockerfile $DK/ctx \
>$RW/ghr.ctl.build 2>&1; echo build \$?"
		gr_rec ctl.sudo_docker sudo -n "$DOCKER" run --rm "$IMAGE" sh -c "$(http "$GR_SDK_CTL" ghr.ctl.sdk)"
		gr_rec ctl.cgroup_parent "$DOCKER" run --rm --cgroup-parent "$DPARENT-x" "$IMAGE" sh -c \
			"tail -1 /proc/self/cgroup; $(http "$GR_CGP_CTL" ghr.ctl.cgp)"
		gr_rec ctl.suid_made sh -c "cp /bin/bash $RW/ghr.ctl.rsh && $DOCKER run --rm -v $RW:/x $IMAGE \
sh -c 'busybox chown 0:0 /x/ghr.ctl.rsh && busybox chmod 4755 /x/ghr.ctl.rsh' && stat -c '%u %a' $RW/ghr.ctl.rsh"
		gr_rec ctl.suid_escape "$RW/ghr.ctl.rsh" -p -c "id -u; echo \$\$ >$CGROOT/cgroup.procs; grep ^0:: /proc/self/cgroup; \
curl -s -o /dev/null -m 5 -w '%{http_code}' http://$GR_SUID_CTL/ghr.ctl.suid"
		gr_rec ctl.buildkit sh -c 'echo "${DOCKER_BUILDKIT-unset}"'
		gr_action ctl.action "$RW/ghr-ws-ctl" "$(http "$GR_ACT_CTL" ghr.ctl.act)"
		gr_rec ctl.action_file stat -c '%u %a' "$RW/ghr-ws-ctl/made"
		gr_svc ctl.svc "$GR_SVC_CTL" ghr.ctl.svc
	} >"$W/$t.before"
	# the steps after the main step: sudo is the action's shim, docker the job's
	{
		gr_rec shim command -v sudo
		gr_rec sudo sudo -n id -u
		gr_rec sudo_cgroup sudo grep ^0:: /proc/self/cgroup
		gr_rec sudo_allowed sudo curl -s -o /dev/null -m 5 -w '%{http_code}' http://a.example.test/ghr.sudo.allowed
		gr_rec sudo_denied sudo curl -s -o /dev/null -m 5 -w '%{http_code}' "http://$GR_SUDO/ghr.sudo.denied"
		gr_rec cgroup_procs sudo sh -c "echo \$\$ >$CGROOT/cgroup.procs; grep ^0:: /proc/self/cgroup; \
curl -s -o /dev/null -m 5 -w '%{http_code}' http://$GR_ESC/ghr.esc"
		gr_rec probe sudo sh -c "$PY $C/rootprobe.py --egr-pid $OUTSIDE --outside $OUTSIDE \
--dst 198.51.100.79 --only $GR_PROBES >$RW/ghr-probe.out 2>&1"
		gr_rec nsenter sudo nsenter -t "$OUTSIDE" -m -n id -u
		gr_rec unshare sudo unshare -n id -u
		gr_rec run "$DOCKER" run --rm --cidfile "$RW/$t.cid" "$IMAGE" sh -c \
			"tail -1 /proc/self/cgroup; $(http a.example.test ghr.run.allowed) $(http "$GR_RUN" ghr.run.denied)"
		gr_rec build sh -c "DOCKER_BUILDKIT=0 $DOCKER build --no-cache -f $W/$t.Dockerfile $DK/ctx \
>$RW/ghr.build 2>&1; echo build \$?"
		gr_rec sudo_docker sudo "$DOCKER" run --rm "$IMAGE" sh -c "$(http "$GR_SDK" ghr.sdk)"
		gr_rec cgroup_parent "$DOCKER" run --rm --cgroup-parent "$DPARENT-x" "$IMAGE" sh -c \
			"tail -1 /proc/self/cgroup; $(http "$GR_CGP" ghr.cgp)"
		gr_rec suid_made sh -c "cp /bin/bash $RW/ghr.rsh && $DOCKER run --rm -v $RW:/x $IMAGE \
sh -c 'busybox chown 0:0 /x/ghr.rsh && busybox chmod 4755 /x/ghr.rsh'; stat -c '%u %a' $RW/ghr.rsh"
		gr_rec suid_escape "$RW/ghr.rsh" -p -c "id -u; echo \$\$ >$CGROOT/cgroup.procs; grep ^0:: /proc/self/cgroup; \
curl -s -o /dev/null -m 5 -w '%{http_code}' http://$GR_SUID/ghr.suid"
		gr_rec buildkit sh -c 'echo "${DOCKER_BUILDKIT-unset}"'
		gr_action action "$RW/ghr-ws" "$(http a.example.test ghr.act.allowed) $(http "$GR_ACT" ghr.act.denied)"
		gr_rec action_file stat -c '%u %a' "$RW/ghr-ws/made"
		gr_svc svc "$GR_SVC" ghr.svc
	} >"$W/$t.steps"
	# after the post step: the runner's sudo and docker again
	{
		gr_rec after.sudo /usr/bin/sudo -n id -u
		gr_rec after.run "$DOCKER" run --rm "$IMAGE" sh -c "tail -1 /proc/self/cgroup; $(http "$GR_AFTER" ghr.after)"
		gr_rec after.sudo_docker /usr/bin/sudo -n "$DOCKER" version --format '{{.Server.Version}}'
	} >"$W/$t.after"
	GH_JOB_SECS=300 gh_job "$t" "INPUT_MODE=block"
	note "$t: steps: $(tr '\n' '|' <"$W/$t.step" | head -c 3000)"

	# the control halves: before the action, each attempt works
	a_rec "$t.control.sudo" "$t" ctl.sudo 'rc=0 0$'
	a_rec "$t.control.sudo_reached" "$t" ctl.sudo_reach 'rc=0 200$'
	sensor_saw "$t.control.sudo_sensor" "dst host $GR_SUDO_CTL and tcp dst port 80"
	a_rec "$t.control.cgroup_procs" "$t" ctl.cgroup_procs 'rc=0 0::/ 200$'
	sensor_saw "$t.control.cgroup_procs_sensor" "dst host $GR_ESC_CTL and tcp dst port 80"
	read_probe "$RW/ghr-ctl-probe.out"
	for n in ${GR_PROBES//,/ }; do a_worked "$t.control.probe.$n" "$n"; done
	a_rec "$t.control.nsenter" "$t" ctl.nsenter 'rc=0 0$'
	a_rec "$t.control.unshare" "$t" ctl.unshare 'rc=0 0$'
	a_rec "$t.control.run" "$t" ctl.run "rc=0 0::$(re "$DPARENT")/[0-9a-f]{64} R: HTTP/1\\.[01] 200"
	sensor_saw "$t.control.run_sensor" "dst host $GR_RUN_CTL and tcp dst port 80"
	a_rec "$t.control.build" "$t" ctl.build 'rc=0 build 0$'
	a_grep "$t.control.build_reached" "$RW/ghr.ctl.build" 'R: HTTP/1\.[01] 200'
	a_grep "$t.control.build_outside_the_job" "$RW/ghr.ctl.build" "0::$(re "$DPARENT")/[0-9a-f]{64}"
	sensor_saw "$t.control.build_sensor" "dst host $GR_BUILD_CTL and tcp dst port 80"
	a_rec "$t.control.sudo_docker" "$t" ctl.sudo_docker 'rc=0 R: HTTP/1\.[01] 200'
	sensor_saw "$t.control.sudo_docker_sensor" "dst host $GR_SDK_CTL and tcp dst port 80"
	a_rec "$t.control.cgroup_parent" "$t" ctl.cgroup_parent \
		"rc=0 0::$(re "$DPARENT")-x/[0-9a-f]{64} R: HTTP/1\\.[01] 200"
	sensor_saw "$t.control.cgroup_parent_sensor" "dst host $GR_CGP_CTL and tcp dst port 80"
	a_grep "$t.control.server_saw" "$WEBLOG" "target=/ghr\\.ctl\\.run "
	a_rec "$t.control.suid_made" "$t" ctl.suid_made 'rc=0 0 4755$'
	a_rec "$t.control.suid_escape" "$t" ctl.suid_escape 'rc=0 0 0::/ 200$'
	sensor_saw "$t.control.suid_escape_sensor" "dst host $GR_SUID_CTL and tcp dst port 80"
	a_rec "$t.control.action" "$t" ctl.action 'rc=0 0 R: HTTP/1\.[01] 200'
	sensor_saw "$t.control.action_sensor" "dst host $GR_ACT_CTL and tcp dst port 80"
	a_rec "$t.control.action_file_is_roots" "$t" ctl.action_file 'rc=0 0 4755$'
	a_rec "$t.control.buildkit_unset" "$t" ctl.buildkit 'rc=0 unset$'
	a_rec "$t.control.service" "$t" ctl.svc 'rc=0 asked '
	a_grep "$t.control.service_fetched" "$WEBLOG" 'target=/ghr\.ctl\.svc '
	sensor_saw "$t.control.service_sensor" "dst host $GR_SVC_CTL and tcp dst port 80"

	# the main step: block mode, the default sudo (confined), docker kept
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.main.sudo_default" "$W/$t.state" '^sudo=confined$'
	a_grep "$t.main.said_sudo" "$W/$t.worker" "the job user's sudo is confined until the finish"
	a_grep "$t.main.moved" "$W/$t.worker" "other process\\(es\\) share $(re "$(tcg "$t")"): the job's"
	a_grep "$t.main.took_docker" "$dir/daemon.out" "$(re "$SOCK") is egressctl's now"

	# sudo: root, inside the job's cgroup, judged; the ways out refused
	a_rec "$t.sudo.shim" "$t" shim "rc=0 $(re "$REPO")/contrib/ci/github/bin/sudo"
	a_rec "$t.sudo.root" "$t" sudo 'rc=0 0$'
	a_rec "$t.sudo.in_the_job" "$t" sudo_cgroup "rc=0 0::$(re "$jobcg")\$"
	a_rec "$t.sudo.allowed" "$t" sudo_allowed 'rc=0 200$'
	a_rec "$t.sudo.denied" "$t" sudo_denied 'rc=[0-9]+ (000|403)$'
	a_nogrep "$t.sudo.denied_not_at_server" "$WEBLOG" 'target=/ghr\.sudo\.denied '
	sensor_none "$t.sudo.denied_sensor" "dst host $GR_SUDO"
	a_rec "$t.escape.cgroup_procs" "$t" cgroup_procs \
		"rc=[0-9]+ .*(No such file|Read-only|Permission denied|not permitted).* 0::$(re "$jobcg") (000|403)\$"
	sensor_none "$t.escape.cgroup_procs_sensor" "dst host $GR_ESC"
	read_probe "$RW/ghr-probe.out"
	a_worked "$t.escape.probe_is_root" uid
	for n in ${GR_PROBES//,/ }; do [ "$n" = uid ] || a_refused "$t.escape.probe.$n" "$n"; done
	a_rec "$t.escape.nsenter" "$t" nsenter 'rc=[1-9][0-9]* .*(Operation not permitted|Permission denied|No such file)'
	a_rec "$t.escape.unshare" "$t" unshare 'rc=[1-9][0-9]* .*(Operation not permitted|Permission denied)'

	# docker: the job's containers and build steps under its cgroup, judged
	cid=$(cat "$RW/$t.cid" 2>/dev/null)
	a_rec "$t.run" "$t" run "rc=0 0::$(re "$jobcg")/${cid:-none} R: HTTP/1\\.[01] 200 .*R: HTTP/1\\.[01] 403"
	a_grep "$t.run.allowed_at_server" "$WEBLOG" 'target=/ghr\.run\.allowed '
	a_nogrep "$t.run.denied_not_at_server" "$WEBLOG" 'target=/ghr\.run\.denied '
	sensor_none "$t.run.sensor" "dst host $GR_RUN"
	a_rec "$t.build" "$t" build 'rc=0 build 0$'
	a_grep "$t.build.under_the_job" "$RW/ghr.build" "0::$(re "$jobcg")/[0-9a-f]{64}"
	a_grep "$t.build.allowed" "$RW/ghr.build" 'R: HTTP/1\.[01] 200'
	a_grep "$t.build.denied_403" "$RW/ghr.build" 'R: HTTP/1\.[01] 403'
	a_nogrep "$t.build.denied_not_at_server" "$WEBLOG" 'target=/ghr\.build\.denied '
	sensor_none "$t.build.sensor" "dst host $GR_BUILD"
	a_rec "$t.sudo_docker.refused" "$t" sudo_docker 'rc=[1-9][0-9]* .*(Cannot connect to the Docker daemon|connect: )'
	sensor_none "$t.sudo_docker.sensor" "dst host $GR_SDK"
	a_rec "$t.cgroup_parent.refused" "$t" cgroup_parent \
		'rc=[1-9][0-9]* .*egressctl: --cgroup-parent[ ,].*refused in a confined job'
	sensor_none "$t.cgroup_parent.sensor" "dst host $GR_CGP"
	# a container's root makes a setuid-root shell in a directory of the
	# job's, bound in: the job user running it is root beside the sudo's
	# sandbox, free to leave the cgroup
	n=$(grep -m1 '^suid_made rc=' "$W/$t.step")
	case $n in
	'' | *" 0 "[2-7][0-7][0-7][0-7]) fail "$t.suid.not_made" "a container made a set-id root file of the job's: ${n:-no record}" ;;
	*) ok "$t.suid.not_made" ;;
	esac
	a_rec "$t.suid.not_root" "$t" suid_escape "rc=[0-9]+ $JUID .*0::$(re "$jobcg") (000|403)\$"
	sensor_none "$t.suid.sensor" "dst host $GR_SUID"
	# a container action: it runs, as root with the workspace idmapped, judged
	a_rec "$t.action" "$t" action 'rc=0 0 R: HTTP/1\.[01] 200 .*R: HTTP/1\.[01] 403'
	a_grep "$t.action.allowed_at_server" "$WEBLOG" 'target=/ghr\.act\.allowed '
	a_nogrep "$t.action.denied_not_at_server" "$WEBLOG" 'target=/ghr\.act\.denied '
	sensor_none "$t.action.sensor" "dst host $GR_ACT"
	a_rec "$t.action.file_is_the_jobs" "$t" action_file "rc=0 $JUID 4755\$"
	a_rec "$t.buildkit_off" "$t" buildkit 'rc=0 0$'
	# the job's service: confined by the job's policy (the action's
	# services input, true by default), still answering on its port
	a_grep "$t.service.confined" "$dir/daemon.out" \
		"service egr-e2e-$$-svc \\(container $(head -c 12 "$W/$t.svc.cid").*confined by the command line's policy"
	a_rec "$t.service.answered" "$t" svc 'rc=0 asked .*403'
	a_nogrep "$t.service.denied_not_at_server" "$WEBLOG" 'target=/ghr\.svc '
	sensor_none "$t.service.sensor" "dst host $GR_SVC"
	a_jlog "$t.log.service" "$dir/decisions.jsonl" decision=deny ip="$(re "$GR_SVC")" \
		container="$(cat "$W/$t.svc.cid")"
	a_grep "$t.buildkit_said" "$W/$t.worker" "docker build uses the classic builder \\(DOCKER_BUILDKIT=0\\)"
	a_grep "$t.listener.unconfined" "$W/$t.listener" '^200$'
	a_nogrep "$t.listener.never_denied" "$W/$t.listener" '^000$'

	# the post step: the denials listed, sudo and docker the runner's again
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	for n in "$GR_SUDO" "$GR_ESC" "$GR_RUN" "$GR_BUILD"; do
		a_grep "$t.summary.denied.$n" "$W/$t.summary.md" "^\\| denied \\| [0-9]+ \\| $(re "$n"):80 "
		a_grep "$t.annotation.$n" "$W/$t.worker" "^::warning title=egressctl denied $(re "$n"):80::"
	done
	a_grep "$t.summary.names_container" "$W/$t.summary.md" \
		"^\\| denied \\| [0-9]+ \\| $(re "$GR_RUN"):80 \\| "'nc\\\[[0-9]+\\\]@'"${cid:0:12} "
	a_jlog "$t.log.run" "$dir/decisions.jsonl" decision=deny ip="$(re "$GR_RUN")" container="${cid:-none}"
	a_jlog "$t.log.build" "$dir/decisions.jsonl" decision=deny ip="$(re "$GR_BUILD")" 'container=[0-9a-f]{64}'
	a_jlog "$t.log.sudo" "$dir/decisions.jsonl" decision=deny ip="$(re "$GR_SUDO")"
	a_jlog "$t.log.cgroup_parent" "$dir/decisions.jsonl" event=docker \
		'reason=refused POST /v[0-9.]+/containers/create from docker\[[0-9]+\]: egressctl: --cgroup-parent.*'
	a_rec "$t.after.sudo" "$t" after.sudo 'rc=0 0$'
	expect "$t.after.rule_removed" "/etc/sudoers.d/zz-egressctl-$(cg_name "$t-job") is left" \
		test ! -e "/etc/sudoers.d/zz-egressctl-$(cg_name "$t-job")"
	expect "$t.after.state_removed" "root's state is left" test ! -e "/run/egressctl/ci/$(cg_name "$t-job")"
	expect "$t.after.socket_uncovered" "$SOCK is still covered: $(grep -F " $SOCK " /proc/self/mountinfo | tr '\n' '|')" \
		sh -c "! awk -v p='$SOCK' '\$5 == p { f = 1 } END { exit !f }' /proc/self/mountinfo"
	a_rec "$t.after.run" "$t" after.run "rc=0 0::$(re "$DPARENT")/[0-9a-f]{64} R: HTTP/1\\.[01] 200"
	sensor_saw "$t.after.run_sensor" "dst host $GR_AFTER and tcp dst port 80"
	a_rec "$t.after.sudo_docker" "$t" after.sudo_docker 'rc=0 [0-9]+\.[0-9]+'
	gr_teardown
	ghjob_cleanup
	groupdel "$DKG" 2>/dev/null
}

ALL_TESTS="identity logs syslog journald ecs otlp otlp_tls summary_file nested daemon_logs github github_audit github_aliases github_planted github_secrets gitlab github_runner"

suite_main ci.sh audit_setup "ip nsenter setpriv unshare mount tcpdump ss curl dig dnsmasq openssl timeout node sudo" "$@"
