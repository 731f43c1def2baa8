#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of the proxy's limits and timeouts: the descriptor limit
# (raised, sized, and what happens when descriptors run out anyway), the
# connection limits (--max-conns, --max-conns-per-process) and the refusal
# each protocol gets, and the timeouts that answer (504) instead of closing
# in silence -- each asserted on the client's side AND the world's (the
# server's log, the leak sensor, egressctl's summary).
#
#   tests/e2e/limits.sh build/egressctl         (as root; make e2e does this)
#   E2E_TESTS="overload per_process" ...     run only these test functions
#   E2E_KEEP=1 ...                           keep /tmp/egr-e2e-PID (logs, pcap)
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion ("# ..." lines are
# notes), and as the last line "N passed, M failed".  Exit 1 if any failed,
# 77 if not root or no cgroup2.
#
# The test network: lib.sh's, drawn in docs/testing.md (nothing ever
# leaves the machine). In the sandbox host's namespace: egressctl and its
# proxy outside the cgroup; CMD (lclient.py, curl) confined, as nobody. In
# the "internet" (AnyIP for 203.0.113.0/24): limitsrv.py on 0.0.0.0, echo
# :7 and HTTP :80 (/silent, /slowhead/S, /slowbody/N/S, /close/N);
# 192.0.2.0/24 a blackhole route. The leak sensor listens on the
# internet's veth.
#
# Rules are address ranges (--allow 203.0.113.0/24), so no DNS is involved;
# each refused attempt aims at an address of its own, which the sensor and
# the server's log must never see.  No test measures egressctl's speed:
# "prompt" means each client's own bounded wait (lclient --timeout) ends
# with an answer, not a timeout.

set -u
# shellcheck disable=SC2154,SC2034 # P_* are assigned by jv (lib.sh) through eval; ALL_TESTS is read by suite_main
. "$(dirname "$0")/lib.sh"
e2e_reexec "$@"

NET=203.0.113.0/24
SRVLOG=$W/srv.log
ECHO=203.0.113.10:7	# held tunnels go here; refused attempts each get their own address
WEB=203.0.113.20

limits_setup() {
	local i
	e2e_base_setup || return 1
	ip -n "$INET" route add blackhole 192.0.2.0/24 || return 1
	nsenter --net="$NS_INET" "$PY" "$C/limitsrv.py" --log "$SRVLOG" --echo 7 --http 80 \
		>"$W/srv.ready" 2>"$W/srv.err" &
	PIDS+=($!)
	for i in $(seq 100); do
		grep -q READY "$W/srv.ready" 2>/dev/null && break
		sleep 0.05
	done
	grep -q READY "$W/srv.ready" || { echo "limitsrv failed: $(cat "$W/srv.err")"; return 1; }
	sensor_start || return 1
	cat >"$W/prelude.sh" <<EOF
LC="$PY $C/lclient.py"
RW=$RW
# cu KEY CURLARGS...: "KEY code=HTTP rc=EXIT size=BYTES", body in \$RW/KEY.body,
# headers in \$RW/KEY.hdr
cu() {
	k=\$1; shift
	r=\$(curl -sS -D "\$RW/\$k.hdr" -o "\$RW/\$k.body" -w "\$k code=%{http_code}" "\$@" 2>"\$RW/\$k.err")
	rc=\$?
	echo "\$r rc=\$rc size=\$(stat -c %s "\$RW/\$k.body" 2>/dev/null || echo 0)"
}
# await FILE: wait (at most 60 s) for FILE, made by the test outside
await() { i=0; while [ ! -e "\$1" ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i + 1)); done; }
EOF
	chmod 0644 "$W/prelude.sh"
}

# ------------------------------------------------------------- helpers

# lrun TAG NOFILE ARGS...: `egressctl run -v ARGS` (CMD as nobody, --cgroup
# e2e-PID-TAG) in the sbx netns, started with the descriptor limit NOFILE
# (SOFT:HARD, or - to inherit the suite's); bounded; output in
# $W/TAG.out/.err, status in EGR_RC.
lrun() {
	local tag=$1 nofile=$2 pl=()
	shift 2
	[ "$nofile" != - ] && pl=(prlimit --nofile="$nofile" --)
	timeout -k 2 "${EGR_TIMEOUT:-90}" nsenter --net="$NS_SBX" "${pl[@]}" \
		env --default-signal=INT,QUIT "$EGRESSCTL" run -v --cgroup "$(cg_name "$tag")" \
		--user nobody "$@" >"$W/$tag.out" 2>"$W/$tag.err" </dev/null
	EGR_RC=$?
}

# lrun_bg TAG ARGS...: the same in the background (suite's limit); EGR_PID
# is egressctl itself (nsenter and env exec)
lrun_bg() {
	local tag=$1
	shift
	nsenter --net="$NS_SBX" env --default-signal=INT,QUIT "$EGRESSCTL" run -v \
		--cgroup "$(cg_name "$tag")" --user nobody "$@" >"$W/$tag.out" 2>"$W/$tag.err" </dev/null &
	EGR_PID=$!
	PIDS+=("$EGR_PID")
}

# lj TAG CTAG: jv the lclient line tagged CTAG in TAG's output
lj() {
	local line
	line=$(grep -m1 -E "^\\{\"tag\": \"$(re "$2")\"" "$W/$1.out" 2>/dev/null)
	if [ -z "$line" ]; then
		jv '{"ok": false}'
		P_served="" P_still="" P_first="" P_seq=""
		P_json="no lclient line tagged $2 (egressctl rc=$EGR_RC, stderr: $(tail -c 400 "$W/$1.err" | tr '\n' '|'))"
		return 1
	fi
	jv "$line"
}

# a_lc NAME WHAT GOT ERE: GOT (a P_ value) matches ERE as a whole
a_lc() {
	if [[ $3 =~ ^($4)$ ]]; then ok "$1"; else fail "$1" "$2: got '$3', want /$4/ ($P_json)"; fi
}

# lsum TAG KEY: the sum of KEY ("served", "still", or an outcome such as
# "503:overloaded") over every lclient line of TAG's output
lsum() {
	"$PY" - "$W/$1.out" "$2" <<'EOF'
import json, sys
n = 0
for ln in open(sys.argv[1]):
    if ln.startswith("{"):
        d = json.loads(ln)
        n += d.get(sys.argv[2], 0) if sys.argv[2] in ("served", "still") else \
            d.get("outcomes", {}).get(sys.argv[2], 0)
print(n)
EOF
}

# lother TAG KEY...: outcomes of TAG's lclient lines other than KEYs, as
# "outcome=count ..." ("" when there are none)
lother() {
	local f=$W/$1.out
	shift
	"$PY" - "$f" "$@" <<'EOF'
import json, sys
out = {}
for ln in open(sys.argv[1]):
    if ln.startswith("{"):
        for k, v in json.loads(ln).get("outcomes", {}).items():
            if k not in sys.argv[2:]:
                out[k] = out.get(k, 0) + v
print(" ".join("%s=%d" % kv for kv in sorted(out.items())))
EOF
}

# egr_fds PID: the descriptors the process has open
egr_fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# nofile_leaving PID K: the soft limit with which exactly K descriptor
# numbers are free below it (descriptors are numbered lowest-free first)
nofile_leaving() {
	"$PY" - "$1" "$2" <<'EOF'
import os, sys
used = {int(f) for f in os.listdir("/proc/%s/fd" % sys.argv[1])}
want, free, n = int(sys.argv[2]), 0, 0
while True:
    if n not in used:
        if free == want:
            break
        free += 1
    n += 1
print(n)
EOF
}

# wait_cmd_ready TAG FILE: egressctl's pins, its status socket (the last
# thing it opens before its loop) and FILE (made by CMD) are there
wait_cmd_ready() {
	egr_wait_pins "$(cg_path "$1")" || return 1
	wait_secs 20 test -S "/run/egressctl/$CGID.sock" || return 1
	wait_secs 20 test -e "$2"
}

# ======================================================================
# Regression: egressctl never raised its soft
# RLIMIT_NOFILE, so at a soft limit of 256 it ran out after some 30 tunnels
# and new clients waited in the backlog. Started with 256:4096, it raises
# the soft limit to the hard one: 320 tunnels from 4 processes, all held at
# once, are all served. CMD gets the soft limit it was started with.
# ======================================================================
test_nofile_raise() {
	local t=nofile_raise i
	{
		echo "mkdir -p \$RW/$t; echo \"$t.cmd_nofile \$(ulimit -Sn) \$(ulimit -Hn)\""
		for i in 1 2 3 4; do
			echo "\$LC --tag p$i --ready \$RW/$t --peers 4 --deadline 60 connect 80 $ECHO &"
		done
		echo wait
	} | script "$t"
	lrun "$t" 256:4096 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_eq "$t.all_served" "tunnels served (of 320)" "$(lsum "$t" served)" 320
	a_eq "$t.all_held_at_once" "tunnels still echoing once all were open" "$(lsum "$t" still)" 320
	a_eq "$t.no_other_outcome" "outcomes other than service" "$(lother "$t")" ""
	a_grep "$t.cmd_keeps_its_limit" "$W/$t.out" "^$t\\.cmd_nofile 256 4096\$"
	a_grep "$t.verbose_says" "$W/$t.err" "proxy: at most [0-9]+ connections, [0-9]+ per process, [0-9]+ relay pipes \\(descriptor limit 4096\\); "
}

# ======================================================================
# Regression: --max-conns (4096 by default) was never
# sized by the descriptor limit: at 1024:1024 the proxy ran out of
# descriptors near 160 tunnels and later clients waited in the backlog.
# Now the limit is what fits (said with -v) and every client beyond it is
# refused at once (503 overloaded): none waits. 400 tunnels from 10
# processes, all held at once: exactly the limit are served. An idle
# tunnel costs its two sockets (relay pipes are leased while bytes move):
# at 1024 the limit is near 300, where six descriptors per connection held
# it near 110.
# ======================================================================
test_nofile_fit() {
	local t=nofile_fit i n
	{
		echo "mkdir -p \$RW/$t"
		for i in $(seq 10); do
			echo "\$LC --tag p$i --ready \$RW/$t --peers 10 --deadline 60 connect 40 $ECHO &"
		done
		echo wait
	} | script "$t"
	lrun "$t" 1024:1024 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	n=$(sed -nE 's/^egressctl: proxy: at most ([0-9]+) connections, not 4096: the descriptor limit is 1024 .*/\1/p' "$W/$t.err")
	if [ -n "$n" ] && [ "$n" -gt 240 ] && [ "$n" -lt 400 ]; then ok "$t.limit_lowered_and_said"; else
		fail "$t.limit_lowered_and_said" "no 'at most N connections, not 4096' line with 240 < N < 400 in stderr: $(grep 'at most' "$W/$t.err" | head -2 | tr '\n' '|')"
		n=0
	fi
	a_eq "$t.served_exactly_the_limit" "tunnels served at once" "$(lsum "$t" served)" "$n"
	a_eq "$t.served_held" "tunnels still echoing once all were open" "$(lsum "$t" still)" "$n"
	a_eq "$t.rest_refused_503" "tunnels refused with 503 overloaded" "$(lsum "$t" 503:overloaded)" $((400 - n))
	a_eq "$t.none_waited" "outcomes other than service or 503 (timeouts: waiting in the backlog)" \
		"$(lother "$t" 503:overloaded)" ""
	a_grep "$t.summary" "$W/$t.err" "^egressctl: the proxy refused $((400 - n)) connections: $((400 - n)) at the limit \\(--max-conns $n\\)\$"
}

# ======================================================================
# An explicit --max-conns the descriptor limit cannot honour is an error at
# start (nothing runs); one that fits is used as given.
# ======================================================================
test_nofile_explicit() {
	local t=nofile_explicit
	echo "echo ran" | script "$t"
	lrun "$t" 1024:1024 --max-conns 4096 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit_125" 125 "$t"
	a_grep "$t.message" "$W/$t.err" "^egressctl: --max-conns 4096 needs [0-9]+ file descriptors \\(2 per connection and [0-9]+ for relay pipes\\) and the limit is 1024 with [0-9]+ open: at most [0-9]+ connections fit; raise the hard limit \\(ulimit -Hn\\) or lower --max-conns\$"
	a_nogrep "$t.cmd_not_run" "$W/$t.out" "^ran\$"
	echo "echo ran" | script "$t.fits"
	lrun "$t.fits" 1024:1024 --max-conns 50 --allow "$NET" -- /bin/sh "$W/$t.fits.sh"
	a_rc "$t.fits.exit" 0 "$t.fits"
	a_grep "$t.fits.used" "$W/$t.fits.err" "proxy: at most 50 connections, 50 per process, "
}

# ======================================================================
# Regression: out of descriptors anyway (the limit
# lowered under a running egressctl, here with prlimit --pid), accept()
# failed and the listeners rested in 100 ms steps while clients waited in
# the backlog until their own timeouts. Now a spare descriptor is given up
# to accept and refuse each one at once: HTTP 503, SOCKS5 and transparent
# a reset; and service resumes when descriptors are back.
# ======================================================================
test_nofile_spare() {
	local t=nofile_spare orig lim
	script "$t" <<EOF
mkdir -p \$RW/$t; touch \$RW/$t/ready
await \$RW/$t/go
\$LC --tag http connect 1 203.0.113.30:7
\$LC --tag get get 1 203.0.113.31:80
\$LC --tag socks socks 1 203.0.113.32:7
\$LC --tag tproxy tproxy 1 203.0.113.33:7
touch \$RW/$t/done
await \$RW/$t/go2
\$LC --tag after connect 1 203.0.113.34:7
EOF
	lrun_bg "$t" --allow "$NET" -- /bin/sh "$W/$t.sh"
	if ! wait_cmd_ready "$t" "$RW/$t/ready"; then
		fail "$t.setup" "egressctl or its CMD did not come up: $(tail -c 400 "$W/$t.err" | tr '\n' '|')"
		touch "$RW/$t/go" "$RW/$t/go2"
		egr_join 30
		return
	fi
	orig=$(prlimit --pid "$EGR_PID" --nofile --noheadings -o SOFT,HARD | awk '{ print $1 ":" $2 }')
	lim=$(nofile_leaving "$EGR_PID" 0)
	prlimit --pid "$EGR_PID" --nofile="$lim:${orig#*:}"
	note "egressctl $EGR_PID: $(egr_fds "$EGR_PID") descriptors open, limit lowered to $lim (none free)"
	touch "$RW/$t/go"
	wait_secs 60 test -e "$RW/$t/done"
	prlimit --pid "$EGR_PID" --nofile="$orig"
	touch "$RW/$t/go2"
	egr_join 40
	a_rc "$t.exit" 0 "$t"
	lj "$t" http
	a_lc "$t.http.503" "CONNECT without descriptors" "$P_seq" '\["503:overloaded"\]'
	a_lc "$t.http.body" "503 body" "$P_first" '.*"body": "egressctl: out of file descriptors\\n".*'
	lj "$t" get
	a_lc "$t.get.503" "GET without descriptors" "$P_seq" '\["503:overloaded"\]'
	lj "$t" socks
	a_lc "$t.socks.reset" "SOCKS5 without descriptors" "$P_seq" '\["reset"\]'
	lj "$t" tproxy
	a_lc "$t.tproxy.reset" "transparent without descriptors" "$P_seq" '\["reset"\]'
	lj "$t" after
	a_lc "$t.service_resumes" "CONNECT once descriptors are back" "$P_seq" '\["served"\]'
	a_grep "$t.said" "$W/$t.err" "^egressctl: proxy: out of file descriptors with [0-9]+ connections open: refusing new clients"
	a_grep "$t.summary" "$W/$t.err" "^egressctl: the proxy refused 4 connections: 4 out of file descriptors\$"
	a_nogrep "$t.server_saw_none" "$SRVLOG" "local=203\\.0\\.113\\.3[0-3]:"
	sensor_none "$t.sensor" "dst net 203.0.113.30/31 or dst net 203.0.113.32/31"
}

# ======================================================================
# Relay pipes are leased while bytes move, from a bounded pool: with one
# pipe for the whole proxy (--test-pipes 1), six downloads at once (one
# not read for a while, so that its pipe stays full and the others queue) and
# a tunnel all complete, whole, each direction waiting its turn.
# ======================================================================
test_pipe_queue() {
	local t=pipe_queue i
	test_build "$t" || return 0
	{
		echo "mkdir -p \$RW/$t"
		# d1 reads slowly through a small window: its pipe stays full
		echo "$PY \$RW/$t.slow.py $WEB >\$RW/$t.slow.out 2>&1 &"
		echo "sleep 1"
		for i in 2 3 4 5 6; do
			echo "cu $t.d$i --max-time 40 http://$WEB/close/2000000 &"
		done
		echo "\$LC --tag tunnel --timeout 30 connect 3 203.0.113.40:7 &"
		echo wait
		echo "cat \$RW/$t.slow.out"
	} | script "$t"
	cat >"$RW/$t.slow.py" <<'EOF'
import os, socket, sys, time
host, port = os.environ["http_proxy"].split("//")[1].rstrip("/").rsplit(":", 1)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
s.connect((host, int(port)))
s.sendall(("GET http://%s/close/8000000 HTTP/1.1\r\nHost: %s\r\n\r\n" % (sys.argv[1], sys.argv[1])).encode())
data = s.recv(16384)
time.sleep(4)  # the proxy fills what buffers there are, then holds its pipe full
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
head, _, body = data.partition(b"\r\n\r\n")
print("pipe_queue.slow", head.split(b" ")[1].decode(), len(body))
EOF
	chmod 0644 "$RW/$t.slow.py"
	EGRESSCTL=$EGRT lrun "$t" - --test-pipes 1 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_grep "$t.d1.whole" "$W/$t.out" "^$t\\.slow 200 8000000\$"
	a_grep "$t.one_pipe" "$W/$t.err" "proxy: at most [0-9]+ connections, [0-9]+ per process, 1 relay pipes "
	a_grep "$t.queued" "$W/$t.err" "proxy: [1-9][0-9]* times a relay direction waited for one of the 1 pipes\$"
	for i in 2 3 4 5 6; do
		a_grep "$t.d$i.whole" "$W/$t.out" "^$t\\.d$i code=200 rc=0 size=2000000\$"
	done
	lj "$t" tunnel
	a_lc "$t.tunnel.served" "tunnels served" "${P_served:-}" "3"
}

# ======================================================================
# Regression: a relay pipe that cannot be made (pipe() says
# EMFILE mid-relay) closed the connection in order, so a plain-HTTP body
# that ends with the connection looked complete to the client, cut short
# (curl exit 0 with 4 KB of 2 MB). Now the connection is reset: the client
# sees an error (a tunnel was reset before too, by the close with the
# client's bytes unread); no descriptor leaks; service resumes when
# descriptors are back.
# ======================================================================
test_pipe_emfile() {
	local t=pipe_emfile orig lim before after
	script "$t" <<EOF
mkdir -p \$RW/$t; touch \$RW/$t/ready
await \$RW/$t/go
\$LC --tag tunnel connect 1 203.0.113.40:7
cu $t.close --max-time 15 http://$WEB/close/2000000
touch \$RW/$t/done
await \$RW/$t/go2
\$LC --tag after connect 1 203.0.113.42:7
cu $t.after --max-time 15 http://$WEB/close/2000000
EOF
	lrun_bg "$t" --allow "$NET" -- /bin/sh "$W/$t.sh"
	if ! wait_cmd_ready "$t" "$RW/$t/ready"; then
		fail "$t.setup" "egressctl or its CMD did not come up: $(tail -c 400 "$W/$t.err" | tr '\n' '|')"
		touch "$RW/$t/go" "$RW/$t/go2"
		egr_join 30
		return
	fi
	orig=$(prlimit --pid "$EGR_PID" --nofile --noheadings -o SOFT,HARD | awk '{ print $1 ":" $2 }')
	# two free: the client's socket and the upstream one, no pipe
	lim=$(nofile_leaving "$EGR_PID" 2)
	prlimit --pid "$EGR_PID" --nofile="$lim:${orig#*:}"
	before=$(egr_fds "$EGR_PID")
	touch "$RW/$t/go"
	wait_secs 60 test -e "$RW/$t/done"
	after=$(egr_fds "$EGR_PID")
	prlimit --pid "$EGR_PID" --nofile="$orig"
	touch "$RW/$t/go2"
	egr_join 40
	a_rc "$t.exit" 0 "$t"
	lj "$t" tunnel
	a_lc "$t.tunnel.reset" "a tunnel without a relay pipe" "$P_seq" '\["reset"\]'
	a_grep "$t.close.curl_sees_error" "$W/$t.out" "^$t\\.close code=200 rc=56 size=[0-9]+\$"
	a_eq "$t.no_leak" "egressctl's descriptors after the two connections" "$after" "$before"
	a_grep "$t.said" "$W/$t.err" "^egressctl: proxy: cannot make a relay pipe \\(0 of at most [0-9]+ exist\\): connections that need one are reset: Too many open files\$"
	lj "$t" after
	a_lc "$t.after.tunnel" "a tunnel once descriptors are back" "$P_seq" '\["served"\]'
	a_grep "$t.after.download" "$W/$t.out" "^$t\\.after code=200 rc=0 size=2000000\$"
}

# ======================================================================
# Regression: a plain-HTTP request to an upstream that
# accepts and never answers was closed with no bytes when the idle timeout
# ran out. Now the client gets 504 with x-proxy-error.
# ======================================================================
test_silent_upstream() {
	local t=silent_upstream
	script "$t" <<EOF
cu $t.idle --max-time 12 http://$WEB/silent
EOF
	lrun "$t" - --idle-timeout 2 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_grep "$t.idle.504" "$W/$t.out" "^$t\\.idle code=504 rc=0 size=[0-9]+\$"
	a_grep "$t.idle.header" "$RW/$t.idle.hdr" $'^x-proxy-error: upstream-response-timeout\r$'
	a_grep "$t.idle.body" "$RW/$t.idle.body" "^egressctl: $(re "$WEB"):80 sent no response within 2 s\$"
	a_grep "$t.server_had_it" "$SRVLOG" "^HTTP local=$(re "$WEB"):80 method=GET path=/silent len=0\$"
}

# ======================================================================
# --response-timeout: from the request fully sent to the response head.
# A silent upstream gets 504 within it; a head that comes in time is not
# cut, nor is a body slower than the timeout, nor an upload slower than it.
# ======================================================================
test_response_timeout() {
	local t=response_timeout
	head -c 100000 /dev/urandom >"$W/$t.up"
	chmod 0644 "$W/$t.up"
	script "$t" <<EOF
cu $t.silent --max-time 12 http://$WEB/silent
cu $t.slowhead --max-time 12 http://$WEB/slowhead/1
cu $t.slowbody --max-time 20 http://$WEB/slowbody/100000/5
cu $t.upload --max-time 30 --limit-rate 25k -H 'Expect:' --data-binary @$W/$t.up http://$WEB/upload
EOF
	lrun "$t" - --response-timeout 3 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_grep "$t.silent.504" "$W/$t.out" "^$t\\.silent code=504 rc=0 size=[0-9]+\$"
	a_grep "$t.silent.header" "$RW/$t.silent.hdr" $'^x-proxy-error: upstream-response-timeout\r$'
	a_grep "$t.slowhead.200" "$W/$t.out" "^$t\\.slowhead code=200 rc=0 size=[0-9]+\$"
	a_grep "$t.slowbody.200_whole" "$W/$t.out" "^$t\\.slowbody code=200 rc=0 size=100000\$"
	a_grep "$t.upload.200" "$W/$t.out" "^$t\\.upload code=200 rc=0 size=[0-9]+\$"
	a_grep "$t.upload.server_got_all" "$SRVLOG" "^HTTP local=$(re "$WEB"):80 method=POST path=/upload len=100000\$"
	a_grep "$t.verbose_says" "$W/$t.err" "timeouts: client head 10s, connect 10s, response 3s, idle 10m\$"
}

# ======================================================================
# --head-timeout (it was a literal 10 s for SOCKS5 and transparent first
# bytes) and --connect-timeout (504 with x-proxy-error)
# ======================================================================
test_timeouts() {
	local t=timeouts
	script "$t" <<EOF
\$LC --tag idle_http --timeout 6 idle-http 1 -:0
\$LC --tag idle_socks --timeout 6 idle-socks 1 a.test:443
cu $t.connect --max-time 12 http://192.0.2.10/$t
\$LC --tag connect_tunnel --timeout 12 connect 1 192.0.2.11:443
EOF
	lrun "$t" - --head-timeout 2 --connect-timeout 2 --allow "$NET" --allow 192.0.2.0/24 \
		--allow a.test -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	lj "$t" idle_http
	a_lc "$t.idle_http.closed" "a silent HTTP client, after --head-timeout 2" "$P_seq" '\["(eof|reset)"\]'
	lj "$t" idle_socks
	a_lc "$t.idle_socks.closed" "a silent SOCKS5 tunnel, after --head-timeout 2" "$P_seq" '\["(eof|reset)"\]'
	a_grep "$t.connect.504" "$W/$t.out" "^$t\\.connect code=504 rc=0 size=[0-9]+\$"
	a_grep "$t.connect.header" "$RW/$t.connect.hdr" $'^x-proxy-error: upstream-connect-timeout\r$'
	lj "$t" connect_tunnel
	a_lc "$t.connect_tunnel.504" "CONNECT to a blackhole" "$P_first" '.*"status": 504, "xpe": "upstream-connect-timeout".*'
	sensor_saw "$t.connect.sensor_saw_syn" "tcp and dst host 192.0.2.10 and dst port 80"
	a_grep "$t.verbose_says" "$W/$t.err" "timeouts: client head 2s, connect 2s, response 1m, idle 10m\$"
}

# ======================================================================
# Regression: a name lookup ran on what was left of the client's
# head timeout, which then closed the request without a word (curl: empty
# reply). The lookup is part of connecting now: 504 upstream-connect-timeout
# at --connect-timeout. (The proxy's resolver here is a blackholed address.)
# ======================================================================
test_resolve_timeout() {
	local t=resolve_timeout
	script "$t" <<EOF
cu $t.get --max-time 12 http://slow.test/$t
EOF
	# the proxy's own lookup: --no-kernel-verify keeps slow.test out of
	# NO_PROXY (else curl resolves it itself and meets the silent upstream)
	lrun "$t" - --head-timeout 2 --connect-timeout 3 --dns-upstream 192.0.2.53 --allow slow.test \
		--no-kernel-verify -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_grep "$t.504" "$W/$t.out" "^$t\\.get code=504 rc=0 size=[0-9]+\$"
	a_grep "$t.header" "$RW/$t.get.hdr" $'^x-proxy-error: upstream-connect-timeout\r$'
	sensor_saw "$t.lookup_was_sent" "udp and dst host 192.0.2.53 and dst port 53"
}

# ======================================================================
# Overload that says so: at --max-conns 2 (two tunnels held), an HTTP client
# gets 503 x-proxy-error: overloaded, a SOCKS5 client reply 0x01, a
# transparent one a reset; the two go on; nothing reaches the server; the
# summary counts them. (Before: a reset for every protocol.)
# ======================================================================
test_overload() {
	local t=overload
	script "$t" <<EOF
mkdir -p \$RW/$t
\$LC --tag held --ready \$RW/$t --peers 2 connect 2 $ECHO &
\$LC --tag http --after \$RW/$t/held.ready connect 1 203.0.113.51:7
\$LC --tag get --after \$RW/$t/held.ready get 1 203.0.113.52:80
\$LC --tag socks --after \$RW/$t/held.ready socks 1 203.0.113.53:7
\$LC --tag tproxy --after \$RW/$t/held.ready tproxy 1 203.0.113.54:7
touch \$RW/$t/done.ready
wait
EOF
	lrun "$t" - --max-conns 2 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	lj "$t" held
	a_lc "$t.held.served" "the two tunnels" "$P_served/$P_still" "2/2"
	lj "$t" http
	a_lc "$t.http.503" "CONNECT over the limit" "$P_seq" '\["503:overloaded"\]'
	a_lc "$t.http.body" "503 body" "$P_first" '.*"body": "egressctl: too many connections \(--max-conns 2\)\\n".*'
	lj "$t" get
	a_lc "$t.get.503" "GET over the limit" "$P_seq" '\["503:overloaded"\]'
	lj "$t" socks
	a_lc "$t.socks.0x01" "SOCKS5 over the limit" "$P_seq" '\["socks:1"\]'
	lj "$t" tproxy
	a_lc "$t.tproxy.reset" "transparent over the limit" "$P_seq" '\["reset"\]'
	a_grep "$t.said" "$W/$t.err" "^egressctl: proxy: 2 connections open, the limit \\(--max-conns\\): refusing new ones\$"
	a_grep "$t.summary" "$W/$t.err" "^egressctl: the proxy refused 4 connections: 4 at the limit \\(--max-conns 2\\)\$"
	a_nogrep "$t.server_saw_none" "$SRVLOG" "local=203\\.0\\.113\\.5[1-4]:"
	sensor_none "$t.sensor" "dst net 203.0.113.48/28"
}

# ======================================================================
# --max-conns-per-process: one process cannot exceed it, in any protocol,
# while another process still gets service; counted apart in the summary.
# ======================================================================
test_per_process() {
	local t=per_process
	script "$t" <<EOF
mkdir -p \$RW/$t
\$LC --tag a --ready \$RW/$t --peers 2 connect,connect,connect,get,socks,tproxy 0 203.0.113.60:7 &
\$LC --tag b --after \$RW/$t/a.ready --ready \$RW/$t --peers 2 connect,tproxy 0 $ECHO
wait
EOF
	lrun "$t" - --max-conns-per-process 2 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	lj "$t" a
	a_lc "$t.a.two_then_refused" "one process's six attempts" "$P_seq" \
		'\["served", "served", "503:overloaded", "503:overloaded", "socks:1", "reset"\]'
	a_lc "$t.a.body" "503 body" "$P_first" '.*"body": "egressctl: too many connections from this process \(--max-conns-per-process 2\)\\n".*'
	a_lc "$t.a.held" "its two tunnels, once b had its own" "$P_still" 2
	lj "$t" b
	a_lc "$t.b.served" "another process, while a holds its two" "$P_seq/$P_still" '\["served", "served"\]/2'
	a_grep "$t.summary" "$W/$t.err" "^egressctl: the proxy refused 4 connections: 4 over the limit of one process \\(--max-conns-per-process 2\\)\$"
	a_grep "$t.verbose_says" "$W/$t.err" "proxy: at most [0-9]+ connections, 2 per process, "
	a_eq "$t.server_saw_two" "echo connections to 203.0.113.60" \
		"$(grep -c 'ACCEPT echo local=203\.0\.113\.60:' "$SRVLOG")" 2
}

# ======================================================================
# A fork storm: many processes, each within its own limit, still meet the
# total limit (--max-conns 4 of 6 one-tunnel processes).
# ======================================================================
test_fork_storm() {
	local t=fork_storm i
	{
		echo "mkdir -p \$RW/$t"
		for i in $(seq 6); do
			echo "\$LC --tag p$i --ready \$RW/$t --peers 6 connect 1 $ECHO &"
		done
		echo wait
	} | script "$t"
	lrun "$t" - --max-conns 4 --max-conns-per-process 2 --allow "$NET" -- /bin/sh "$W/$t.sh"
	a_rc "$t.exit" 0 "$t"
	a_eq "$t.served" "tunnels of 6 processes" "$(lsum "$t" served)" 4
	a_eq "$t.refused" "503 overloaded" "$(lsum "$t" 503:overloaded)" 2
	a_eq "$t.nothing_else" "other outcomes" "$(lother "$t" 503:overloaded)" ""
	a_grep "$t.summary" "$W/$t.err" "^egressctl: the proxy refused 2 connections: 2 at the limit \\(--max-conns 4\\)\$"
}

# ======================================================================
# The options: durations, bad values, --help
# ======================================================================
test_options() {
	local t=options o w
	for o in "--idle-timeout 5x" "--head-timeout 0" "--response-timeout 1.5s" "--connect-timeout 25h" \
		"--max-conns-per-process 0"; do
		# shellcheck disable=SC2086 # o is two words
		"$EGRESSCTL" run $o -- /bin/true >"$W/$t.out" 2>"$W/$t.err"
		EGR_RC=$?
		a_rc "$t.${o%% *}.rejected" 2 "$t" # usage errors
		case $o in
		*1.5s) w="whole seconds only \\(from 1s to 1d\\)" ;; # refused, not rounded
		*) w="expected a" ;;
		esac
		a_grep "$t.${o%% *}.message" "$W/$t.err" "^egressctl: run: $(re "$o"): $w"
	done
	"$EGRESSCTL" run --help >"$W/$t.help" 2>&1
	a_grep "$t.help.per_process" "$W/$t.help" "^  --max-conns-per-process N  of them, one process's \\(a quarter of them,\$"
	a_grep "$t.help.head" "$W/$t.help" "^ +\\(10s\\); D is 30, 30s, 1\\.5m, 2m, 1h30m"
	a_grep "$t.help.connect" "$W/$t.help" "^  --connect-timeout D .*\\(10s; then 504\\)"
	a_grep "$t.help.response" "$W/$t.help" "\\(60s; then 504\\)"
	a_grep "$t.help.idle" "$W/$t.help" "^  --idle-timeout D .*\\(10m\\)"
	echo "echo ran" | script "$t.durations"
	lrun "$t.durations" - --head-timeout 1m30s --connect-timeout 45 --response-timeout 2m \
		--idle-timeout 1h --allow "$NET" -- /bin/sh "$W/$t.durations.sh"
	a_rc "$t.durations.exit" 0 "$t.durations"
	a_grep "$t.durations.verbose" "$W/$t.durations.err" "timeouts: client head 90s, connect 45s, response 2m, idle 1h\$"
}

ALL_TESTS="options overload per_process fork_storm silent_upstream response_timeout timeouts resolve_timeout nofile_explicit nofile_raise nofile_fit nofile_spare pipe_emfile pipe_queue"

suite_main limits.sh limits_setup "ip nsenter setpriv prlimit tcpdump ss curl timeout" "$@"
