#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of --ask: questions on egressctl's terminal answered yes,
# always, no or not at all, and every way the confined command tries to
# answer or hold them itself (TIOCSTI, its own terminal, signals, the
# session, a plain pipe). Same network as audit.sh (audit_net.sh).
#
#   tests/e2e/ask.sh build/egressctl        (as root; make e2e does this)
#   E2E_TESTS="ask ask_inject" ...   run only these test functions
#   E2E_KEEP=1 ...                   keep /tmp/egr-e2e-PID (logs, pcap)
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion, and as the last
# line "N passed, M failed".  Exit 1 if any failed, 77 if not root or no
# cgroup2.

set -u
. "$(dirname "$0")/lib.sh"
# A private mount namespace: the confined commands' /etc/resolv.conf names
# a test address, bind-mounted over the host's file for this run only.
e2e_reexec --mntns "$@"
. "$(dirname "$0")/audit_net.sh"

# ======================================================================
# --ask: questions on the controlling terminal (a pty here), answered
# y (once), a (always: a second request is not asked again), n, or not at
# all (denied after --ask-timeout); without a terminal, --ask is an error.
# ======================================================================
ask_run() {	# ask_run TAG ANSWERS CURL-ARGS...: one or two curls under --ask
	local tag=$1 ans=$2
	shift 2
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 "$ans" -- "$EGRESSCTL" run --ask \
		--ask-timeout 3 --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" \
		--allow a.example.test -- /bin/sh -c "$*" >"$W/$tag.json" 2>"$W/$tag.err"
}

ask_field() {	# ask_field TAG KEY
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$W/$1.json" "$2" 2>/dev/null
}

test_ask() {
	local t=ask out two
	two='curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/one; curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/two'

	ask_run ask_y y 'curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/y'
	out=$(ask_field ask_y out)
	a_val "$t.y.asked" "questions" "$(ask_field ask_y questions)" "^1\$"
	a_val "$t.y.prompt" "prompt" "$out" ".*allow blocked.test:80 for curl\[[0-9]+\]\? \[y\]es once / \[a\]lways this run / \[N\]o.*"
	a_val "$t.y.allowed" "curl" "$out" ".*code=200.*"

	ask_run ask_a a "$two"
	out=$(ask_field ask_a out)
	a_val "$t.a.asked_once" "questions" "$(ask_field ask_a questions)" "^1\$"
	a_val "$t.a.both_allowed" "curl" "$(echo "$out" | grep -c 'code=200')" "^2\$"

	ask_run ask_n n 'curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/n'
	out=$(ask_field ask_n out)
	a_val "$t.n.denied" "curl" "$out" ".*code=403.*"
	a_val "$t.n.line" "denial line" "$out" ".*denied curl\[[0-9]+\] → blocked.test:80 \(no rule allows it, http\).*"

	ask_run ask_none - 'curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/none'
	out=$(ask_field ask_none out)
	a_val "$t.timeout.said" "terminal" "$out" ".*no answer: denied.*"
	a_val "$t.timeout.denied" "curl" "$out" ".*code=403.*"

	# a deny rule is never asked about
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 y -- "$EGRESSCTL" run --ask --ask-timeout 3 \
		--cgroup "$(cg_name ask_d)" --user nobody --dns-upstream "$INET_DNS" --allow '**.example.test' \
		--deny b.example.test -- /bin/sh -c 'curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://b.example.test/d' \
		>"$W/ask_d.json" 2>"$W/ask_d.err"
	a_val "$t.deny_rule.not_asked" "questions" "$(ask_field ask_d questions)" "^0\$"
	a_val "$t.deny_rule.denied" "curl" "$(ask_field ask_d out)" ".*code=403.*"
	# nor at DNS, where a client without the proxy variables meets it first
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 y -- "$EGRESSCTL" run --ask --ask-timeout 3 \
		--cgroup "$(cg_name ask_dd)" --user nobody --dns-upstream "$INET_DNS" --allow '**.example.test' \
		--deny b.example.test --no-proxy-env -- /bin/sh -c \
		'curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://b.example.test/dd' \
		>"$W/ask_dd.json" 2>"$W/ask_dd.err"
	a_val "$t.deny_rule_dns.not_asked" "questions" "$(ask_field ask_dd questions)" "^0\$"
	a_val "$t.deny_rule_dns.denied" "denial line" "$(ask_field ask_dd out)" \
		".*denied curl\[[0-9]+\] → b\.example\.test \(a deny rule matches this name.*, dns\).*"

	# no terminal: a clear error, nothing runs
	in_sbx setsid "$EGRESSCTL" run --ask --user nobody --dns-upstream "$INET_DNS" -- /bin/true \
		</dev/null >"$W/ask_tty.out" 2>"$W/ask_tty.err"
	a_val "$t.no_tty.exit" "exit status" "$?" "^125\$"
	a_grep "$t.no_tty.message" "$W/ask_tty.err" "--ask needs a terminal"
}

# ======================================================================
# Regression: --ask was answered by CMD itself. CMD shared
# egressctl's terminal and typed "a" + Enter into it with TIOCSTI
# (dev.tty.legacy_tiocsti=1), approving its own request. Every other way in
# is tried too: the outer terminal by path (CMD runs as the user who owns
# it), through /proc/PID/fd of egressctl and of a process of the same user
# outside the sandbox that holds the terminal (the user's shell), TIOCLINUX.
# The question must go unanswered (denied after --ask-timeout): curl gets
# 403 and the log says deny.
# ======================================================================
ask_attack_run() {	# ask_attack_run TAG USER: askdrive never answers; CMD attacks
	local tag=$1 u=$2 owner
	owner=$(id -u "$u")
	rm -f "$RW/$tag.json" "$RW/$tag.holder"
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 --tty-owner "$owner" - -- /bin/sh -c \
		'setpriv --reuid="$1" --regid="$1" --clear-groups -- sleep 30 & echo $! >"$2"; shift 2; exec "$@"' \
		sh "$owner" "$RW/$tag.holder" "$EGRESSCTL" run --ask --ask-timeout 3 --cgroup "$(cg_name "$tag")" \
		--user "$u" --log "$W/$tag.jsonl" --dns-upstream "$INET_DNS" --allow a.example.test -- \
		/bin/sh "$W/ask_attack.sh" "$tag" >"$W/$tag.json" 2>"$W/$tag.err"
	[ -s "$RW/$tag.holder" ] && kill "$(cat "$RW/$tag.holder")" 2>/dev/null
}

ask_vector() {	# ask_vector TAG VECTOR: the attack's first result for VECTOR
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["vectors"].get(sys.argv[2], "missing"))' \
		"$RW/$1.json" "$2" 2>/dev/null || echo "no result file"
}

test_ask_inject() {
	local t=ask_inject u tag out
	script ask_attack <<'EOF'
"$PY" "$C/ttyprobe.py" attack "$RW/$1.json" 6 a "$PPID" "$RW/$1.holder" &
sleep 1
curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/inject
wait
EOF
	# control: outside egressctl, on a terminal of its own, nobody types a
	# line into it with TIOCSTI and reads that line back
	# -- where the host lets anyone use TIOCSTI at all (dev.tty.legacy_tiocsti,
	# 6.2 and later; 0 refuses it to everyone without CAP_SYS_ADMIN)
	local sti=1 yama=0
	[ -r /proc/sys/dev/tty/legacy_tiocsti ] && sti=$(cat /proc/sys/dev/tty/legacy_tiocsti)
	[ -r /proc/sys/kernel/yama/ptrace_scope ] && yama=$(cat /proc/sys/kernel/yama/ptrace_scope)
	in_sbx timeout 20 "$PY" "$C/askdrive.py" --limit 15 - -- setpriv --reuid=65534 --regid=65534 \
		--clear-groups -- "$PY" "$C/ttyprobe.py" control injected-line >"$W/${t}_ctl.json" 2>&1
	if [ "$sti" != 0 ]; then
		a_val "$t.control.tiocsti_types" "control" "$(ask_field "${t}_ctl" out)" '.*"read": "injected-line".*'
	else
		note "$t.control TIOCSTI halves skipped: dev.tty.legacy_tiocsti=0 refuses TIOCSTI on this host (the confined halves still run)"
	fi
	# control: the same attack, unconfined, as the terminal's owner (nobody):
	# TIOCSTI, the terminal by path and through the fds of another process
	# of the same user holding it all work
	tag=${t}_ctl2
	rm -f "$RW/$tag.json" "$RW/$tag.holder"
	in_sbx timeout 20 "$PY" "$C/askdrive.py" --limit 15 --tty-owner 65534 - -- /bin/sh -c \
		'setpriv --reuid=65534 --regid=65534 --clear-groups -- sleep 30 & echo $! >"$1"; sleep 0.3; exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$2" "$3" attack "$4" 0.3 x $$ "$1"' \
		sh "$RW/$tag.holder" "$PY" "$C/ttyprobe.py" "$RW/$tag.json" >"$W/$tag.out" 2>&1
	[ -s "$RW/$tag.holder" ] && kill "$(cat "$RW/$tag.holder")" 2>/dev/null
	[ "$sti" = 0 ] || a_val "$t.control.sti_dev_tty" "TIOCSTI on /dev/tty" "$(ask_vector "$tag" sti_dev_tty)" "^ok\$"
	a_val "$t.control.outer_by_path" "the terminal by path" "$(ask_vector "$tag" outer_by_path)" "^ok\$"
	# (Yama's ptrace_scope 1 and up refuse another process's fds to a
	# non-descendant of the same user: the host closes that way itself)
	if [ "$yama" = 0 ]; then
		a_val "$t.control.proc_fd_holder" "/proc/HOLDER/fd/0" "$(ask_vector "$tag" proc_fd_holder)" "^ok\$"
	else
		note "$t.control.proc_fd_holder skipped: kernel.yama.ptrace_scope=$yama refuses it on this host"
	fi

	for u in nobody root; do
		tag=${t}_$u
		ask_attack_run "$tag" "$u"
		out=$(ask_field "$tag" out)
		a_val "$t.$u.asked" "questions" "$(ask_field "$tag" questions)" "^1\$"
		a_val "$t.$u.unanswered" "terminal" "$out" ".*no answer: denied.*"
		a_val "$t.$u.curl_403" "curl" "$out" ".*code=403.*"
		a_jlog_none "$t.$u.not_allowed" "$W/$tag.jsonl" decision=allow host=blocked.test
		a_jlog "$t.$u.log_deny" "$W/$tag.jsonl" decision=deny host=blocked.test
		a_val "$t.$u.sti_dev_tty" "TIOCSTI on /dev/tty" "$(ask_vector "$tag" sti_dev_tty)" "^EPERM\$"
		a_val "$t.$u.sti_stdio" "TIOCSTI on stdio" "$(ask_vector "$tag" sti_stdio)" "^EPERM\$"
		a_val "$t.$u.tioclinux" "TIOCLINUX" "$(ask_vector "$tag" tioclinux)" "^EPERM\$"
		a_val "$t.$u.outer_by_path" "the outer terminal by path" "$(ask_vector "$tag" outer_by_path)" "^(open ENOENT|not the outer terminal)\$"
		a_val "$t.$u.other_pts" "other ptys" "$(ask_vector "$tag" other_pts)" "^none visible\$"
		a_val "$t.$u.proc_fd_egressctl" "/proc/EGRESSCTL/fd" "$(ask_vector "$tag" proc_fd_egressctl)" "^open EACCES\$"
		a_val "$t.$u.proc_fd_holder" "/proc/HOLDER/fd" "$(ask_vector "$tag" proc_fd_holder)" "^open EACCES\$"
	done
}

# ======================================================================
# Regression: what CMD prints could stand in for, hide or
# overwrite a question. CMD's output is held while a question is on the
# screen: a CMD printing MARK-n every 50 ms shows nothing between the
# question and its end (here the timeout); then its output goes on. A
# question CMD prints itself gets CMD the answer, not egressctl.
# ======================================================================
test_ask_hold() {
	local t=ask_hold out
	script "$t" <<'EOF'
"$PY" "$C/ttyprobe.py" chatter MARK 6 &
sleep 1
curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/hold
wait
EOF
	# --ask-timeout takes a duration like every other timeout (0.05m: 3s)
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 - -- "$EGRESSCTL" run --ask --ask-timeout 0.05m \
		--cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" --allow a.example.test -- \
		/bin/sh "$W/$t.sh" >"$W/$t.json" 2>"$W/$t.err"
	out=$(ask_field "$t" out)
	a_val "$t.asked" "questions" "$(ask_field "$t" questions)" "^1\$"
	a_val "$t.denied" "curl" "$out" ".*code=403.*"
	a_val "$t.chatter_before" "CMD output before the question" "$out" ".*MARK-1[^0-9].*\[N\]o.*"
	a_val "$t.chatter_after" "CMD output after the question" "$out" ".*no answer: denied.*MARK-.*"
	a_val "$t.held" "CMD output between the question and its end" \
		"$(printf '%s' "$out" | "$PY" -c 'import re,sys; s=sys.stdin.read(); m=re.search(r"\[N\]o(.*?)no answer: denied", s, re.S); print("no question" if not m else ("MARK inside" if "MARK" in m.group(1) else "clean"))')" "^clean\$"

	script "${t}_forge" <<'EOF'
"$PY" "$C/ttyprobe.py" forge blocked.test:80
curl -sS -m 20 -o /dev/null -w "code=%{http_code}\n" http://blocked.test/forge
EOF
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 a,- -- "$EGRESSCTL" run --ask --ask-timeout 3 \
		--cgroup "$(cg_name "${t}_f")" --user nobody --dns-upstream "$INET_DNS" --allow a.example.test -- \
		/bin/sh "$W/${t}_forge.sh" >"$W/${t}_f.json" 2>"$W/${t}_f.err"
	out=$(ask_field "${t}_f" out)
	a_val "$t.forge.cmd_got_answer" "the forged question's answer" "$out" ".*forged-answer=a[^a-z].*"
	a_val "$t.forge.real_asked" "questions (forged + real)" "$(ask_field "${t}_f" questions)" "^2\$"
	a_val "$t.forge.denied" "curl" "$out" ".*code=403.*"
}

# ======================================================================
# --ask: CMD's terminal is a pty egressctl relays: CMD
# leads a session of its own on it, sees the terminal's size and its
# changes (SIGWINCH), reads what is typed up to ^D (EOF), and its exit
# status comes through. The terminal is back in cooked mode afterwards,
# also when egressctl is killed by a signal.
# ======================================================================
test_ask_tty() {
	local t=ask_tty out
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 --on READY resize:40:100 \
		--on cat-start send:68656c6c6f0a04 - -- "$EGRESSCTL" run --ask --cgroup "$(cg_name "$t")" \
		--user nobody --dns-upstream "$INET_DNS" -- "$PY" "$C/ttyprobe.py" session \
		>"$W/$t.json" 2>"$W/$t.err"
	out=$(ask_field "$t" out)
	a_val "$t.exit_status" "exit status" "$(ask_field "$t" rc)" "^7\$"
	a_val "$t.stdio_is_a_tty" "CMD's terminal" "$out" '.*"isatty": \[true, true, true\].*'
	a_val "$t.ttyname" "CMD's terminal" "$out" '.*"ttyname": "/dev/pts/0".*'
	a_val "$t.own_session" "CMD's terminal" "$out" '.*"session_leader": true.*'
	a_val "$t.size" "CMD's terminal" "$out" '.*"size": "24x80".*'
	a_val "$t.sigwinch" "CMD's terminal" "$out" '.*size2=40x100.*'
	a_val "$t.eof" "CMD's stdin" "$out" '.*cat-done=hello[^a-z].*'
	a_val "$t.modes_restored" "the terminal's modes afterwards" "$(ask_field "$t" modes_restored)" "^True\$"

	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 --on SIGNOW signal:12 - -- "$EGRESSCTL" run \
		--ask --cgroup "$(cg_name "${t}_sig")" --user nobody --dns-upstream "$INET_DNS" -- \
		/bin/sh -c 'echo SIGNOW; sleep 20' >"$W/${t}_sig.json" 2>"$W/${t}_sig.err"
	a_val "$t.signal.killed" "egressctl's status" "$(ask_field "${t}_sig" rc)" "^-12\$"
	a_val "$t.signal.modes_restored" "the terminal's modes after SIGUSR2" \
		"$(ask_field "${t}_sig" modes_restored)" "^True\$"
}

# ======================================================================
# --ask: a program outside that takes commands from
# CMD's uid and types into the terminal it shows -- a tmux or screen server
# (send-keys, stuff), the X server (XTEST) -- would answer for CMD when
# egressctl runs inside it. Their socket directories are covered in the
# sandbox: a listener of CMD's uid there is reachable outside, not inside.
# ======================================================================
test_ask_session() {
	local t=ask_session d made=() sock out i n=0
	for d in /tmp/tmux-65534 /tmp/.X11-unix; do
		if [ ! -e "$d" ]; then
			mkdir "$d" && made+=("$d") || { fail "$t.setup" "mkdir $d"; return 0; }
			if [ "$d" = /tmp/.X11-unix ]; then chmod 1777 "$d"; else chmod 0700 "$d" && chown 65534:65534 "$d"; fi
		fi
		sock=$d/egr-e2e-$$
		in_sbx setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PY" -c \
			'import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(60)' \
			"$sock" 2>"$W/$t.listen.err" &
		PIDS+=($!)
		wait_for 5 test -S "$sock" || { fail "$t.setup" "no listener on $sock: $(cat "$W/$t.listen.err")"; continue; }
		# control: the same uid, outside the sandbox, reaches it
		jv "$(probe_nobody unix_path "$sock")"
		a_ok "$t.control.$( [ "$d" = /tmp/.X11-unix ] && echo x11 || echo tmux)"
	done
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 - -- "$EGRESSCTL" run --ask \
		--cgroup "$(cg_name "$t")" --user nobody --dns-upstream "$INET_DNS" -- /bin/sh -c \
		"$PROBE unix_path /tmp/tmux-65534/egr-e2e-$$; $PROBE unix_path /tmp/.X11-unix/egr-e2e-$$" \
		>"$W/$t.json" 2>"$W/$t.err"
	out=$(ask_field "$t" out | tr -d '\r' | grep '^{')
	for d in tmux x11; do
		n=$((n + 1))
		jv "$(printf '%s\n' "$out" | sed -n "${n}p")"
		a_errno "$t.hidden.$d" ENOENT
	done
	for d in /tmp/tmux-65534 /tmp/.X11-unix; do rm -f "$d/egr-e2e-$$"; done
	for i in "${made[@]}"; do rmdir "$i" 2>/dev/null; done
}

# ======================================================================
# --ask with none of egressctl's stdio on the terminal:
# the terminal only asks (cooked mode: it echoes, ^D says no) and CMD gets
# no terminal at all, not even /dev/tty.
# ======================================================================
ask_plain_run() {	# ask_plain_run TAG ASKDRIVE-OPTIONS...: CMD's output in $W/TAG.cmd
	local tag=$1
	shift
	in_sbx timeout 40 "$PY" "$C/askdrive.py" --limit 35 "$@" -- /bin/sh -c \
		'out=$1; shift; exec "$@" </dev/null >"$out" 2>&1' sh "$W/$tag.cmd" "$EGRESSCTL" run --ask \
		--ask-timeout 10 --cgroup "$(cg_name "$tag")" --user nobody --dns-upstream "$INET_DNS" -- \
		/bin/sh "$W/ask_plain.sh" >"$W/$tag.json" 2>"$W/$tag.err"
}

test_ask_plain() {
	local t=ask_plain
	script ask_plain <<'EOF'
if (exec 3<>/dev/tty) 2>/dev/null; then echo ctty=yes; else echo ctty=no; fi
curl -sS -m 20 -o /dev/null -w "first=%{http_code}\n" http://blocked.test/plain1
curl -sS -m 20 -o /dev/null -w "second=%{http_code}\n" http://b.example.test/plain2
EOF
	ask_plain_run "${t}_y" y,y
	a_val "$t.y.asked" "questions" "$(ask_field "${t}_y" questions)" "^2\$"
	a_grep "$t.y.no_terminal" "$W/${t}_y.cmd" "^ctty=no\$"
	a_grep "$t.y.allowed" "$W/${t}_y.cmd" "^first=200\$"
	a_val "$t.y.modes" "the terminal's modes afterwards" "$(ask_field "${t}_y" modes_restored)" "^True\$"
	# ^D answers the first question no, and the terminal still asks
	ask_plain_run "${t}_eof" --on "[N]o" send:04 -,y
	a_val "$t.eof.asked_twice" "questions" "$(ask_field "${t}_eof" questions)" "^2\$"
	a_grep "$t.eof.denied" "$W/${t}_eof.cmd" "^first=403\$"
	a_grep "$t.eof.then_allowed" "$W/${t}_eof.cmd" "^second=200\$"
}


ALL_TESTS="ask ask_inject ask_hold ask_tty ask_session ask_plain"

suite_main ask.sh audit_setup "ip nsenter setpriv unshare mount tcpdump ss curl dig dnsmasq openssl timeout" "$@"
