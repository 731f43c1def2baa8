#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of `egressctl run` without sudo, through the daemon's
# user socket (daemon/usersock.c, cli/client.c), as hostile unprivileged
# users: who may connect, what they may ask, that CMD runs as them in the
# same sandbox as root's `run` gives (escapes refused, each with its
# control half and the leak sensor), that a run is theirs alone to stop,
# that the client going away ends it, and that bad requests leave the
# service serving.
#
#   sudo tests/e2e/nosudo.sh build/egressctl   (make e2e does this)
#
# The suite makes a group and two users of its own (useradd/groupadd,
# removed by name at exit); the daemon runs in the sandbox netns with no
# target, its user socket in $W. For the kernel-side escapes, a copy of
# python3 with file capabilities, in $W and executable by that group
# alone, removed by the test that made it (cap_python).

set -u
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"

ALL_TESTS="noservice basic limits refused ask ask_inject notgroup hostile policy_fd upstream_fd secret otlp summary_fd suggest_fd escapes ceiling_deny stop gone stuck signal_other escapes_more escapes_net escapes_direct escapes_sameuid escapes_bus unix listeners escapes_kernel limit pending reload ceiling_allow peruser audit_allowed status log root_view syslog confined dupname unit restart restart_gone restart_impostor asan"
G=egrns$$		# the allowed group
UA=egrns$$a		# a member
UB=egrns$$b		# not a member
USOCK=$W/user.sock

# after e2e_cleanup: userdel refuses a user whose processes still run
nosudo_cleanup() {
	e2e_cleanup
	userdel "$UA" 2>/dev/null
	userdel "$UB" 2>/dev/null
	userdel "${UA}c" 2>/dev/null
	groupdel "$G" 2>/dev/null
}

nosudo_setup() {
	trap nosudo_cleanup EXIT
	groupadd "$G" && useradd -M -N -g "$G" -s /bin/sh "$UA" &&
		useradd -M -N -g nogroup -s /bin/sh "$UB" || { echo "cannot make the test users"; return 1; }
	e2e_base_setup || return 1
	servers_setup || return 1
	printf '{"groups": ["%s"], "max_runs_per_user": 2, "audit": false, "deny": ["blocked-%s.test"]}\n' \
		"$G" $$ >"$W/users.json"
	# no target: a daemon for users' runs alone
	start_daemon
}

# the daemon, for users' runs alone, in the sandbox netns; DPID
start_daemon() {
	rm -f "$USOCK"
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/control" \
		--user-socket "$USOCK" --users "$W/users.json" >>"$W/daemon.out" 2>>"$W/daemon.err" &
	DPID=$!
	PIDS+=("$DPID")
	wait_for 20 test -S "$USOCK" || { echo "no user socket: $(tail -c 400 "$W/daemon.err")"; return 1; }
}

# as USER CMD...: CMD as USER (its account's groups) in the sandbox netns
as() {
	local u=$1
	shift
	timeout -k 2 40 nsenter --net="$NS_SBX" setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		env EGRESSCTL_USER_SOCKET="$USOCK" "$@"
}

# urun TAG USER ARGS...: `egressctl run ARGS` as USER; $W/TAG.out/.err, EGR_RC
urun() {
	local tag=$1 u=$2
	shift 2
	(cd "$RW" && as "$u" "$EGRESSCTL" run "$@") >"$W/$tag.out" 2>"$W/$tag.err" </dev/null
	EGR_RC=$?
}

# usock TAG USER MODE ARGS...: the hostile client; its answer in $W/TAG.out
usock() {
	local tag=$1 u=$2
	shift 2
	(cd "$RW" && as "$u" "$PY" "$C/usock.py" "$USOCK" "$@") >"$W/$tag.out" 2>"$W/$tag.err"
}

# without the service: one line on the ways to get it, nothing run
test_noservice() {
	local t=noservice
	(cd "$RW" && as "$UA" env EGRESSCTL_USER_SOCKET="$W/none.sock" "$EGRESSCTL" run -- id -u) \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null
	EGR_RC=$?
	a_rc "$t.status" 125 "$t"
	a_grep "$t.said" "$W/$t.err" '^egressctl: run needs root .*use sudo, or have the service run \(egressctl daemon --user-socket .*none\.sock\) and join its group'
	a_eq "$t.one_line" "lines on stderr" "$(wc -l <"$W/$t.err")" 1
	a_nogrep "$t.not_run" "$W/$t.out" .
}

# 1. CMD runs as the caller (uid, groups), in a fresh cgroup, with the
# environment and working directory of the client; its exit status and
# the summary come back.
test_basic() {
	local t=basic
	urun "$t" "$UA" -- sh -c 'id -u; id -g; pwd; echo "foo=$FOO"; cat /proc/self/cgroup; exit 7'
	a_rc "$t.status" 7 "$t"
	a_eq "$t.uid" "id -u in CMD" "$(sed -n 1p "$W/$t.out")" "$(id -u "$UA")"
	a_eq "$t.gid" "id -g in CMD" "$(sed -n 2p "$W/$t.out")" "$(id -g "$UA")"
	a_eq "$t.cwd" "CMD's working directory" "$(sed -n 3p "$W/$t.out")" "$RW"
	a_grep "$t.cgroup" "$W/$t.out" '^0::/egressctl/run-[0-9]+$'
	a_grep "$t.summary" "$W/$t.err" '^egressctl: summary'
	FOO=bar urun "${t}_env" "$UA" -- sh -c 'echo "foo=$FOO"; grep -c NoNewPrivs:.*1 /proc/self/status'
	a_grep "$t.env" "$W/${t}_env.out" '^foo=bar$'
	a_grep "$t.no_new_privs" "$W/${t}_env.out" '^1$'
	# nothing of the service's reaches CMD: its descriptors are 0, 1, 2
	# (ls alone: in a pipeline the shell holds the pipe's end while ls
	# looks, and ls saw it now and then: "0 1 2 3")
	urun "${t}_fds" "$UA" -- sh -c 'ls /proc/$$/fd'
	a_eq "$t.fds" "CMD's descriptors" "$(tr '\n' ' ' <"$W/${t}_fds.out")" "0 1 2 "
	# the client's stdin is CMD's
	echo "in-$$" | (cd "$RW" && as "$UA" "$EGRESSCTL" run -- cat) >"$W/${t}_in.out" 2>"$W/${t}_in.err"
	a_grep "$t.stdin" "$W/${t}_in.out" "^in-$$\$"
}

# CMD gets the caller's umask and rlimits, not the daemon's (cli/client.c
# sends them, run applies them in CMD's child before exec); a hard limit
# above the daemon's is lowered to it, not granted
test_limits() {
	local t=limits hn rl
	hn=$(ulimit -Hn)
	(cd "$RW" && as "$UA" sh -c "umask 0027; ulimit -n 123; ulimit -f 2048; exec $EGRESSCTL run -- \
		sh -c 'umask; grep -E \"^Max (open files|file size)\" /proc/self/limits'") \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null
	EGR_RC=$?
	a_rc "$t.status" 0 "$t"
	a_grep "$t.umask" "$W/$t.out" '^0?027$'
	a_grep "$t.nofile" "$W/$t.out" '^Max open files +123 +123 '
	a_grep "$t.fsize_hard" "$W/$t.out" '^Max file size +[0-9a-z]+ +1048576 '
	# a request asking for unlimited everything: the daemon's hard limits
	rl=$("$PY" -c 'import json; print(json.dumps([[-1, -1]] * 16))')
	usock "${t}_inf" "$UA" raw '{"args": ["--", "sh", "-c", "grep \"^Max open files\" /proc/self/limits"], "env": ["PATH=/usr/bin:/bin"], "nfds": 4, "umask": 0, "rlimits": '"$rl"'}'
	a_grep "$t.hard_kept" "$W/${t}_inf.out" "^Max open files +$hn +$hn "
	usock "${t}_bad" "$UA" raw '{"args": ["--", "id"], "env": [], "nfds": 4, "umask": 512, "rlimits": '"$rl"'}'
	a_grep "$t.bad_umask" "$W/${t}_bad.out" 'malformed request: umask'
	usock "${t}_opt" "$UA" args '["--service-limits", "000 0:0", "--", "id"]'
	a_grep "$t.option_refused" "$W/${t}_opt.out" 'refused through the service: --service-env-fd, --service-limits, --service-ceiling, --service-log-fd, --service-conn-fd and --service-socket'
}

# 2. what would widen the sandbox or have root open a path is refused,
# whatever its spelling; nothing is created
test_refused() {
	local t=refused o
	for o in "--user=root" "--allow-sudo" "--cgroup=x" "--audit" \
		"--allow-unix=/run/docker.sock"; do
		urun "$t" "$UA" "$o" -- id -u
		a_rc "$t.${o%%=*}.status" 2 "$t"
		a_grep "$t.${o%%=*}.said" "$W/$t.err" 'refused through the service'
		a_nogrep "$t.${o%%=*}.not_run" "$W/$t.out" .
	done
	# --log FILE is opened by the client as the user: /etc is not theirs
	urun "${t}_log" "$UA" --log /etc/egrns-$$ -- id -u
	a_rc "$t.log_etc.status" 125 "${t}_log"
	a_eq "$t.log_etc.not_created" "/etc/egrns-$$" "$(test -e /etc/egrns-$$ && echo exists)" ""
}

# 3. a user outside the allowed groups: the socket's mode refuses the
# connection; with the mode opened, the daemon's own check refuses them
test_notgroup() {
	local t=notgroup
	urun "$t" "$UB" -- id -u
	a_rc "$t.status" 125 "$t"
	a_grep "$t.said" "$W/$t.err" 'refused you \(Permission denied\)'
	chmod 0666 "$USOCK"
	urun "${t}_open" "$UB" -- id -u
	chmod 0660 "$USOCK"
	a_rc "$t.daemon.status" 125 "${t}_open"
	a_grep "$t.daemon.said" "$W/${t}_open.err" "$UB is in none of the groups allowed"
	a_nogrep "$t.daemon.not_run" "$W/${t}_open.out" .
}

# 4. requests a real client would not send: each refused in words, and the
# service goes on serving
test_hostile() {
	local t=hostile m
	usock "${t}_log" "$UA" args '["--log", "/tmp/egrns-'$$'", "--", "id"]'
	a_grep "$t.log_path" "$W/${t}_log.out" 'refused through the service: --log other than'
	a_eq "$t.log_path.not_created" "/tmp/egrns-$$" "$(test -e /tmp/egrns-$$ && echo exists)" ""
	usock "${t}_pol" "$UA" args '["--policy=/root/x", "--", "id"]'
	a_grep "$t.policy_path" "$W/${t}_pol.out" 'refused through the service: --policy other than'
	usock "${t}_fd" "$UA" args '["--log", "fd:2", "--", "id"]'
	a_grep "$t.log_fd_stdio" "$W/${t}_fd.out" 'refused through the service: --log'
	usock "${t}_envfd" "$UA" args '["--service-env-fd", "3", "--", "id"]'
	a_grep "$t.env_fd" "$W/${t}_envfd.out" 'refused through the service: --service-env-fd'
	usock "${t}_user" "$UA" args '["--us=root", "--", "id"]'
	a_grep "$t.abbrev" "$W/${t}_user.out" '"error"'
	usock "${t}_garbage" "$UA" raw '{"args": ["--", "id"'
	a_grep "$t.truncated" "$W/${t}_garbage.out" 'malformed request: JSON'
	usock "${t}_nul" "$UA" raw '{"args": ["--", "i\u0000d"], "env": [], "nfds": 4}'
	a_grep "$t.nul" "$W/${t}_nul.out" 'malformed request: .*u0000'
	usock "${t}_key" "$UA" raw '{"args": ["--", "id"], "env": [], "nfds": 4, "uid": 0}'
	a_grep "$t.unknown_key" "$W/${t}_key.out" 'unknown key'
	usock "${t}_nofds" "$UA" nofds '{"args": ["--", "id"], "env": [], "nfds": 4}'
	a_grep "$t.no_fds" "$W/${t}_nofds.out" 'descriptors, 0 came'
	usock "${t}_fds" "$UA" fds 48 '["--", "id"]'
	a_grep "$t.too_many_fds" "$W/${t}_fds.out" 'cut short'
	usock "${t}_big" "$UA" big
	a_grep "$t.oversized" "$W/${t}_big.out" 'cut short|"send": false'
	for m in "${t}_garbage" "${t}_nofds" "${t}_big"; do
		a_nogrep "$t.$m.no_run" "$W/$m.out" '"exit": *0'
	done
	urun "${t}_after" "$UA" -- id -u
	a_rc "$t.still_serving" 0 "${t}_after"
	kill -0 "$DPID" 2>/dev/null && ok "$t.daemon_alive" || fail "$t.daemon_alive" "the daemon is gone"
}

# 5. --policy FILE is read through the client's descriptor: a file the user
# may read works, one they may not is refused before anything runs
test_policy_fd() {
	local t=policy_fd
	echo '{"allow": ["example.test"]}' >"$RW/policy.json"
	chmod 0644 "$RW/policy.json"
	echo '{"allow": ["example.test"]}' >"$W/secret.json"
	chmod 0600 "$W/secret.json"
	urun "$t" "$UA" --policy "$RW/policy.json" -v -- true
	a_rc "$t.readable" 0 "$t"
	urun "${t}_secret" "$UA" --policy "$W/secret.json" -- true
	a_rc "$t.unreadable.status" 125 "${t}_secret"
	a_grep "$t.unreadable.said" "$W/${t}_secret.err" 'Permission denied'
	# a file that does not parse: said by the client, by the name given,
	# as root's run says it (not the descriptor it would have sent)
	echo '{"allow": ["example.test",]}' >"$RW/bad-$$.json"
	chmod 0644 "$RW/bad-$$.json"
	urun "${t}_bad" "$UA" --policy "$RW/bad-$$.json" -- true
	a_rc "$t.bad.status" 125 "${t}_bad"
	a_grep "$t.bad.named" "$W/${t}_bad.err" "^egressctl: --policy $(re "$RW/bad-$$.json"): .*JSON syntax error at line 1"
	a_nogrep "$t.bad.no_descriptor" "$W/${t}_bad.err" 'fd:[0-9]'
	rm -f "$RW/bad-$$.json"
}

# --upstream-proxy-auth FILE (and --upstream-ca, --ca) through the
# client's descriptor: a credentials file of the user's own (mode 600)
# reaches the upstream proxy (an echo of the test internet, which logs
# what egressctl sends it: the request with its Proxy-Authorization);
# root's file is refused by the client's open as the user, and a raw path
# by the service (the service never reads a file for the user)
test_upstream_fd() {
	local t=upstream_fd b64
	printf 'alice-%s:s3cret\n' $$ >"$RW/cred-$$"
	chown "$UA" "$RW/cred-$$"
	chmod 0600 "$RW/cred-$$"
	b64=$(printf 'alice-%s:s3cret' $$ | base64)
	urun "$t" "$UA" --upstream-proxy http://198.18.0.1:7011 --upstream-proxy-auth "$RW/cred-$$" \
		--allow up-$$.test -- curl -s -o /dev/null -m 5 "http://up-$$.test/fd"
	a_grep "$t.at_upstream" "$W/inet.log" "^Proxy-Authorization: Basic $(re "$b64")"
	a_grep "$t.request_at_upstream" "$W/inet.log" "GET http://up-$$\\.test/fd HTTP/1\\.1"
	a_nogrep "$t.not_on_terminal" "$W/$t.err" "$(re "$b64")|s3cret"
	printf 'root:n0pe\n' >"$W/cred-root"
	chmod 0600 "$W/cred-root"
	urun "${t}_root" "$UA" --upstream-proxy http://198.18.0.1:7011 --upstream-proxy-auth "$W/cred-root" \
		-- true
	a_rc "$t.root_file.status" 125 "${t}_root"
	a_grep "$t.root_file.said" "$W/${t}_root.err" "--upstream-proxy-auth $(re "$W/cred-root"): Permission denied"
	usock "${t}_path" "$UA" args '["--upstream-proxy", "http://198.18.0.1:7011", "--upstream-proxy-auth", "'"$W/cred-root"'", "--", "id"]'
	a_grep "$t.path_refused" "$W/${t}_path.out" 'refused through the service: --upstream-proxy-auth other than a file the client opened'
	usock "${t}_ca" "$UA" args '["--ca", "/etc/c.pem,/etc/k.pem", "--", "id"]'
	a_grep "$t.ca_path_refused" "$W/${t}_ca.out" 'refused through the service: --ca other than two files the client opened'
	# --ca CERT,KEY of the user's (mode 600): read through the client's
	# descriptors (the pair swapped: the first is no certificate, said)
	as "$UA" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj "/CN=egrns-ca-$$" -addext basicConstraints=critical,CA:TRUE \
		-keyout "$RW/ca-$$.key" -out "$RW/ca-$$.pem" >"$W/$t.openssl" 2>&1
	chmod 0600 "$RW/ca-$$.key" "$RW/ca-$$.pem"
	urun "${t}_cafd" "$UA" --ca "$RW/ca-$$.pem,$RW/ca-$$.key" --allow x-$$.test -- true
	a_rc "$t.ca.taken" 0 "${t}_cafd"
	urun "${t}_caswap" "$UA" --ca "$RW/ca-$$.key,$RW/ca-$$.pem" --allow x-$$.test -- true
	a_rc "$t.ca.swapped.status" 125 "${t}_caswap"
	a_grep "$t.ca.swapped.said" "$W/${t}_caswap.err" "--ca: no PEM certificate in the first file"
	rm -f "$RW/cred-$$" "$RW/ca-$$.key" "$RW/ca-$$.pem"
}

# --secret through the service: the client reads each value as the user
# (env:VAR from its environment, file:/PATH, command:CMDLINE) and sends it
# in a memfd; CMD gets the placeholder (its environment has neither the
# value nor the env: variable), the proxy swaps it in on an HTTPS request
# to the secret's host, inspected (a TLS server of the test internet,
# whose CA reaches the run as --upstream-ca through the client too, logs
# the Authorization it got), and the value is on no line of the user's
# terminal. The service never reads a source for the user: a raw request
# naming one is refused, root's 0600 file is refused by the client's open.
test_secret() {
	local t=secret k v src h=api-$$.test
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$W/sca.key" -out "$RW/sca.crt" -subj "/CN=egrns test CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
		>"$W/$t.openssl" 2>&1 &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$W/ssrv.key" -out "$W/ssrv.csr" -subj "/CN=$h" >>"$W/$t.openssl" 2>&1 &&
		printf 'subjectAltName=DNS:%s\n' "$h" >"$W/ssrv.ext" &&
		openssl x509 -req -in "$W/ssrv.csr" -CA "$RW/sca.crt" -CAkey "$W/sca.key" \
			-CAcreateserial -days 2 -extfile "$W/ssrv.ext" -out "$W/ssrv.crt" >>"$W/$t.openssl" 2>&1 ||
		{ fail "$t.certs" "$(tail -c 300 "$W/$t.openssl")"; return; }
	chmod 0644 "$RW/sca.crt"
	nsenter --net="$NS_INET" "$PY" "$C/webservers.py" --log "$W/$t.web" --bind "$INET_ANSWER" \
		--tls 8443 --cert "$W/ssrv.crt" --key "$W/ssrv.key" >"$W/$t.web.ready" 2>&1 &
	PIDS+=($!)
	wait_for 10 grep -qs READY "$W/$t.web.ready" || { fail "$t.server" "$(cat "$W/$t.web.ready")"; return; }
	printf 'v-file-%s\n' $$ >"$RW/sec-$$"
	chown "$UA" "$RW/sec-$$"
	chmod 0600 "$RW/sec-$$"
	for k in env file command; do
		v="v-$k-$$"
		case $k in
		env) src="env:REAL_$$" ;;
		file) src="file:$RW/sec-$$" ;;
		command) src="command:printf %s v-command-$$" ;;
		esac
		(cd "$RW" && as "$UA" env "REAL_$$=v-env-$$" "$EGRESSCTL" run --secret "TOK=$src@$h" \
			--allow "$h:8443" --dns-upstream 198.18.0.1 --upstream-ca "$RW/sca.crt" -- \
			sh -c "tr '\\0' '\\n' </proc/self/environ >$RW/env-$k-$$; curl -s -o /dev/null -m 10 -H \"Authorization: Bearer \$TOK\" https://$h:8443/$k") \
			>"$W/${t}_$k.out" 2>"$W/${t}_$k.err" </dev/null
		a_grep "$t.$k.swapped_at_host" "$W/$t.web" "^HTTPS .*target=/$k .*auth=Bearer_$v "
		a_grep "$t.$k.cmd_placeholder" "$RW/env-$k-$$" "^TOK=EGRESSCTL_SECRET_TOK_[0-9a-f]+\$"
		a_nogrep "$t.$k.cmd_no_value" "$RW/env-$k-$$" "$v"
		[ $k = env ] && a_nogrep "$t.env.cmd_no_variable" "$RW/env-$k-$$" "^REAL_$$="
		a_nogrep "$t.$k.terminal_no_value" "$W/${t}_$k.err" "$v"
		rm -f "$RW/env-$k-$$"
	done
	# a policy file's secrets: the client reads each source as the user
	# (env:, file:, command: as the user: id -u is theirs), and the file
	# itself, from a pipe too; the run takes the values it sent
	printf '{"allow": ["%s:8443"], "secrets": {"PENV": {"from": "env:PREAL_%s", "hosts": ["%s"]}, "PFILE": {"from": "file:%s", "hosts": ["%s"]}, "PCMD": {"from": "command:id -u", "hosts": ["%s"]}}}\n' \
		"$h" $$ "$h" "$RW/sec-$$" "$h" "$h" >"$RW/pol-$$.json"
	chmod 0644 "$RW/pol-$$.json"
	local pcmd="tr '\\0' '\\n' </proc/self/environ >$RW/env-pol-$$; for k in PENV PFILE PCMD; do eval v=\\\$\$k; curl -s -o /dev/null -m 10 -H \"Authorization: Bearer \$v\" https://$h:8443/pol-\$k; done"
	(cd "$RW" && as "$UA" env "PREAL_$$=v-penv-$$" sh -c "cat $RW/pol-$$.json | exec \"\$0\" \"\$@\"" \
		"$EGRESSCTL" run --policy /dev/stdin --dns-upstream 198.18.0.1 --upstream-ca "$RW/sca.crt" -- \
		sh -c "$pcmd") >"$W/${t}_pol.out" 2>"$W/${t}_pol.err" </dev/null
	EGR_RC=$?
	a_rc "$t.policy.status" 0 "${t}_pol"
	a_grep "$t.policy.env_swapped" "$W/$t.web" "^HTTPS .*target=/pol-PENV .*auth=Bearer_v-penv-$$ "
	a_grep "$t.policy.file_swapped" "$W/$t.web" "^HTTPS .*target=/pol-PFILE .*auth=Bearer_v-file-$$ "
	a_grep "$t.policy.command_as_user" "$W/$t.web" "^HTTPS .*target=/pol-PCMD .*auth=Bearer_$(id -u "$UA") "
	a_grep "$t.policy.cmd_placeholder" "$RW/env-pol-$$" "^PFILE=EGRESSCTL_SECRET_PFILE_[0-9a-f]+\$"
	a_nogrep "$t.policy.cmd_no_value" "$RW/env-pol-$$" "v-penv-$$|v-file-$$|^PREAL_$$="
	a_nogrep "$t.policy.terminal_no_value" "$W/${t}_pol.err" "v-penv-$$|v-file-$$"
	rm -f "$RW/env-pol-$$"
	printf 'root-secret\n' >"$W/sec-root"
	chmod 0600 "$W/sec-root"
	# a policy file naming root's file: the client's read is refused;
	# sent raw (no --client-secret) the run reads nothing and refuses it
	printf '{"allow": ["%s:8443"], "secrets": {"TOK": {"from": "file:%s", "hosts": ["%s"]}}}\n' \
		"$h" "$W/sec-root" "$h" >"$RW/polroot-$$.json"
	chmod 0644 "$RW/polroot-$$.json"
	urun "${t}_polroot" "$UA" --policy "$RW/polroot-$$.json" -- true
	a_rc "$t.policy_root.status" 125 "${t}_polroot"
	a_grep "$t.policy_root.said" "$W/${t}_polroot.err" "secret TOK \\(file:$(re "$W/sec-root")\\): Permission denied"
	usock "${t}_polraw" "$UA" files '["--policy", "fd:4", "--", "true"]' "$RW/polroot-$$.json"
	a_grep "$t.policy_raw.answered" "$W/${t}_polraw.out" '"exit": *125'
	a_grep "$t.policy_raw.refused" "$W/${t}_polraw.err" 'secret TOK \(.*\): through the service, its value comes from the client'
	usock "${t}_polfd" "$UA" files '["--policy", "fd:4", "--client-secret", "TOK=fd:3", "--", "true"]' "$RW/polroot-$$.json"
	a_grep "$t.client_secret_fd3.refused" "$W/${t}_polfd.out" 'refused through the service: --client-secret other than NAME=fd:N'
	rm -f "$RW/pol-$$.json" "$RW/polroot-$$.json"
	urun "${t}_root" "$UA" --secret "TOK=file:$W/sec-root@$h" -- true
	a_rc "$t.root_file.status" 125 "${t}_root"
	a_grep "$t.root_file.said" "$W/${t}_root.err" "--secret TOK \\(file:$(re "$W/sec-root")\\): Permission denied"
	usock "${t}_raw" "$UA" args '["--secret", "TOK=file:'"$W/sec-root"'@api.test", "--", "id"]'
	a_grep "$t.raw_source_refused" "$W/${t}_raw.out" 'refused through the service: --secret other than NAME=fd:N@HOST'
	# a placeholder file root would create for the user: refused, none made
	urun "${t}_ph" "$UA" --secret "TOK=file:$RW/sec-$$@$h" --secret-placeholders "/etc/egrns-ph-$$" -- true
	a_grep "$t.placeholders_refused" "$W/${t}_ph.err" 'refused through the service: --secret-placeholders'
	a_eq "$t.placeholders.not_created" "/etc/egrns-ph-$$" "$(test -e "/etc/egrns-ph-$$" && echo exists)" ""
	rm -f "/etc/egrns-ph-$$" "$RW/sec-$$" "$RW/sca.crt"
}

# --log otlp:URL through the service: the run sends the user's decision
# records to their collector (a connection they could make themselves),
# over TLS checked against --log-ca, a file the client opened as the
# user; root's 0600 CA file is refused by the client's open
test_otlp() {
	local t=otlp port=14331 a d=$RW/otlp-pki-$$
	mkdir -p "$d"
	if ! (cd "$d" &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj /CN=egrns-otlp-ca -keyout "$W/otlp-ca.key" -out ca.pem &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=collector \
			-keyout "$W/otlp-srv.key" -out "$W/otlp-srv.csr" &&
		printf 'subjectAltName=IP:127.0.0.1\n' >"$W/otlp.ext" &&
		openssl x509 -req -in "$W/otlp-srv.csr" -CA ca.pem -CAkey "$W/otlp-ca.key" -CAcreateserial \
			-days 2 -extfile "$W/otlp.ext" -out "$W/otlp-srv.pem") >"$W/$t.pki" 2>&1; then
		fail "$t.pki" "openssl: $(tail -3 "$W/$t.pki" | tr '\n' '|')"
		return
	fi
	chmod 0755 "$d"
	chmod 0644 "$d/ca.pem"
	nsenter --net="$NS_SBX" "$PY" "$C/logrecv.py" otlp 127.0.0.1 "$port" "$W/$t.got" \
		--tls "$W/otlp-srv.pem" "$W/otlp-srv.key" >"$W/$t.ready" 2>"$W/$t.rerr" &
	PIDS+=($!)
	wait_for 10 grep -qs READY "$W/$t.ready" || { fail "$t.receiver" "$(cat "$W/$t.rerr")"; return; }
	new4 a
	# $OTEL_EXPORTER_OTLP_HEADERS in the client's environment, not the
	# daemon's: the service's run takes it from what the client sent
	(cd "$RW" && as "$UA" env OTEL_EXPORTER_OTLP_HEADERS="x-tenant=ten-$$" "$EGRESSCTL" run \
		--log "otlp:https://127.0.0.1:$port/v1/logs" --log-ca "$d/ca.pem" \
		--log-header "authorization: Bearer tok-$$" --allow example.test -- \
		"$PY" "$C/probe.py" tcp4 "$a" 80) >"$W/$t.out" 2>"$W/$t.err" </dev/null
	EGR_RC=$?
	a_rc "$t.exit" 0 "$t"
	# the headers, then the denial's record naming the address
	a_grep "$t.received" "$W/$t.got" "\"authorization\": \"Bearer tok-$$\".*deny.*$(re "$a")"
	a_grep "$t.env_header" "$W/$t.got" "\"x-tenant\": \"ten-$$\""
	a_nogrep "$t.token_not_said" "$W/$t.err" "tok-$$|ten-$$"
	printf 'x\n' >"$W/otlp-root.pem"
	chmod 0600 "$W/otlp-root.pem"
	urun "${t}_root" "$UA" --log "otlp:https://127.0.0.1:$port/v1/logs" --log-ca "$W/otlp-root.pem" -- true
	a_rc "$t.root_ca.status" 125 "${t}_root"
	a_grep "$t.root_ca.said" "$W/${t}_root.err" "--log-ca $(re "$W/otlp-root.pem"): Permission denied"
	rm -rf "$d"
}

# --summary FILE: created and written through the client's descriptor, as
# the user; a file the user may not create is never created
test_summary_fd() {
	local t=summary_fd
	urun "$t" "$UA" --summary "$RW/sum-$$.md" --summary-format markdown -- true
	a_rc "$t.status" 0 "$t"
	a_eq "$t.owner" "the summary's owner" "$(stat -c %U "$RW/sum-$$.md" 2>/dev/null)" "$UA"
	a_grep "$t.written" "$RW/sum-$$.md" 'egressctl'
	urun "${t}_etc" "$UA" --summary "/etc/egrns-sum-$$" -- true
	a_rc "$t.etc.status" 125 "${t}_etc"
	a_eq "$t.etc.not_created" "/etc/egrns-sum-$$" "$(test -e "/etc/egrns-sum-$$" && echo exists)" ""
	usock "${t}_path" "$UA" args '["--summary", "/tmp/egrns-sum-'$$'", "--", "id"]'
	a_grep "$t.path_refused" "$W/${t}_path.out" 'refused through the service: --summary other than'
	a_eq "$t.path.not_created" "/tmp/egrns-sum-$$" "$(test -e "/tmp/egrns-sum-$$" && echo exists)" ""
}

# --suggest-policy FILE: the client opens it as the user (read and write:
# the run merges what it holds), the run rewrites it through that
# descriptor at exit; a path the user may not write, or a symlink they
# planted to root's file, is refused by the client's own open, and a path
# sent as such is refused by the service
test_suggest_fd() {
	local t=suggest_fd a f="$RW/sug-$$.json" rootf="$W/root-sug-$$.json"
	new4 a
	urun "$t" "$UA" --suggest-policy "$f" -- "$PY" "$C/probe.py" tcp4 "$a" 80
	a_rc "$t.status" 0 "$t"
	a_eq "$t.owner" "the suggestion's owner and mode" "$(stat -c '%U %a' "$f" 2>/dev/null)" "$UA 644"
	a_grep "$t.said" "$W/$t.err" "suggested policy written to $(re "$f")\$"
	a_grep "$t.observed" "$f" "\"$(re "$a"):80\": \\{"
	# seen once in each of two runs: allowed, the first run's counts read
	# back through the second's descriptor
	urun "${t}_2" "$UA" --suggest-policy "$f" -- "$PY" "$C/probe.py" tcp4 "$a" 80
	"$EGRESSCTL" check --policy "$f" "$a:80" >"$W/$t.check" 2>&1
	a_grep "$t.merged" "$W/$t.check" "^allow: $(re "$a"):80"
	a_grep "$t.merged_runs" "$f" '"runs": 2'
	urun "${t}_etc" "$UA" --suggest-policy "/etc/egrns-sug-$$" -- true
	a_rc "$t.etc.status" 125 "${t}_etc"
	a_grep "$t.etc.said" "$W/${t}_etc.err" "^egressctl: --suggest-policy /etc/egrns-sug-$$: Permission denied\$"
	a_eq "$t.etc.not_created" "/etc/egrns-sug-$$" "$(test -e "/etc/egrns-sug-$$" && echo exists)" ""
	urun "${t}_dev" "$UA" --suggest-policy /dev/null -- true
	a_rc "$t.dev.status" 125 "${t}_dev"
	a_grep "$t.dev.said" "$W/${t}_dev.err" '^egressctl: --suggest-policy /dev/null: not a regular file$'
	echo "{\"allow\": [\"root-$$.test\"]}" >"$rootf" # a policy: what a root run would merge into
	chmod 0644 "$rootf"
	as "$UA" ln -s "$rootf" "$RW/link-$$.json"
	urun "${t}_link" "$UA" --suggest-policy "$RW/link-$$.json" -- true
	a_rc "$t.link.status" 125 "${t}_link"
	a_grep "$t.link.said" "$W/${t}_link.err" 'Permission denied'
	a_eq "$t.link.root_file" "root's file" "$(stat -c '%U %a' "$rootf") $(cat "$rootf")" "root 644 {\"allow\": [\"root-$$.test\"]}"
	usock "${t}_path" "$UA" args '["--suggest-policy", "/tmp/egrns-sug-'$$'", "--", "id"]'
	a_grep "$t.path_refused" "$W/${t}_path.out" 'refused through the service: --suggest-policy other than'
	a_eq "$t.path.not_created" "/tmp/egrns-sug-$$" "$(test -e "/tmp/egrns-sug-$$" && echo exists)" ""
}

# 6. the escapes `run` refuses are refused through the service too; the
# control halves show each working as the same user without egressctl
test_escapes() {
	local t=escapes c a
	new4 c; new4 a
	# a ping socket (the unprivileged user's raw ICMP)
	jv "$(as "$UA" "$PY" "$C/probe.py" ping "$c" | grep '^{' | tail -1)"
	a_ok "$t.control.ping"
	sensor_saw "$t.control.ping.sensor" "icmp and dst host $c"
	urun "${t}_ping" "$UA" -- "$PY" "$C/probe.py" ping "$a"
	egr_json "${t}_ping"
	a_denied "$t.ping.denied"
	sensor_none "$t.ping.sensor" "dst host $a"
	# a direct connect to a denied address (an allow rule of another port)
	new4 c; new4 a
	jv "$(as "$UA" "$PY" "$C/probe.py" tcp4 "$c" 80 | grep '^{' | tail -1)"
	a_ok "$t.control.connect"
	sensor_saw "$t.control.connect.sensor" "tcp and dst host $c"
	urun "${t}_tcp" "$UA" --allow example.test:443 -- "$PY" "$C/probe.py" tcp4 "$a" 80
	egr_json "${t}_tcp"
	a_denied "$t.connect.denied"
	a_grep "$t.connect.decision_line" "$W/${t}_tcp.err" "$(re "$a")"
	sensor_none "$t.connect.sensor" "dst host $a"
	# a network namespace of one's own (user namespace first)
	as "$UA" unshare -rn true >"$W/${t}_unshare.ctl" 2>&1 && ok "$t.control.unshare" ||
		fail "$t.control.unshare" "unshare -rn fails without egressctl: $(cat "$W/${t}_unshare.ctl")"
	urun "${t}_unshare" "$UA" -- unshare -rn true
	[ "$EGR_RC" != 0 ] && ok "$t.unshare.refused" ||
		fail "$t.unshare.refused" "ESCAPE: unshare -rn worked in the service's run"
}

# run.sh's other ways out, tried again as the unprivileged user through
# the service: each shown to work as that user without egressctl (the
# control: echoed by the test's internet, seen at the sensor), then
# failing in the service's run with nothing at the sensor
test_escapes_more() {
	local t=escapes_more k c a port
	local -a how
	for k in udp_sendto udp_connected_send sendmmsg udplite mptcp tfo io_uring_connect doublefork; do
		case $k in udp* | sendmmsg) port=7 ;; *) port=80 ;; esac
		how=("$k")
		[ $k = doublefork ] && how=(doublefork tcp4)
		new4 c; new4 a
		jv "$(as "$UA" "$PY" "$C/probe.py" "${how[@]}" "$c" $port | grep '^{' | tail -1)"
		if [ "$P_ok" != true ] && [[ $P_errno == @(EPROTONOSUPPORT|ENOPROTOOPT|EAFNOSUPPORT|EPERM|EACCES) ]]; then
			note "$t.$k: this host does not let the user do it without egressctl ($P_errno): control and confined halves skipped"
			continue
		fi
		a_ok "$t.$k.control"
		sensor_saw "$t.$k.control.sensor" "dst host $c"
		urun "${t}_$k" "$UA" --allow example.test:443 -- "$PY" "$C/probe.py" "${how[@]}" "$a" $port
		egr_json "${t}_$k"
		a_denied "$t.$k.failed"
		sensor_none "$t.$k.sensor" "dst host $a"
	done
	# vsock: the socket itself is refused in the run
	jv "$(as "$UA" "$PY" "$C/probe.py" vsock | grep '^{' | tail -1)"
	a_ok "$t.vsock.control"
	urun "${t}_vsock" "$UA" -- "$PY" "$C/probe.py" vsock
	egr_json "${t}_vsock"
	a_errno "$t.vsock.refused" EAFNOSUPPORT
}

# run.sh's address-family and DNS ways out, again as the user through the
# service: native IPv6 (TCP and UDP), an AF_INET6 socket to a v4-mapped
# address, and DNS to a resolver of one's choosing (UDP and TCP), each
# reaching the test internet as that user without egressctl (the
# control), then in the service's run: IPv6 refused, the mapped connect
# judged as IPv4 (a decision on the terminal), the queries answered by
# egressctl's responder (REFUSED: no rule allows the name) and never sent;
# nothing at the sensor.
test_escapes_net() {
	local t=escapes_net k c a
	for k in tcp6 udp6_sendto; do
		new6 c; new6 a
		jv "$(as "$UA" "$PY" "$C/probe.py" "$k" "$c" "$([ $k = tcp6 ] && echo 80 || echo 7)" | grep '^{' | tail -1)"
		a_ok "$t.$k.control"
		sensor_saw "$t.$k.control.sensor" "ip6 and dst host $c"
		urun "${t}_$k" "$UA" -- "$PY" "$C/probe.py" "$k" "$a" "$([ $k = tcp6 ] && echo 80 || echo 7)"
		egr_json "${t}_$k"
		a_denied "$t.$k.denied"
		sensor_none "$t.$k.sensor" "dst host $a"
	done
	new4 c; new4 a
	jv "$(as "$UA" "$PY" "$C/probe.py" tcp_mapped "$c" 80 | grep '^{' | tail -1)"
	a_ok "$t.mapped.control"
	sensor_saw "$t.mapped.control.sensor" "tcp and dst host $c"
	urun "${t}_mapped" "$UA" -- "$PY" "$C/probe.py" tcp_mapped "$a" 80
	a_grep "$t.mapped.judged" "$W/${t}_mapped.err" "denied python3\[[0-9]+\] → $(re "$a"):80"
	sensor_none "$t.mapped.sensor" "dst host $a"
	for k in dns_udp dns_tcp; do
		new4 c; new4 a
		jv "$(as "$UA" "$PY" "$C/probe.py" "$k" "$c" "c-$k-$$.test" | grep '^{' | tail -1)"
		a_ok "$t.$k.control"
		sensor_saw "$t.$k.control.sensor" "dst host $c and dst port 53"
		urun "${t}_$k" "$UA" -- "$PY" "$C/probe.py" "$k" "$a" "x-$k-$$.test"
		egr_json "${t}_$k"
		a_eq "$t.$k.refused" "answer" "$P_errno" RCODE5
		sensor_none "$t.$k.sensor" "dst host $a"
	done
}

# run.sh's fast-path case, as the user through the service: an address
# rule with a port goes straight to it (the test internet sees the
# user's connection) and makes no other port of that address reachable
# (the control: the user reaches it without egressctl). And the layers
# run.sh's catch-all and kernel cases test behind each other: the
# service's run attaches to its cgroup the same programs, by attach type
# and name, as root's run (its catch-all, cgroup_skb egress, among them).
test_escapes_direct() {
	local t=escapes_direct mark="egrns-progs-$$" cg user root
	jv "$(as "$UA" "$PY" "$C/probe.py" --token "$t.c" tcp4 198.18.0.1 7005 | grep '^{' | tail -1)"
	a_ok "$t.control.other_port"
	sensor_saw "$t.control.sensor" "tcp and dst host 198.18.0.1 and dst port 7005"
	urun "$t" "$UA" --allow 198.18.0.1:7004 -- sh -c \
		"$PY $C/probe.py --token $t.direct tcp4 198.18.0.1 7004; $PY $C/probe.py --token $t.other tcp4 198.18.0.1 7006"
	egr_json "$t" 1
	a_eq "$t.direct.echo" "reply" "$P_data" "probe $t.direct"
	a_grep "$t.direct.inet_saw" "$W/inet.log" "local=198\\.18\\.0\\.1:7004 peer=198\\.18\\.0\\.2:[0-9]+ probe $t\\.direct\$"
	egr_json "$t" 2
	a_denied "$t.other_port.denied"
	a_nogrep "$t.other_port.inet_saw_nothing" "$W/inet.log" "probe $t\\.other"
	sensor_none "$t.other_port.sensor" "dst host 198.18.0.1 and dst port 7006"
	# the programs on a run's cgroup: "ATTACH_TYPE NAME", sorted
	progs() { bpftool cgroup show "$1" 2>/dev/null | awk 'NR > 1 { print $2, $NF }' | sort | tr '\n' ' '; }
	(cd "$RW" && as "$UA" "$EGRESSCTL" run --allow example.test -- sh -c "cat /proc/self/cgroup; sleep 30; echo $mark") \
		>"$W/${t}_u.out" 2>"$W/${t}_u.err" </dev/null &
	wait_for 20 grep -qs '^0::' "$W/${t}_u.out"
	cg=$CGROOT$(sed -n 's/^0:://p' "$W/${t}_u.out")
	user=$(progs "$cg")
	pkill -TERM -u "$UA" -x egressctl
	egr_bg "${t}_r" --user "$UA" --allow example.test -- sh -c "cat /proc/self/cgroup; sleep 30"
	wait_for 20 grep -qs '^0::' "$W/${t}_r.out"
	cg=$CGROOT$(sed -n 's/^0:://p' "$W/${t}_r.out")
	root=$(progs "$cg")
	kill -TERM "$EGR_PID"
	egr_join 10
	note "$t: root's run's programs: $root"
	a_eq "$t.same_programs" "the programs on the service's run's cgroup" "$user" "$root"
	case "$root" in
	*"cgroup_inet_egress egr_skb_egress"*"cgroup_inet_sock_create egr_sock_create"*) ok "$t.catchall_among_them" ;;
	*) fail "$t.catchall_among_them" "root's run has no catch-all or sock_create: '$root'" ;;
	esac
}

# the service's path under ASan+UBSan (make check's $E2E_ASAN_EGRESSCTL:
# a daemon of that build on a socket of its own, whose run is that build
# too): a run whose last record is drained at its teardown, one stopped
# by TERM mid-run, and the daemon's own start and stop, each with no
# sanitizer report
test_asan() {
	local t=asan sock=$W/user-asan.sock dpid a f bad= asan
	if [ -z "${E2E_ASAN_EGRESSCTL:-}" ]; then
		note "$t: no ASan build given (make check gives \$E2E_ASAN_EGRESSCTL): skipped"
		return
	fi
	asan=$(readlink -f -- "$E2E_ASAN_EGRESSCTL")
	[ -x "$asan" ] || { fail "$t.binary" "$E2E_ASAN_EGRESSCTL: no such executable"; return; }
	nsenter --net="$NS_SBX" "$asan" daemon --control "$W/control-asan" \
		--user-socket "$sock" --users "$W/users.json" >"$W/$t.dout" 2>&1 &
	dpid=$!
	PIDS+=("$dpid")
	wait_for 30 test -S "$sock" || { fail "$t.daemon" "$(tail -c 300 "$W/$t.dout")"; return; }
	new4 a
	# a denial, then a fast-path connect, whose record waits in the ring
	# (no wake-up for an allow) until run's teardown drains it
	(cd "$RW" && as "$UA" env EGRESSCTL_USER_SOCKET="$sock" "$asan" run --allow 198.18.0.1:7004 -- \
		sh -c "$PY $C/probe.py tcp4 $a 80; $PY $C/probe.py tcp4 198.18.0.1 7004") \
		>"$W/${t}_deny.out" 2>"$W/${t}_deny.err" </dev/null
	a_grep "$t.denied" "$W/${t}_deny.err" "denied python3\[[0-9]+\] → $(re "$a"):80"
	(cd "$RW" && as "$UA" env EGRESSCTL_USER_SOCKET="$sock" "$asan" run -- \
		sh -c "echo up; $PY $C/probe.py tcp4 $a 81; sleep 30") >"$W/${t}_term.out" 2>"$W/${t}_term.err" </dev/null &
	wait_for 30 grep -qs '^{' "$W/${t}_term.out"
	pkill -TERM -u "$UA" -x egressctl
	wait_for 30 eval '! pgrep -u "$UA" -x egressctl >/dev/null'
	kill -TERM "$dpid"
	wait "$dpid" 2>/dev/null
	for f in "$W/$t.dout" "$W/${t}_deny.err" "$W/${t}_term.err"; do
		grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$f" && bad="$bad ${f##*/}"
	done
	[ -z "$bad" ] && ok "$t.no_report" ||
		fail "$t.no_report" "sanitizer reports in$bad: $(grep -hE -m1 -A3 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$W/$t.dout" "$W/${t}_deny.err" "$W/${t}_term.err" | head -c 600 | tr '\n' '|')"
}

# the same uid outside: CMD runs as the user, who has processes outside
# egressctl (a shell, an editor). A socket is judged by the cgroup it was
# made in, so one of theirs handed to CMD, or one of them driven by CMD,
# would take CMD's traffic out. Each way (clients/sameuid.py) is shown to
# work as the user without egressctl: the holder's UDP socket taken with
# pidfd_getfd sends a token to the test internet (seen at the sensor), a
# tracer attaches, its memory opens for writing, it can be stopped; then
# each is refused in the service's run and the token never leaves.
test_escapes_sameuid() {
	local t=escapes_sameuid c k v hp base
	new4 c
	rm -f "$RW/$t.holder"
	in_sbx setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups \
		"$PY" "$C/sameuid.py" hold "$c" 7 "$RW/$t.holder" 2>"$W/$t.herr" &
	hp=$!
	PIDS+=("$hp")
	wait_for 10 test -s "$RW/$t.holder" || { fail "$t.holder" "no holder: $(cat "$W/$t.herr")"; return; }
	as "$UA" "$PY" "$C/sameuid.py" take "$RW/$t.holder" "ctl-$$" >"$W/$t.ctl" 2>&1
	for k in pidfd_getfd ptrace proc_mem signal; do
		v=$(grep "\"name\": \"$k\"" "$W/$t.ctl")
		case $v in
		*'"ok": true'*) ok "$t.control.$k" ;;
		*EPERM* | *EACCES*) note "$t.control.$k: this host refuses it to the user without egressctl ($v): the confined half still runs" ;;
		*) fail "$t.control.$k" "$v" ;;
		esac
	done
	grep -q '"name": "pidfd_getfd", "ok": true' "$W/$t.ctl" && sensor_saw "$t.control.sensor" "udp and dst host $c"
	base=$(sensor_now "udp and dst host $c")
	urun "$t" "$UA" -- "$PY" "$C/sameuid.py" take "$RW/$t.holder" "in-$$"
	for k in pidfd_getfd ptrace proc_mem signal; do
		v=$(grep "\"name\": \"$k\"" "$W/$t.out")
		case $v in
		*'"ok": false'*) ok "$t.$k.refused" ;;
		*) fail "$t.$k.refused" "ESCAPE or no answer: ${v:-$(head -c 300 "$W/$t.err")}" ;;
		esac
	done
	sensor_none_since "$t.sensor" "$base" "udp and dst host $c"
	kill "$hp" 2>/dev/null
	wait "$hp" 2>/dev/null
}

# the user's own session bus: CMD runs as the user, whose D-Bus session
# bus (/run/user/UID/bus) would start anything for them outside egressctl
# (systemd-run --user). A dbus-daemon of the user's at its real path (a
# tmpfs over /run/user in the suite's mount namespace): dbus-send as the
# user reaches it (the control); through the service, by its path and
# relative to /run/user/UID, refused, the decision on the terminal
test_escapes_bus() {
	local t=escapes_bus uid bus i
	uid=$(id -u "$UA")
	bus=/run/user/$uid/bus
	[ -d /run/user ] || mkdir -p /run/user
	mount -t tmpfs -o mode=0755 egr-test /run/user || { fail "$t.setup" "cannot mount a tmpfs on /run/user"; return; }
	mkdir -m 0700 "/run/user/$uid" && chown "$UA:$(id -g "$UA")" "/run/user/$uid"
	setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups -- dbus-daemon --session --nofork \
		--address="unix:path=$bus" --print-address >"$W/$t.addr" 2>"$W/$t.derr" &
	PIDS+=($!)
	i=$!
	wait_for 5 test -S "$bus"
	local -a env=(env DBUS_SESSION_BUS_ADDRESS="unix:path=$bus" XDG_RUNTIME_DIR="/run/user/$uid")
	as "$UA" "${env[@]}" dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
		org.freedesktop.DBus.ListNames >"$W/$t.ctl" 2>&1 && ok "$t.control" ||
		fail "$t.control" "dbus-send as the user without egressctl: $(head -c 300 "$W/$t.ctl")"
	urun "$t" "$UA" -- "${env[@]}" dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
		org.freedesktop.DBus.ListNames
	[ "$EGR_RC" != 0 ] && ok "$t.refused" || fail "$t.refused" "ESCAPE: dbus-send reached the user's bus"
	a_grep "$t.line" "$W/$t.err" "denied dbus-send\[[0-9]+\] → unix:$(re "$bus")"
	urun "${t}_rel" "$UA" -- sh -c "cd /run/user/$uid && exec dbus-send --bus=unix:path=bus --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames"
	[ "$EGR_RC" != 0 ] && ok "$t.relative.refused" || fail "$t.relative.refused" "ESCAPE: the bus by a relative name"
	kill "$i" 2>/dev/null
	wait "$i" 2>/dev/null
	umount -l /run/user
}

# unix_probe TAG USER [RUN OPTIONS --] ARGS...: unixsvc.py connect ARGS as
# USER, through the service with RUN OPTIONS (none: no egressctl); P_*
unix_probe() {
	local tag=$1 u=$2
	shift 2
	local -a opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	if [ "${1:-}" = -- ]; then
		shift
		urun "$tag" "$u" "${opts[@]}" -- "$PY" "$C/unixsvc.py" connect "$@"
	else
		set -- "${opts[@]}"
		(cd "$RW" && as "$u" "$PY" "$C/unixsvc.py" connect "$@") >"$W/$tag.out" 2>"$W/$tag.err"
	fi
	jv "$(tail -1 "$W/$tag.out")"
}

# --deny-unix and --allow-unix through the service. A run the service
# starts finds its masks as the user (sandbox_unix_masks_as): the user's
# socket, denied, is refused by name and masked for every other name;
# a socket in a directory of root's alone, named by the user, is looked up
# as the user, so neither CMD's mount table nor an error tells whether it
# is there (root's own run, the control, masks it, and refuses one with a
# second hard link, naming the count). --allow-unix of a socket on the
# default list (the user's session bus: a tmpfs over /run/user in the
# suite's mount namespace) only as users.json's "allow_unix" lets it:
# refused while the ceiling has deny rules and no "allow_unix", taken for
# a path it names, refused for one it does not
test_unix() {
	local t=unix uid d=$W/unixu ro=$W/unixro log=$W/unix.svclog hits bus
	uid=$(id -u "$UA")
	bus=/run/user/$uid/bus
	mkdir -m 0755 "$d" && chown "$UA" "$d"
	mkdir -m 0700 "$ro"
	[ -d /run/user ] || mkdir -p /run/user
	mount -t tmpfs -o mode=0755 egr-test /run/user || { fail "$t.setup" "cannot mount a tmpfs on /run/user"; return; }
	mkdir -m 0700 "/run/user/$uid" && chown "$UA:$(id -g "$UA")" "/run/user/$uid"
	: >"$log"
	"$PY" "$C/unixsvc.py" serve --log "$log" "$d/svc.sock" "$ro/one.sock" "$ro/two.sock" "$bus" \
		>"$W/$t.ready" 2>"$W/$t.serr" &
	PIDS+=($!)
	local sp=$!
	wait_for 5 grep -qs READY "$W/$t.ready" || { fail "$t.setup" "stand-ins: $(cat "$W/$t.serr")"; umount -l /run/user; return; }
	ln "$ro/two.sock" "$ro/two-link.sock"
	as "$UA" ln -s svc.sock "$d/alias.sock"
	# the controls: the user reaches both without egressctl
	unix_probe "${t}_ctl" "$UA" "$d/svc.sock"
	a_eq "$t.control" "data" "${P_data:-}" "svc $d/svc.sock"
	unix_probe "${t}_ctl_bus" "$UA" "$bus"
	a_eq "$t.control_bus" "data" "${P_data:-}" "svc $bus"
	hits=$(grep -c . "$log")
	# --deny-unix: by its name (the programs), by other names (the masks)
	unix_probe "${t}_deny" "$UA" --deny-unix "$d/svc.sock" -- "$d/svc.sock"
	a_rc "$t.deny.status" 0 "${t}_deny"
	a_eq "$t.deny.eperm" errno "${P_errno:-}" EPERM
	a_grep "$t.deny.line" "$W/${t}_deny.err" "denied python3\[[0-9]+\] → unix:$(re "$d/svc.sock")"
	unix_probe "${t}_rel" "$UA" --deny-unix "$d/svc.sock" -- svc.sock --chdir "$d"
	a_eq "$t.deny.relative" errno "${P_errno:-}" ECONNREFUSED
	unix_probe "${t}_alias" "$UA" --deny-unix "$d/svc.sock" -- "$d/alias.sock"
	a_eq "$t.deny.symlink" errno "${P_errno:-}" ECONNREFUSED
	a_eq "$t.deny.nothing_reached" "stand-in's connections" "$(grep -c . "$log")" "$hits"
	# a path of root's alone: root's run (the control) looks it up as root
	egr "${t}_root" --user "$UA" --deny-unix "$ro/one.sock" -- cat /proc/self/mountinfo
	a_rc "$t.root.status" 0 "${t}_root"
	a_grep "$t.root.masked" "$W/${t}_root.out" " $(re "$ro/one.sock") "
	egr "${t}_root2" --user "$UA" --deny-unix "$ro/two.sock" -- true
	a_rc "$t.root.hardlink.status" 125 "${t}_root2"
	a_grep "$t.root.hardlink.said" "$W/${t}_root2.err" "$(re "$ro/two.sock") has 1 other hard link"
	urun "${t}_ro" "$UA" --deny-unix "$ro/one.sock" -- cat /proc/self/mountinfo
	a_rc "$t.user.status" 0 "${t}_ro"
	a_nogrep "$t.user.not_shown" "$W/${t}_ro.out" "$(re "$ro")"
	urun "${t}_ro2" "$UA" --deny-unix "$ro/two.sock" -- true
	a_rc "$t.user.hardlink.status" 0 "${t}_ro2"
	a_nogrep "$t.user.hardlink.not_said" "$W/${t}_ro2.err" "hard link"
	# --allow-unix: the ceiling has deny rules and no "allow_unix"
	unix_probe "${t}_allow_no" "$UA" --allow-unix "$bus" -- "$bus"
	a_rc "$t.allow.refused.status" 2 "${t}_allow_no"
	a_grep "$t.allow.refused.said" "$W/${t}_allow_no.err" "refused through the service: --allow-unix $(re "$bus") \(users.json: \"allow_unix\" is not set, and the ceiling has allow or deny rules\)"
	cp "$W/users.json" "$W/users.json.orig"
	printf '{"groups": ["%s"], "max_runs_per_user": 2, "audit": false, "deny": ["blocked-%s.test"], "allow_unix": ["%s"]}\n' \
		"$G" $$ "$bus" >"$W/users.json"
	reread
	unix_probe "${t}_bus_default" "$UA" -v -- "$bus"
	a_eq "$t.allow.default_denied" errno "${P_errno:-}" EPERM
	hits=$(grep -c . "$log")
	unix_probe "${t}_allow" "$UA" --allow-unix "$bus" -- "$bus"
	a_rc "$t.allow.status" 0 "${t}_allow"
	a_eq "$t.allow.reached" "data" "${P_data:-}" "svc $bus"
	a_eq "$t.allow.one_connection" "stand-in's connections" "$(grep -c . "$log")" "$((hits + 1))"
	unix_probe "${t}_allow_other" "$UA" --allow-unix /run/docker.sock -- "$bus"
	a_rc "$t.allow.other.status" 2 "${t}_allow_other"
	a_grep "$t.allow.other.said" "$W/${t}_allow_other.err" 'allow-unix /run/docker\.sock \(users\.json: "allow_unix" does not name it\)'
	cp "$W/users.json.orig" "$W/users.json"
	reread
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	umount -l /run/user
}

# --proxy-port (and --transparent-port, --dns-port: the user's own
# listeners) through the service only where users.json has no allow and
# no deny rules, which such a listener would take CMD's connections past:
# refused with the suite's deny rule; with none, CMD reaches the user's
# listener on 127.0.0.1:P with the option, and without it is refused
# (the decision on the terminal), the listener seeing only the first
test_listeners() {
	local t=listeners port=14377 lp
	urun "$t" "$UA" --proxy-port "$port" -- true
	a_rc "$t.refused.status" 2 "$t"
	a_grep "$t.refused.said" "$W/$t.err" "refused through the service: --transparent-port, --dns-port and --proxy-port \(your own listeners would take CMD's connections past users.json's allow and deny rules\)"
	cp "$W/users.json" "$W/users.json.orig"
	printf '{"groups": ["%s"], "max_runs_per_user": 2, "audit": false}\n' "$G" >"$W/users.json"
	reread
	rm -f "$RW/$t.ready"
	as "$UA" "$PY" "$C/probe.py" listen_local "$port" "$RW/$t.ready" >"$W/$t.lis" 2>&1 &
	lp=$!
	PIDS+=("$lp")
	wait_for 5 test -e "$RW/$t.ready" || fail "$t.listener" "$(cat "$W/$t.lis")"
	urun "${t}_no" "$UA" -- "$PY" "$C/probe.py" tcp4 127.0.0.1 "$port"
	jv "$(tail -1 "$W/${t}_no.out")"
	a_eq "$t.without.refused" errno "${P_errno:-}" ECONNREFUSED
	a_grep "$t.without.said" "$W/${t}_no.err" "denied python3\[[0-9]+\] → 127\.0\.0\.1:$port \(loopback port not served by this sandbox\)"
	urun "${t}_yes" "$UA" --proxy-port "$port" -- "$PY" "$C/probe.py" --token "lis-$$" tcp4 127.0.0.1 "$port"
	a_rc "$t.with.status" 0 "${t}_yes"
	jv "$(tail -1 "$W/${t}_yes.out")"
	a_eq "$t.with.reached" ok "${P_ok:-}" true
	wait "$lp"
	jv "$(tail -1 "$W/$t.lis")"
	a_eq "$t.listener.one_connection" "what the listener got" "$(echo "${P_data:-}" | grep -c "lis-$$")" 1
	cp "$W/users.json.orig" "$W/users.json"
	reread
}

# connections not answered yet are bounded per user on their own (4),
# not counted as runs: with a run of theirs going and 3 silent connections
# held, the user's status is answered (the binary before: refused, "has 4
# runs already" with one run), and a third run request still meets
# max_runs_per_user (2) only once two runs go; a fourth silent connection
# and the next request is refused, named
pend_hold() {	# pend_hold N TAG: N connections of $UA, never written, until $RW/pending.release
	rm -f "$RW/$2.held"
	as "$UA" "$PY" -c "import os, socket, sys, time
held = []
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1]); held.append(s)
open(sys.argv[3], 'w').write('held')
end = time.time() + 20
while not os.path.exists(sys.argv[4]) and time.time() < end:
    time.sleep(0.05)" "$USOCK" "$1" "$RW/$2.held" "$RW/pending.release" >"$W/$2.hold" 2>&1 &
	PIDS+=($!)
	PEND_PID=$!
	wait_for 10 test -s "$RW/$2.held" || fail "$2.setup" "cannot hold $1 connections: $(cat "$W/$2.hold")"
}

test_pending() {
	local t=pending p1 h1 h2
	rm -f "$RW/pending.release"
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30") >"$W/${t}_1.out" 2>&1 </dev/null &
	p1=$!
	wait_for 20 grep -qs up "$W/${t}_1.out"
	pend_hold 3 "${t}_a"
	h1=$PEND_PID
	(cd "$RW" && as "$UA" "$EGRESSCTL" status) >"$W/${t}_st.out" 2>&1
	EGR_RC=$?
	a_rc "$t.status_beside.status" 0 "${t}_st"
	a_grep "$t.status_beside.listed" "$W/${t}_st.out" 'sh -c echo up; sleep 30'
	pend_hold 1 "${t}_b"
	h2=$PEND_PID
	(cd "$RW" && as "$UA" "$EGRESSCTL" status) >"$W/${t}_st2.out" 2>&1
	EGR_RC=$?
	a_rc "$t.fifth.status" 125 "${t}_st2"
	a_grep "$t.fifth.said" "$W/${t}_st2.out" "$UA has 4 requests waiting for an answer already"
	touch "$RW/pending.release"
	wait "$h1" "$h2" 2>/dev/null
	pkill -TERM -u "$UA" -x egressctl
	wait "$p1" 2>/dev/null
}

# cap_python: CAPPY, a copy of python3 with the file capabilities
# cap_net_raw, cap_net_admin and cap_bpf (+ep: what a setcap'd tool gives
# whoever may run it; the kernel asks CAP_NET_ADMIN besides CAP_BPF for a
# cgroup program's detach), in a directory of the suite's group alone;
# removed by the test that made it. Empty (and a note) where this host
# cannot give a user capabilities by file: no setcap, or a filesystem that
# does not honour them (nosuid).
cap_python() {
	local d=$W/capbin eff
	CAPPY=
	if ! command -v setcap >/dev/null; then
		note "no setcap (libcap2-bin): the user's halves with a file capability skipped"
		return 1
	fi
	if ! { mkdir -m 0750 "$d" && chgrp "$G" "$d" && cp "$(readlink -f "$PY")" "$d/python3" &&
		chgrp "$G" "$d/python3" && chmod 0750 "$d/python3" &&
		setcap cap_net_raw,cap_net_admin,cap_bpf+ep "$d/python3"; }; then
		note "cannot give $d/python3 file capabilities: the user's halves with one skipped"
		return 1
	fi
	# CAP_NET_ADMIN (12), CAP_NET_RAW (13) and CAP_BPF (39) effective for the user?
	eff=$(as "$UA" "$d/python3" -c 'print(open("/proc/self/status").read())' | sed -n 's/^CapEff:\t*//p')
	if ! [[ $eff =~ ^[0-9a-f]{16}$ ]] || (((0x$eff & 0x8000003000) != 0x8000003000)); then
		note "file capabilities are not honoured in $d (CapEff '$eff'; a nosuid mount?): the user's halves with one skipped"
		return 1
	fi
	CAPPY=$d/python3
}

# as_in CGDIR USER CMD...: as, from the cgroup CGDIR (root moves the
# shell there, then becomes USER)
as_in() {
	local cg=$1 u=$2
	shift 2
	# shellcheck disable=SC2016 # $$, $0 and $@ are the inner shell's
	timeout -k 2 40 nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
		setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups env EGRESSCTL_USER_SOCKET="$USOCK" "$@"
}

# legacy_on CGDIR: the suite's legacy connect4 program is attached there
legacy_on() { bpftool -j cgroup show "$1" 2>/dev/null | grep -q egr_e2e_legacy; }

# run.sh's kernel-side ways out, tried again as the unprivileged user
# through the service: a raw socket and an AF_PACKET socket (both need
# CAP_NET_RAW), a write to another cgroup's cgroup.procs, bpf() (a legacy
# program's detach, a map). Where the host refuses the user an attempt
# already (no CAP_NET_RAW; kernel.unprivileged_bpf_disabled not 0), a note
# says so and the user's plain half, whose refusal in the run could not be
# told from the host's, is skipped. A python3 with file capabilities
# (cap_python) is what gives a user these without egressctl: its control
# halves show each working as that user (packets at the sensor, the
# legacy program gone), then the same exec in the service's run refused
# (no capability to be had there), nothing at the sensor.
test_escapes_kernel() {
	local t=escapes_kernel c a k D L
	local -a kinds pre
	cap_python
	# a raw ICMP socket
	kinds=()
	new4 c
	jv "$(as "$UA" "$PY" "$C/probe.py" raw "$c" | grep '^{' | tail -1)"
	if [ "$P_ok" != true ] && [ "$P_errno" = EPERM ]; then
		note "$t.raw.user skipped: without egressctl the user's raw socket is refused already (EPERM: no CAP_NET_RAW), as it would be in the run"
	else
		a_ok "$t.raw.control.user"
		sensor_saw "$t.raw.control.user.sensor" "icmp and dst host $c"
		kinds+=(user)
	fi
	if [ -n "$CAPPY" ]; then
		new4 c
		jv "$(as "$UA" "$PY" "$C/probe.py" exec "$CAPPY" "$C/probe.py" raw "$c" | grep '^{' | tail -1)"
		a_ok "$t.raw.control.capfile"
		sensor_saw "$t.raw.control.capfile.sensor" "icmp and dst host $c"
		kinds+=(capfile)
	fi
	[ ${#kinds[@]} = 0 ] && note "$t.raw: no half whose refusal in the run this host could show"
	for k in "${kinds[@]}"; do
		pre=("$PY" "$C/probe.py")
		[ "$k" = capfile ] && pre+=(exec "$CAPPY" "$C/probe.py")
		new4 a
		urun "${t}_raw_$k" "$UA" -- "${pre[@]}" raw "$a"
		egr_json "${t}_raw_$k"
		a_denied "$t.raw.$k.denied"
		sensor_none "$t.raw.$k.sensor" "dst host $a"
	done
	# an AF_PACKET socket: a frame on the sandbox's veth. The run's seccomp
	# filter refuses the family (EAFNOSUPPORT) before the kernel asks for
	# CAP_NET_RAW (EPERM): the user's plain half tells the two apart.
	jv "$(as "$UA" "$PY" "$C/probe.py" packet "$SBX_IF" 02:00:00:e2:e4:01 | grep '^{' | tail -1)"
	if [ "$P_ok" != true ] && [ "$P_errno" = EPERM ]; then
		note "$t.packet.user: without egressctl the user's AF_PACKET socket is refused (EPERM: no CAP_NET_RAW); in the run, the seccomp filter's EAFNOSUPPORT"
	else
		a_ok "$t.packet.control.user"
		sensor_saw "$t.packet.control.user.sensor" "ether dst 02:00:00:e2:e4:01"
	fi
	if [ -n "$CAPPY" ]; then
		jv "$(as "$UA" "$PY" "$C/probe.py" exec "$CAPPY" "$C/probe.py" packet "$SBX_IF" 02:00:00:e2:e4:02 | grep '^{' | tail -1)"
		a_ok "$t.packet.control.capfile"
		sensor_saw "$t.packet.control.capfile.sensor" "ether dst 02:00:00:e2:e4:02"
	fi
	urun "${t}_packet_user" "$UA" -- "$PY" "$C/probe.py" packet "$SBX_IF" 02:00:00:e2:e4:03
	egr_json "${t}_packet_user"
	a_errno "$t.packet.user.eafnosupport" EAFNOSUPPORT
	sensor_none "$t.packet.user.sensor" "ether dst 02:00:00:e2:e4:03"
	if [ -n "$CAPPY" ]; then
		urun "${t}_packet_capfile" "$UA" -- "$PY" "$C/probe.py" exec "$CAPPY" "$C/probe.py" packet "$SBX_IF" 02:00:00:e2:e4:04
		egr_json "${t}_packet_capfile"
		a_denied "$t.packet.capfile.denied"
		sensor_none "$t.packet.capfile.sensor" "ether dst 02:00:00:e2:e4:04"
	fi
	# cgroup.procs of another cgroup: D delegated to the user (as a
	# session's user@.service is), a process of theirs in D/a moves itself
	# to D/b. In the run, started by a client in D/a, CMD finds no cgroupfs
	# (covered: ENOENT, where the host would let it into D/b and refuse it
	# the root cgroup with EACCES) and stays in its run cgroup, confined.
	D=$CGROOT/egr-e2e-$$-udeleg
	if ! mkdir -p "$D/a" "$D/b" || ! chown -R "$UA:$G" "$D"; then
		fail "$t.cgroup.setup" "cannot create delegated cgroups under $D"
	else
		jv "$(as_in "$D/a" "$UA" "$PY" "$C/probe.py" cgroup_escape "$D/b/cgroup.procs" | grep '^{' | tail -1)"
		a_ok "$t.cgroup.control.delegated"
		a_eq "$t.cgroup.control.moved" "own cgroup after the write" "$P_data" "0::${D#"$CGROOT"}/b"
		new4 a
		(cd "$RW" && as_in "$D/a" "$UA" "$EGRESSCTL" run -- sh -c \
			"$PY $C/probe.py cgroup_escape $D/b/cgroup.procs; $PY $C/probe.py cgroup_escape $CGROOT/cgroup.procs; $PY $C/probe.py tcp4 $a 80") \
			>"$W/${t}_cgroup.out" 2>"$W/${t}_cgroup.err" </dev/null
		EGR_RC=$?
		a_rc "$t.cgroup.exit" 0 "${t}_cgroup"
		egr_json "${t}_cgroup" 1
		a_errno "$t.cgroup.delegated_write_hidden" ENOENT
		egr_json "${t}_cgroup" 2
		a_errno "$t.cgroup.root_write_hidden" ENOENT
		egr_json "${t}_cgroup" 3
		a_denied "$t.cgroup.still_confined"
		if [[ $P_cg =~ ^0::/egressctl/run-[0-9]+$ ]]; then ok "$t.cgroup.own_cgroup"; else
			fail "$t.cgroup.own_cgroup" "CMD's cgroup at the end: '$P_cg', not its run's"
		fi
		sensor_none "$t.cgroup.sensor" "dst host $a"
		cg_remove "$D"
	fi
	# bpf(): a legacy (non-MULTI) connect4 program's detach, and a map
	L=$CGROOT/egr-e2e-$$-ulegacy
	if mkdir -p "$L"; then
		escapes_bpf
		cg_remove "$L"
	else
		fail "$t.bpf.setup" "mkdir $L"
	fi
	rm -rf "$W/capbin"
	CAPPY=
}

# test_escapes_kernel's bpf() half: t, L, CAPPY its
escapes_bpf() {
	local k py a ubpf detach=
	local -a kinds=()
	jv "$(probe_root bpf_attach_legacy "$L")"
	a_ok "$t.bpf.setup.attach_legacy"
	ubpf=$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null || echo 0)
	if [ "$ubpf" = 0 ]; then
		jv "$(as "$UA" "$PY" "$C/probe.py" bpf_any | grep '^{' | tail -1)"
		a_ok "$t.bpf.control.user_map_create"
		kinds+=(user)
		jv "$(as "$UA" "$PY" "$C/probe.py" bpf_detach "$L" | grep '^{' | tail -1)"
		if [ "$P_ok" != true ] && [ "$P_errno" = EPERM ]; then
			note "$t.bpf.user.detach skipped: this kernel refuses the user's detach of a cgroup program already (EPERM: it asks CAP_NET_ADMIN), as it would be in the run"
		else
			a_ok "$t.bpf.control.user_detaches_legacy"
			if legacy_on "$L"; then fail "$t.bpf.control.user_legacy_gone" "still attached"; else ok "$t.bpf.control.user_legacy_gone"; fi
			jv "$(probe_root bpf_attach_legacy "$L")"
			a_ok "$t.bpf.setup.reattach_user"
			detach=user
		fi
	else
		note "$t.bpf.user skipped: kernel.unprivileged_bpf_disabled=$ubpf refuses every bpf() of a user without CAP_BPF on this host (EPERM), as it would be in the run"
	fi
	if [ -n "$CAPPY" ]; then
		jv "$(as "$UA" "$PY" "$C/probe.py" exec "$CAPPY" "$C/probe.py" bpf_detach "$L" | grep '^{' | tail -1)"
		a_ok "$t.bpf.control.capfile_detaches_legacy"
		if legacy_on "$L"; then fail "$t.bpf.control.capfile_legacy_gone" "still attached"; else ok "$t.bpf.control.capfile_legacy_gone"; fi
		jv "$(as "$UA" "$PY" "$C/probe.py" exec "$CAPPY" "$C/probe.py" bpf_any | grep '^{' | tail -1)"
		a_ok "$t.bpf.control.capfile_map_create"
		jv "$(probe_root bpf_attach_legacy "$L")"
		a_ok "$t.bpf.setup.reattach_capfile"
		kinds+=(capfile)
		detach="$detach capfile"
	fi
	[ ${#kinds[@]} = 0 ] && note "$t.bpf: no half whose refusal in the run this host could show"
	for k in "${kinds[@]}"; do
		py="$PY $C/probe.py"
		[ "$k" = capfile ] && py="$py exec $CAPPY $C/probe.py"
		new4 a
		legacy_on "$L" || fail "$t.bpf.$k.setup" "no legacy program on $L before the run"
		urun "${t}_bpf_$k" "$UA" -- sh -c "$py bpf_detach $L; $py bpf_any; $PY $C/probe.py tcp4 $a 80"
		a_rc "$t.bpf.$k.exit" 0 "${t}_bpf_$k"
		if [[ " $detach " == *" $k "* ]]; then
			egr_json "${t}_bpf_$k" 1
			a_errno "$t.bpf.$k.detach_eperm" EPERM
			if legacy_on "$L"; then ok "$t.bpf.$k.legacy_intact"; else fail "$t.bpf.$k.legacy_intact" "the legacy program on $L is gone"; fi
		fi
		egr_json "${t}_bpf_$k" 2
		a_errno "$t.bpf.$k.bpf_eperm" EPERM
		egr_json "${t}_bpf_$k" 3
		a_denied "$t.bpf.$k.still_confined"
		sensor_none "$t.bpf.$k.sensor" "dst host $a"
	done
}

# users.json's deny rules win over the user's --allow: the name allowed
# beside it is answered (upstream: the test's "internet"), it is denied
test_ceiling_deny() {
	local t=ceiling_deny up x y
	new4 up; new4 x; new4 y
	urun "$t" "$UA" --allow "a-$$.test" --allow "blocked-$$.test" --dns-upstream "$up" -- sh -c \
		"$PY $C/probe.py dns_udp $x a-$$.test; $PY $C/probe.py dns_udp $y blocked-$$.test"
	egr_json "$t" 1
	a_ok "$t.allowed_name"
	egr_json "$t" 2
	[ "$P_ok" = true ] && [ -n "${P_data:-}" ] && fail "$t.denied_name" "answered: $P_json" ||
		ok "$t.denied_name"
	a_grep "$t.decision_line" "$W/$t.err" "denied .*blocked-$$\.test"
	a_nogrep "$t.allowed_not_denied" "$W/$t.err" "denied .*a-$$\.test"
}

# 7. a signal to the client stops the run: CMD gets it, the status says so
test_stop() {
	local t=stop
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c 'trap "exit 42" TERM; echo up; while :; do sleep 0.1; done') \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null &
	local p=$!
	wait_for 20 grep -qs up "$W/$t.out"
	pkill -TERM -u "$UA" -x egressctl
	wait "$p"
	EGR_RC=$?
	a_rc "$t.status" 42 "$t"
}

# the run's CMD of a user, by the marker in its command line
cmd_alive() { pgrep -u "$1" -f "$2" >/dev/null; }

# 8. the client killed (no chance to say goodbye): the run is ended, its
# cgroup killed and removed
test_gone() {
	local t=gone mark="egrns-gone-$$" cg
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "trap '' TERM INT; cat /proc/self/cgroup; sleep 300; echo $mark") \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null &
	wait_for 20 grep -qs '^0::' "$W/$t.out"
	cg=$CGROOT$(sed -n 's/^0:://p' "$W/$t.out")
	cmd_alive "$UA" "$mark" && ok "$t.running" || fail "$t.running" "CMD is not running"
	pkill -KILL -u "$UA" -x egressctl
	wait_for 20 eval '! cmd_alive "$UA" "$mark"'
	cmd_alive "$UA" "$mark" && fail "$t.ended" "CMD outlived its client" || ok "$t.ended"
	wait_for 20 test ! -d "$cg"
	a_eq "$t.cgroup_removed" "the run's cgroup $cg" "$(test -d "$cg" && echo left)" ""
}

# a run stuck before its cgroup (reading an --upstream-ca pipe that never
# ends, for the inspection a secret asks; a --policy the client reads itself)
# whose client is gone: it ends itself at once (its own watch of the
# connection), with the daemon there (whose 10 s kill is not needed) and
# with none (killed meanwhile: nobody else would end it)
test_stuck() {
	local t=stuck rp n0 k
	for k in daemon nodaemon; do
		n0=$(grep -c "): run\[[0-9]*\] started" "$W/daemon.err")
		rm -f "$RW/fifo-$$"
		mkfifo -m 0666 "$RW/fifo-$$"
		(cd "$RW" && as "$UA" bash -c "exec 5<>$RW/fifo-$$; exec env X=1 $EGRESSCTL run --secret T=env:X@h.test --upstream-ca fd:5 -- true") \
			>"$W/${t}_$k.out" 2>"$W/${t}_$k.err" </dev/null &
		wait_for 20 eval '[ "$(grep -c "): run\[[0-9]*\] started" "$W/daemon.err")" -gt "$n0" ]'
		rp=$(grep -o "): run\[[0-9]*\] started" "$W/daemon.err" | tail -1 | grep -o '[0-9]*')
		if [ $k = nodaemon ]; then
			kill -KILL "$DPID"
			wait "$DPID" 2>/dev/null
		fi
		kill -0 "$rp" 2>/dev/null && ok "$t.$k.stuck" || fail "$t.$k.stuck" "run[$rp] is not there"
		pkill -KILL -u "$UA" -x egressctl
		wait_for 20 eval '! kill -0 "$rp" 2>/dev/null'
		kill -0 "$rp" 2>/dev/null && fail "$t.$k.gone" "run[$rp] still runs without its client" ||
			ok "$t.$k.gone"
		a_nogrep "$t.$k.by_itself" "$W/daemon.err" "run\[$rp\] still there 10s after its client"
		rm -f "$RW/fifo-$$"
	done
	start_daemon || fail "$t.restarted" "no daemon"
}

# 9. another user (even one of the group) cannot stop or signal a run that
# is not theirs through the socket: a connection names no run but its own
test_signal_other() {
	local t=signal_other mark="egrns-other-$$"
	useradd -M -N -g "$G" -s /bin/sh "${UA}c" 2>/dev/null
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo $mark") \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null &
	local p=$!
	wait_for 20 grep -qs up "$W/$t.out"
	usock "${t}_sig" "${UA}c" signal 9
	a_grep "$t.refused" "$W/${t}_sig.out" 'malformed request'
	sleep 0.5
	cmd_alive "$UA" "$mark" && ok "$t.run_untouched" || fail "$t.run_untouched" "the run was stopped"
	pkill -TERM -u "$UA" -x egressctl
	wait "$p"
	userdel "${UA}c" 2>/dev/null
}

# 10. users.json's ceiling: at most max_runs_per_user at once
test_limit() {
	local t=limit mark="egrns-limit-$$" p1 p2
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo $mark") >"$W/${t}1.out" 2>&1 </dev/null &
	p1=$!
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo $mark") >"$W/${t}2.out" 2>&1 </dev/null &
	p2=$!
	wait_for 20 grep -qs up "$W/${t}1.out"
	wait_for 20 grep -qs up "$W/${t}2.out"
	urun "$t" "$UA" -- id -u
	a_rc "$t.third.status" 125 "$t"
	a_grep "$t.third.said" "$W/$t.err" 'has 2 runs already'
	pkill -TERM -u "$UA" -x egressctl
	wait "$p1" "$p2"
	urun "${t}_after" "$UA" -- id -u
	a_rc "$t.after" 0 "${t}_after"
}

# SIGHUP reads users.json again: a ceiling lowered holds for the next
# request; one that does not parse leaves the one in force
test_reload() {
	local t=reload mark="egrns-reload-$$" p1
	cp "$W/users.json" "$W/users.json.orig"
	printf '{"groups": ["%s"], "max_runs_per_user": 1}\n' "$G" >"$W/users.json"
	kill -HUP "$DPID"
	wait_for 20 grep -q "users.json read again (groups $G, 1 runs per user)" "$W/daemon.err"
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo $mark") >"$W/${t}1.out" 2>&1 </dev/null &
	p1=$!
	wait_for 20 grep -qs up "$W/${t}1.out"
	urun "$t" "$UA" -- id -u
	a_grep "$t.lowered" "$W/$t.err" 'has 1 runs already \(users.json: max_runs_per_user 1\)'
	echo '{"groups": 1}' >"$W/users.json"
	kill -HUP "$DPID"
	wait_for 20 grep -q "the ceiling in force stays" "$W/daemon.err"
	a_grep "$t.bad_kept.said" "$W/daemon.err" "users.json: groups: expected a list.*the ceiling in force stays"
	urun "${t}_bad" "$UA" -- id -u
	a_grep "$t.bad_kept" "$W/${t}_bad.err" 'has 1 runs already'
	pkill -TERM -u "$UA" -x egressctl
	wait "$p1"
	cp "$W/users.json.orig" "$W/users.json"
	kill -HUP "$DPID"
	wait_for 20 grep -q "users.json read again (groups $G, 2 runs per user)" "$W/daemon.err"
	urun "${t}_after" "$UA" -- id -u
	a_rc "$t.restored" 0 "${t}_after"
}

# users.json's "audit": true lets a user's run be --audit: the denied
# address is reached (its packets at the sensor) and the summary on the
# user's terminal says it would have been denied
test_audit_allowed() {
	local t=audit_allowed a
	cp "$W/users.json" "$W/users.json.orig"
	printf '{"groups": ["%s"], "audit": true}\n' "$G" >"$W/users.json"
	reread
	new4 a
	urun "$t" "$UA" --audit --allow example.test:443 -- "$PY" "$C/probe.py" tcp4 "$a" 80
	a_rc "$t.status" 0 "$t"
	egr_json "$t"
	a_ok "$t.connected"
	sensor_saw "$t.sensor" "tcp and dst host $a"
	a_grep "$t.summary" "$W/$t.err" "^  would deny +1  $(re "$a"):80 "
	cp "$W/users.json.orig" "$W/users.json"
	reread
	urun "${t}_off" "$UA" --audit -- true
	a_rc "$t.off.status" 2 "${t}_off"
	a_grep "$t.off.said" "$W/${t}_off.err" 'refused through the service'
}

# reread: SIGHUP to the daemon, back once it has read users.json again
reread() {
	local n
	n=$(grep -c "users.json read again" "$W/daemon.err")
	kill -HUP "$DPID"
	wait_for 20 eval '[ "$(grep -c "users.json read again" "$W/daemon.err")" -gt '"$n"' ]'
}

# users.json's "allow": each allow rule of the user's (option or policy
# file) within one of the ceiling's or the run refused before CMD, naming
# the rule; max_conns_per_run the proxy's bound, a higher --max-conns
# refused
test_ceiling_allow() {
	local t=ceiling_allow
	cp "$W/users.json" "$W/users.json.orig"
	printf '{"groups": ["%s"], "allow": ["**.ok-%s.test", "203.0.113.0/24:443"], "max_conns_per_run": 7}\n' \
		"$G" $$ >"$W/users.json"
	kill -HUP "$DPID"
	wait_for 20 grep -q "users.json read again (groups $G, 4 runs per user)" "$W/daemon.err"
	urun "$t" "$UA" -v --allow "a.ok-$$.test" --allow "203.0.113.9:443" -- true
	a_rc "$t.within" 0 "$t"
	a_grep "$t.max_conns" "$W/$t.err" 'proxy: at most 7 connections'
	urun "${t}_out" "$UA" --allow "a.ok-$$.test" --allow "b-$$.test" -- id -u
	a_rc "$t.outside.status" 2 "${t}_out"
	a_grep "$t.outside.named" "$W/${t}_out.err" "the allow rule b-$$\.test \(--allow\) is beyond what the administrator lets you allow"
	a_nogrep "$t.outside.not_run" "$W/${t}_out.out" .
	urun "${t}_port" "$UA" --allow "203.0.113.9:80" -- true
	a_rc "$t.port.status" 2 "${t}_port"
	echo '{"allow": ["a.ok-'$$'.test", "ok-'$$'.test", "*:443"]}' >"$RW/ceil-$$.json"
	chmod 0644 "$RW/ceil-$$.json"
	urun "${t}_file" "$UA" --policy "$RW/ceil-$$.json" -- true
	a_rc "$t.file.status" 2 "${t}_file"
	a_grep "$t.file.named" "$W/${t}_file.err" 'the allow rule \*:443 \(.*\) is beyond'
	urun "${t}_conns" "$UA" --max-conns 8 -- true
	a_rc "$t.conns.status" 2 "${t}_conns"
	a_grep "$t.conns.said" "$W/${t}_conns.err" "max-conns above users.json's max_conns_per_run"
	usock "${t}_opt" "$UA" args '["--service-ceiling", "**.test", "--", "id"]'
	a_grep "$t.option_refused" "$W/${t}_opt.out" 'refused through the service: .*--service-ceiling'
	cp "$W/users.json.orig" "$W/users.json"
	kill -HUP "$DPID"
	wait_for 20 grep -q "users.json read again (groups $G, 2 runs per user)" "$W/daemon.err"
}

# reread_bad: SIGHUP to the daemon, back once it has refused users.json
reread_bad() {
	local n
	n=$(grep -c "the ceiling in force stays" "$W/daemon.err")
	kill -HUP "$DPID"
	wait_for 20 eval '[ "$(grep -c "the ceiling in force stays" "$W/daemon.err")" -gt '"$n"' ]'
}

# users.json's "users": an account it names runs whatever its groups
# ($UB is in none of them: the socket's ACL lets it connect), with the
# keys its entry sets in place of the top level's: $UA's own allow
# ceiling refuses a rule the top level allows (another member runs it,
# named), $UA's max_runs_per_user (1) below the top level's (2) holds
# while the other member has two at once; an account that does not exist
# refuses the file (the ceiling in force stays) and the daemon's start;
# a second group's members reach the socket too; the entry gone, $UB is
# refused again, by the socket's mode
test_peruser() {
	local t=peruser mark="egrns-peruser-$$" p1 p2
	useradd -M -N -g "$G" -s /bin/sh "${UA}c" 2>/dev/null
	cp "$W/users.json" "$W/users.json.orig"
	printf '{"groups": ["%s"], "max_runs_per_user": 2, "allow": ["**.ok-%s.test"], "users": {"%s": {}, "%s": {"max_runs_per_user": 1, "allow": ["a.ok-%s.test"]}}}\n' \
		"$G" $$ "$UB" "$UA" $$ >"$W/users.json"
	reread
	a_grep "$t.read" "$W/daemon.err" "users.json read again \(groups $G, 2 runs per user, 2 users named\)"
	urun "${t}_ub" "$UB" -- id -u
	a_rc "$t.named.status" 0 "${t}_ub"
	a_eq "$t.named.as_user" "id -u in CMD" "$(cat "$W/${t}_ub.out")" "$(id -u "$UB")"
	urun "${t}_in" "$UA" --allow "a.ok-$$.test" -- true
	a_rc "$t.own_ceiling.within" 0 "${t}_in"
	urun "${t}_out" "$UA" --allow "b.ok-$$.test" -- id -u
	a_rc "$t.own_ceiling.refused" 2 "${t}_out"
	a_grep "$t.own_ceiling.named" "$W/${t}_out.err" "the allow rule b\.ok-$$\.test \(--allow\) is beyond what the administrator lets you allow"
	a_nogrep "$t.own_ceiling.not_run" "$W/${t}_out.out" .
	urun "${t}_c" "${UA}c" --allow "b.ok-$$.test" -- true
	a_rc "$t.group_ceiling.other_member" 0 "${t}_c"
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo $mark") >"$W/${t}1.out" 2>&1 </dev/null &
	p1=$!
	wait_for 20 grep -qs up "$W/${t}1.out"
	urun "${t}_second" "$UA" -- id -u
	a_rc "$t.own_max_runs.status" 125 "${t}_second"
	a_grep "$t.own_max_runs.said" "$W/${t}_second.err" "$UA has 1 runs already \(users.json: max_runs_per_user 1, theirs\)"
	(cd "$RW" && as "${UA}c" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo $mark") >"$W/${t}2.out" 2>&1 </dev/null &
	p2=$!
	wait_for 20 grep -qs up "$W/${t}2.out"
	urun "${t}_c2" "${UA}c" -- id -u
	a_rc "$t.group_max_runs.other_member" 0 "${t}_c2"
	pkill -TERM -u "$UA" -x egressctl
	pkill -TERM -u "${UA}c" -x egressctl
	wait "$p1" "$p2"
	# an account that does not exist: the file refused, named; the ceiling
	# in force ($UB named) stays; a daemon does not start on it
	printf '{"groups": ["%s"], "users": {"%s": {}, "egrns-nosuch-%s": {"audit": false}}}\n' \
		"$G" "$UB" $$ >"$W/users.json"
	reread_bad
	a_grep "$t.unknown.said" "$W/daemon.err" "users.json: users: no user called egrns-nosuch-$$: the ceiling in force stays"
	urun "${t}_kept" "$UB" -- id -u
	a_rc "$t.unknown.kept" 0 "${t}_kept"
	timeout -k 2 20 nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/$t.control" \
		--user-socket "$W/$t.sock" --users "$W/users.json" >"$W/${t}_d.out" 2>"$W/${t}_d.err"
	EGR_RC=$?
	[ "$EGR_RC" != 0 ] && ok "$t.unknown.no_start" || fail "$t.unknown.no_start" "the daemon started (exit $EGR_RC)"
	a_grep "$t.unknown.start_said" "$W/${t}_d.err" "users: no user called egrns-nosuch-$$"
	# a second group's member ($UB: nogroup) reaches the socket
	printf '{"groups": ["%s", "nogroup"]}\n' "$G" >"$W/users.json"
	reread
	urun "${t}_group2" "$UB" -- id -u
	a_rc "$t.second_group" 0 "${t}_group2"
	cp "$W/users.json.orig" "$W/users.json"
	reread
	urun "${t}_gone" "$UB" -- id -u
	a_rc "$t.gone.status" 125 "${t}_gone"
	a_grep "$t.gone.socket" "$W/${t}_gone.err" 'refused you \(Permission denied\)'
	userdel "${UA}c" 2>/dev/null
}

# egressctl status as a user: their runs through the service, not another
# member's; answered beside max_runs_per_user runs; a non-member refused
test_status() {
	local t=status p1 p2 p3 n
	useradd -M -N -g "$G" -s /bin/sh "${UA}c" 2>/dev/null
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo st-a1-$$") >"$W/${t}1.out" 2>&1 </dev/null &
	p1=$!
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo st-a2-$$") >"$W/${t}2.out" 2>&1 </dev/null &
	p2=$!
	(cd "$RW" && as "${UA}c" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo st-c-$$") >"$W/${t}3.out" 2>&1 </dev/null &
	p3=$!
	for n in 1 2 3; do wait_for 20 grep -qs up "$W/$t$n.out"; done
	(cd "$RW" && as "$UA" "$EGRESSCTL" status) >"$W/$t.out" 2>"$W/$t.err"
	EGR_RC=$?
	a_rc "$t.status" 0 "$t"
	a_grep "$t.own1" "$W/$t.out" "^run\[[0-9]+\] sh -c echo up; sleep 30; echo st-a1-$$: up [0-9]+ s, cgroup /egressctl/run-[0-9]+\$"
	a_grep "$t.own2" "$W/$t.out" "st-a2-$$"
	a_nogrep "$t.not_other" "$W/$t.out" "st-c-$$"
	(cd "$RW" && as "$UA" "$EGRESSCTL" status -j) >"$W/${t}_j.out" 2>&1
	a_eq "$t.json" "runs in status -j" "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$W/${t}_j.out" 2>&1)" 2
	(cd "$RW" && as "${UA}c" "$EGRESSCTL" status) >"$W/${t}_c.out" 2>&1
	a_grep "$t.other_own" "$W/${t}_c.out" "st-c-$$"
	a_nogrep "$t.other_not_mine" "$W/${t}_c.out" "st-a1-$$"
	chmod 0666 "$USOCK"
	(cd "$RW" && as "$UB" "$EGRESSCTL" status) >"$W/${t}_b.out" 2>&1
	chmod 0660 "$USOCK"
	a_grep "$t.nonmember" "$W/${t}_b.out" "$UB is in none of the groups allowed"
	a_nogrep "$t.nonmember_sees_nothing" "$W/${t}_b.out" "st-"
	pkill -TERM -u "$UA" -x egressctl
	pkill -TERM -u "${UA}c" -x egressctl
	wait "$p1" "$p2" "$p3"
	userdel "${UA}c" 2>/dev/null
}

# egressctl log as a user: the decision lines of their runs only (another
# member's not); log -f streams them and is not counted as a run against
# max_runs_per_user (2 here: a follower and two runs at once); at most 4
# followers a user
test_log() {
	local t=log x p1 pf i fp=()
	useradd -M -N -g "$G" -s /bin/sh "${UA}c" 2>/dev/null
	new4 x
	urun "${t}_a" "$UA" -- "$PY" "$C/probe.py" dns_udp "$x" "lg-a-$$.test"
	urun "${t}_c" "${UA}c" -- "$PY" "$C/probe.py" dns_udp "$x" "lg-c-$$.test"
	(cd "$RW" && as "$UA" "$EGRESSCTL" log) >"$W/$t.out" 2>"$W/$t.err"
	EGR_RC=$?
	a_rc "$t.status" 0 "$t"
	a_grep "$t.own" "$W/$t.out" "\"decision\":\"deny\".*lg-a-$$\.test"
	a_nogrep "$t.not_other" "$W/$t.out" "lg-c-$$"
	(cd "$RW" && as "${UA}c" "$EGRESSCTL" log) >"$W/${t}_c2.out" 2>&1
	a_grep "$t.other_own" "$W/${t}_c2.out" "lg-c-$$"
	a_nogrep "$t.other_not_mine" "$W/${t}_c2.out" "lg-a-$$"
	(cd "$RW" && as "$UA" "$EGRESSCTL" log -f) >"$W/${t}_f.out" 2>&1 &
	pf=$!
	wait_for 20 grep -qs "lg-a-$$" "$W/${t}_f.out"
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "echo up; sleep 30") >"$W/${t}_1.out" 2>&1 </dev/null &
	p1=$!
	wait_for 20 grep -qs up "$W/${t}_1.out"
	urun "${t}_new" "$UA" -- "$PY" "$C/probe.py" dns_udp "$x" "lg-new-$$.test"
	a_nogrep "$t.follower_not_a_run" "$W/${t}_new.err" 'runs already'
	wait_for 20 grep -qs "lg-new-$$" "$W/${t}_f.out"
	a_grep "$t.follow" "$W/${t}_f.out" "lg-new-$$\.test"
	a_nogrep "$t.follow_not_other" "$W/${t}_f.out" "lg-c-$$"
	# one after the other, each served (its first lines written) before
	# the next connects: so that the daemon counts four followers when
	# the fifth comes (a connection is a follower once answered)
	for i in 2 3 4; do
		(cd "$RW" && as "$UA" "$EGRESSCTL" log -f) >"$W/${t}_f$i.out" 2>&1 &
		fp+=($!)
		wait_for 20 grep -qs "lg-a-$$" "$W/${t}_f$i.out" ||
			fail "$t.follower_$i" "not served: $(head -c 300 "$W/${t}_f$i.out")"
	done
	(cd "$RW" && as "$UA" "$EGRESSCTL" log -f) >"$W/${t}_5.out" 2>&1
	a_grep "$t.followers_bounded" "$W/${t}_5.out" 'you follow the log on 4 connections already'
	pkill -TERM -u "$UA" -x egressctl
	wait "$p1" "$pf" "${fp[@]}" 2>/dev/null
	userdel "${UA}c" 2>/dev/null
}

# root sees every user's runs through the service: `log` (with no
# daemon on the control socket too) and `log -f` their lines, each with
# "user" and "uid"; `status` each user's run with whose it is (and -j);
# a run request of root's through the socket is refused
test_root_view() {
	local t=root_view x pf p1 p2 uid uidc
	useradd -M -N -g "$G" -s /bin/sh "${UA}c" 2>/dev/null
	uid=$(id -u "$UA")
	uidc=$(id -u "${UA}c")
	new4 x
	urun "${t}_a" "$UA" -- "$PY" "$C/probe.py" dns_udp "$x" "rv-a-$$.test"
	urun "${t}_c" "${UA}c" -- "$PY" "$C/probe.py" dns_udp "$x" "rv-c-$$.test"
	EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" log --control "$W/control" >"$W/$t.out" 2>"$W/$t.err"
	EGR_RC=$?
	a_rc "$t.log.status" 0 "$t"
	a_grep "$t.log.one" "$W/$t.out" "^\{\"user\":\"$UA\",\"uid\":$uid,.*\"decision\":\"deny\".*rv-a-$$\.test"
	a_grep "$t.log.other" "$W/$t.out" "^\{\"user\":\"${UA}c\",\"uid\":$uidc,.*rv-c-$$\.test"
	EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" log --control "$W/none.control" >"$W/${t}_nod.out" 2>"$W/${t}_nod.err"
	EGR_RC=$?
	a_rc "$t.log.no_daemon.status" 0 "${t}_nod"
	a_grep "$t.log.no_daemon" "$W/${t}_nod.out" "rv-a-$$\.test"
	EGRESSCTL_USER_SOCKET="$W/none.sock" "$EGRESSCTL" log --control "$W/none.control" >"$W/${t}_none.out" 2>"$W/${t}_none.err"
	EGR_RC=$?
	a_rc "$t.log.neither" 125 "${t}_none"
	a_grep "$t.log.neither_said" "$W/${t}_none.err" 'no egressctl daemon answers on'
	EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" log -f --control "$W/control" >"$W/${t}_f.out" 2>&1 &
	pf=$!
	wait_for 20 grep -qs "rv-c-$$" "$W/${t}_f.out"
	urun "${t}_new" "${UA}c" -- "$PY" "$C/probe.py" dns_udp "$x" "rv-new-$$.test"
	wait_for 20 grep -qs "rv-new-$$" "$W/${t}_f.out"
	a_grep "$t.follow" "$W/${t}_f.out" "^\{\"user\":\"${UA}c\",\"uid\":$uidc,.*rv-new-$$\.test"
	kill "$pf"
	wait "$pf" 2>/dev/null
	# its command carries a terminal escape (OSC 0, the window's title)
	# and a C1 control (CSI, U+009B): root's status shows them as '?',
	# status -j as \u escapes, never the bytes
	# and a policy file, which status names as the user did (not the
	# descriptor the client sent)
	echo '{"allow": ["rv.example.test"]}' >"$RW/rv-pol-$$.json"
	chmod 0644 "$RW/rv-pol-$$.json"
	(cd "$RW" && as "$UA" "$EGRESSCTL" run --policy "rv-pol-$$.json" -- sh -c "echo up; sleep 30; echo rv-run-a-$$" "$(printf 'esc\033]0;t\007\302\233')") >"$W/${t}1.out" 2>&1 </dev/null &
	p1=$!
	(cd "$RW" && as "${UA}c" "$EGRESSCTL" run -- sh -c "echo up; sleep 30; echo rv-run-c-$$") >"$W/${t}2.out" 2>&1 </dev/null &
	p2=$!
	wait_for 20 grep -qs up "$W/${t}1.out"
	wait_for 20 grep -qs up "$W/${t}2.out"
	EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" status --control "$W/control" >"$W/${t}_st.out" 2>&1
	EGR_RC=$?
	a_rc "$t.status.status" 0 "${t}_st"
	a_eq "$t.status.one" "the run under $UA's line" \
		"$(grep -A1 "^  user:    $UA (uid $uid), through the service\$" "$W/${t}_st.out" | grep -c "rv-run-a-$$")" 1
	a_eq "$t.status.other" "the run under ${UA}c's line" \
		"$(grep -A1 "^  user:    ${UA}c (uid $uidc), through the service\$" "$W/${t}_st.out" | grep -c "rv-run-c-$$")" 1
	a_eq "$t.status.no_escape" "lines of root's status with an ESC, BEL or C1 CSI" "$(grep -c $'[\033\007]\|\302\233' "$W/${t}_st.out")" 0
	a_grep "$t.status.escape_shown" "$W/${t}_st.out" "rv-run-a-$$ esc\?\]0;t\?\?\?\$"
	a_grep "$t.status.policy_named" "$W/${t}_st.out" "^  policy:  [0-9]+ rules from rv-pol-$$\.json\$"
	EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" status -j --control "$W/control" >"$W/${t}_j.out" 2>&1
	a_eq "$t.status.json" "runs of $UA in status -j" "$("$PY" -c '
import json, sys
print(sum(1 for e in json.load(open(sys.argv[1])) if (e.get("user") or {}).get("user") == sys.argv[2]
          and "rv-run-a" in (e["user"].get("command") or "")))' "$W/${t}_j.out" "$UA" 2>&1)" 1
	a_eq "$t.status.json_no_escape" "lines of status -j with an ESC, BEL or C1 CSI" "$(grep -c $'[\033\007]\|\302\233' "$W/${t}_j.out")" 0
	pkill -TERM -u "$UA" -x egressctl
	pkill -TERM -u "${UA}c" -x egressctl
	wait "$p1" "$p2"
	"$PY" "$C/usock.py" "$USOCK" args '["--", "id"]' >"$W/${t}_run.out" 2>&1
	a_grep "$t.no_root_run" "$W/${t}_run.out" 'root runs `egressctl run` itself, not through the service'
	userdel "${UA}c" 2>/dev/null
}

# --log syslog through the service: passed by the client and the daemon to
# run, which as root connects to /dev/log for the user (where /dev/log is
# missing, run says so, as root's run does: the sink itself is ci.sh's
# syslog tests); syslog:PATH, a socket root would connect to for the user,
# refused by the client and by the daemon
test_syslog() {
	local t=syslog
	urun "$t" "$UA" --log syslog -- true
	if [ -S /dev/log ]; then
		a_rc "$t.accepted" 0 "$t"
	else
		a_grep "$t.accepted" "$W/$t.err" '^egressctl: --log syslog: cannot reach the syslog socket /dev/log'
	fi
	urun "${t}_path" "$UA" --log "syslog:$W/x.sock" -- true
	a_rc "$t.path.client" 125 "${t}_path"
	a_grep "$t.path.client_said" "$W/${t}_path.err" 'not through the service: give a file, fd:N, syslog \(/dev/log\) or otlp:URL'
	usock "${t}_hostile" "$UA" args '["--log", "syslog:/run/x.sock", "--", "id"]'
	a_grep "$t.path.daemon" "$W/${t}_hostile.out" 'refused through the service: --log other than'
}

# 11. a confined process cannot ask the service for a run of its own (it
# would get a policy of its choosing)
test_confined() {
	local t=confined
	urun "$t" "$UA" -- env EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" run --allow example.test -- id -u
	a_grep "$t.refused" "$W/$t.err" 'a process egressctl confines .* cannot start runs'
	a_rc "$t.status" 125 "$t"
}

# a second account of the caller's name, uid 0, first in the passwd file
# (bind-mounted over /etc/passwd in the suite's own mount namespace): run
# --user NAME would find it, so the service refuses rather than run CMD
# as root
test_dupname() {
	local t=dupname uid gid
	uid=$(id -u "$UA")
	gid=$(id -g "$UA")
	if ! e2e_private_mntns; then
		note "$t: no mount namespace of the suite's own: skipped"
		return 0
	fi
	{ echo "$UA:x:0:$gid::/root:/bin/sh"; cat /etc/passwd; } >"$W/passwd"
	chmod 0644 "$W/passwd"
	mount --bind "$W/passwd" /etc/passwd || { fail "$t.setup" "cannot bind-mount passwd"; return; }
	(cd "$RW" && timeout -k 2 40 nsenter --net="$NS_SBX" setpriv --reuid="$uid" --regid="$gid" \
		--init-groups env EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" run -- id -u) \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null
	EGR_RC=$?
	umount /etc/passwd
	a_rc "$t.status" 125 "$t"
	a_grep "$t.said" "$W/$t.err" "names another uid"
	a_nogrep "$t.not_root" "$W/$t.out" '^0$'
}

# egressctl-users.service as the package ships it: none of the hardening
# that would be every CMD's (ProtectHome=, PrivateTmp=, ProtectSystem=, a
# capability set without CAP_SETUID), and its daemon, started with the
# unit's ExecStart= arguments (paths here the suite's), NoNewPrivileges=
# and LimitNOFILE=, serves a member's run
test_unit() {
	local t=unit in k args nnp= nofile d
	in=$(cd "$E2E_SRC/../.." && pwd)/contrib/systemd/egressctl-users.service.in
	for k in ProtectHome ProtectSystem PrivateTmp CapabilityBoundingSet; do
		a_nogrep "$t.no_$k" "$in" "^$k="
	done
	args=$(sed -n 's/^ExecStart=@BINDIR@\/egressctl //p' "$in" |
		sed "s|@RUNSTATEDIR@/egressctl-user.sock|$W/unit.sock|; s|@SYSCONFDIR@/egressctl/users.json|$W/users.json|; s|@RUNSTATEDIR@/egressctl/users.control|$W/unit.control|")
	case $args in *@*) fail "$t.execstart" "a path not replaced: $args"; return ;; esac
	# its runs outlive a restart: systemd signals the daemon alone
	a_grep "$t.killmode" "$in" '^KillMode=process$'
	grep -qx 'NoNewPrivileges=yes' "$in" && nnp=--no-new-privs
	nofile=$(sed -n 's/^LimitNOFILE=//p' "$in")
	# no higher than the suite may raise it (without CAP_SYS_RESOURCE here)
	prlimit --nofile="$nofile" true 2>/dev/null || nofile=$(ulimit -Hn)
	# shellcheck disable=SC2086 # args: the unit's words
	nsenter --net="$NS_SBX" prlimit --nofile="$nofile" setpriv $nnp "$EGRESSCTL" $args \
		>"$W/$t.dout" 2>"$W/$t.derr" &
	d=$!
	PIDS+=("$d")
	wait_for 20 test -S "$W/unit.sock" || { fail "$t.socket" "no socket: $(tail -c 300 "$W/$t.derr")"; return; }
	a_eq "$t.socket_mode" "the socket's mode and group" "$(stat -c '%a %G' "$W/unit.sock")" "660 $G"
	(cd "$RW" && as "$UA" env EGRESSCTL_USER_SOCKET="$W/unit.sock" "$EGRESSCTL" run -- sh -c 'id -u; grep NoNewPrivs /proc/self/status') \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null
	EGR_RC=$?
	a_rc "$t.run" 0 "$t"
	a_grep "$t.as_user" "$W/$t.out" "^$(id -u "$UA")\$"
	kill "$d"
	wait "$d" 2>/dev/null
}

# the service stopped mid-run (SIGTERM, as systemctl stop does) or killed
# (a crash; SIGKILL): the run goes on (cli/svcrun.c), CMD in its cgroup and
# as confined as before, its client waiting. After TERM a daemon started
# again takes the run up: the user's status lists it and its decision
# lines reach the user's log; after KILL none is started until CMD is done
# (the service stopped for good). Either way CMD's denied connection
# reaches nothing (nothing at the sensor, the decision on the user's
# terminal) and the client exits with CMD's status. The user's and
# root's log -f end with the daemon that stops, saying so.
# conns_to PATH: connections the listener at PATH has accepted, open now
# (an accepted unix socket is in its client's network namespace: the
# host's or the sandbox's here)
conns_to() {
	{ ss -xH state connected; in_sbx ss -xH state connected; } 2>/dev/null |
		awk -v p="$1" '$5 == p' | wc -l
}

test_restart() {
	local t=restart sig mark cg p pf pr go go2 a n0
	for sig in TERM KILL; do
		mark="egrns-restart-$sig-$$"
		go="$RW/restart-go-$sig-$$"
		go2="$RW/restart-end-$sig-$$"
		new4 a
		(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "cat /proc/self/cgroup; while [ ! -e $go ]; do sleep 0.1; done; $PY $C/probe.py tcp4 $a 80; echo $mark; while [ ! -e $go2 ]; do sleep 0.1; done; exit 7") \
			>"$W/${t}_$sig.out" 2>"$W/${t}_$sig.err" </dev/null &
		p=$!
		wait_for 20 grep -qs '^0::' "$W/${t}_$sig.out"
		cg=$CGROOT$(sed -n 's/^0:://p' "$W/${t}_$sig.out")
		# (CMD by its cgroup: the client's command line names $go too)
		grep -qs . "$cg/cgroup.procs" && ok "$t.$sig.running" || fail "$t.$sig.running" "CMD is not running"
		n0=$(conns_to "$USOCK")
		(cd "$RW" && as "$UA" "$EGRESSCTL" log -f) >/dev/null 2>"$W/${t}_${sig}_f.err" </dev/null &
		pf=$!
		EGRESSCTL_USER_SOCKET="$USOCK" timeout 40 "$EGRESSCTL" log -f --control "$W/control" \
			>/dev/null 2>"$W/${t}_${sig}_r.err" </dev/null &
		pr=$!
		# both followers connected before the daemon goes (the user's to
		# the socket; root's to the control socket and the socket)
		wait_for 10 eval '[ "$(conns_to "$USOCK")" -ge $((n0 + 2)) ] && [ "$(conns_to "$W/control")" -gt 0 ]'
		kill -"$sig" "$DPID"
		wait "$DPID" 2>/dev/null
		wait "$pf"
		a_eq "$t.$sig.follow.exit" "the user's log -f's exit status" "$?" 125
		a_grep "$t.$sig.follow.said" "$W/${t}_${sig}_f.err" \
			"^egressctl: log -f: the service at $(re "$USOCK")( closed the connection|: Connection reset)"
		wait "$pr"
		a_eq "$t.$sig.root_follow.exit" "root's log -f's exit status" "$?" 125
		a_grep "$t.$sig.root_follow.said" "$W/${t}_${sig}_r.err" \
			"^egressctl: log -f: the daemon on $(re "$W/control") closed the connection"
		sleep 0.5
		grep -qs . "$cg/cgroup.procs" && ok "$t.$sig.cmd_goes_on" || fail "$t.$sig.cmd_goes_on" "CMD ended with the service"
		kill -0 "$p" 2>/dev/null && ok "$t.$sig.client_waits" || fail "$t.$sig.client_waits" "the client is gone"
		a_eq "$t.$sig.cgroup_kept" "the run's cgroup $cg" "$(test -d "$cg" && echo kept)" kept
		# CMD's denial while no daemon is there
		touch "$go"
		wait_for 20 grep -qs "^$mark\$" "$W/${t}_$sig.out"
		if [ "$sig" = TERM ]; then
			start_daemon || { fail "$t.$sig.restarted" "no daemon"; return; }
			# the run comes back to it, as its user's
			wait_for 10 eval '(cd "$RW" && as "$UA" "$EGRESSCTL" status) 2>/dev/null | grep -q "restart-go-$sig"'
			(cd "$RW" && as "$UA" "$EGRESSCTL" status) >"$W/${t}_${sig}_st.out" 2>&1
			a_grep "$t.$sig.status_lists_it" "$W/${t}_${sig}_st.out" "^run\[[0-9]+\] .*restart-go-$sig-$$.*cgroup $(re "${cg#"$CGROOT"}")\$"
		fi
		touch "$go2"
		wait "$p"
		EGR_RC=$?
		a_rc "$t.$sig.exit_status" 7 "${t}_$sig"
		a_grep "$t.$sig.cmd_done" "$W/${t}_$sig.out" "^$mark\$"
		a_grep "$t.$sig.denied" "$W/${t}_$sig.err" "denied python3\[[0-9]+\] → $(re "$a"):80"
		sensor_none "$t.$sig.sensor" "dst host $a"
		wait_for 20 test ! -d "$cg"
		a_eq "$t.$sig.cgroup_removed" "the run's cgroup $cg" "$(test -d "$cg" && echo left)" ""
		if [ "$sig" = TERM ]; then
			# the line of that denial, kept by run, is the next daemon's
			(cd "$RW" && as "$UA" "$EGRESSCTL" log) >"$W/${t}_${sig}_log.out" 2>&1
			a_grep "$t.$sig.log_kept_while_down" "$W/${t}_${sig}_log.out" "$(re "$a")"
		else
			start_daemon || { fail "$t.$sig.restarted" "no daemon"; return; }
		fi
		urun "${t}_${sig}_after" "$UA" -- id -u
		a_rc "$t.$sig.serves_again" 0 "${t}_${sig}_after"
	done
}

# the client killed while no daemon is there: run itself sees its
# connection go and ends CMD (its cgroup removed), not left running
# unwatched until a daemon comes
test_restart_gone() {
	local t=restart_gone cg
	(cd "$RW" && as "$UA" "$EGRESSCTL" run -- sh -c "cat /proc/self/cgroup; sleep 300") \
		>"$W/$t.out" 2>"$W/$t.err" </dev/null &
	wait_for 20 grep -qs '^0::' "$W/$t.out"
	cg=$CGROOT$(sed -n 's/^0:://p' "$W/$t.out")
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	grep -qs . "$cg/cgroup.procs" && ok "$t.running" || fail "$t.running" "CMD is not running"
	pkill -KILL -u "$UA" -x egressctl
	wait_for 20 test ! -d "$cg"
	a_eq "$t.cgroup_removed" "the run's cgroup $cg" "$(test -d "$cg" && echo left)" ""
	start_daemon || fail "$t.restarted" "no daemon"
}

# a run whose daemon is gone asks the socket's path for the next one: a
# listener another user bound there meanwhile (the socket in a directory
# anybody may write) gets the connection and nothing else, neither the
# run's user and command nor its decision lines (cli/svcrun.c checks the
# peer is root first). The control: the same listener gets what a root
# client sends it.
test_restart_impostor() {
	local t=restart_impostor sock="$RW/imp-$$.sock" go="$RW/imp-go-$$" d p l
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/control-imp" --user-socket "$sock" \
		--users "$W/users.json" >>"$W/$t.dout" 2>>"$W/$t.derr" &
	d=$!
	PIDS+=("$d")
	wait_for 20 test -S "$sock" || { fail "$t.daemon" "no socket: $(tail -c 300 "$W/$t.derr")"; return; }
	(cd "$RW" && as "$UA" env EGRESSCTL_USER_SOCKET="$sock" "$EGRESSCTL" run -- sh -c \
		"echo up; while [ ! -e $go ]; do sleep 0.1; done; echo imp-done") >"$W/$t.out" 2>"$W/$t.err" </dev/null &
	p=$!
	wait_for 20 grep -qs up "$W/$t.out"
	kill -TERM "$d"
	wait "$d" 2>/dev/null
	# another user's listener at the path, recording what comes
	setpriv --reuid="$UB" --regid="$(id -g "$UB")" --clear-groups -- "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(8); s.settimeout(0.2)
out = open(sys.argv[2], "w"); end = time.time() + 3
while time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(0.5)
    try:
        b = c.recv(65536)
    except socket.timeout:
        b = b""
    out.write("conn %r\n" % b); out.flush()
' "$sock" "$RW/$t.got" 2>"$W/$t.lerr" &
	l=$!
	sleep 1
	"$PY" -c 'import socket, sys; c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); c.connect(sys.argv[1]); c.send(b"control-bytes")' \
		"$sock" 2>>"$W/$t.lerr"
	wait "$l"
	a_grep "$t.control.root_client_heard" "$RW/$t.got" "control-bytes"
	a_grep "$t.run_tried" "$RW/$t.got" "^conn b''\$"
	a_nogrep "$t.nothing_said" "$RW/$t.got" "adopt|$UA"
	rm -f "$sock"
	touch "$go"
	wait "$p"
	EGR_RC=$?
	a_rc "$t.run_done" 0 "$t"
	a_grep "$t.cmd_done" "$W/$t.out" '^imp-done$'
}

# ======================================================================
# --ask through the service: the questions on the user's terminal (the
# client's stdio, which the service's run asks on and relays to CMD's
# pty), answered there; never by CMD, which runs as the terminal's owner.
# ======================================================================

# ask_urun TAG ASKDRIVE-ARGS... -- RUN-ARGS...: `egressctl run --ask
# RUN-ARGS` as $UA on a terminal of their own that askdrive.py answers;
# its JSON in $W/TAG.json, the terminal's output in $W/TAG.tty
ask_urun() {
	local tag=$1 d=()
	shift
	while [ "$1" != -- ]; do d+=("$1"); shift; done
	shift
	(cd "$RW" && in_sbx timeout -k 2 40 "$PY" "$C/askdrive.py" --limit 35 --tty-owner "$(id -u "$UA")" \
		"${d[@]}" -- setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups \
		env EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" run --ask "$@") >"$W/$tag.json" 2>"$W/$tag.err"
	"$PY" -c 'import json,sys; d = json.load(open(sys.argv[1])); open(sys.argv[2], "w").write(d["out"].replace("\r", "")); print(d["questions"], d["rc"], d["modes_restored"])' \
		"$W/$tag.json" "$W/$tag.tty" >"$W/$tag.res" 2>&1 || echo "no JSON from askdrive: $(head -c 300 "$W/$tag.err")" >"$W/$tag.res"
}

# ask_res TAG: "QUESTIONS RC MODES_RESTORED"
ask_res() { cat "$W/$1.res"; }

test_ask() {
	local t=ask a b
	new4 a; new4 b
	ask_urun "$t" y,n -- --ask-timeout 10 -- sh -c "$PY $C/probe.py tcp4 $a 80; $PY $C/probe.py tcp4 $b 80"
	a_eq "$t.asked_twice_exit_modes" "questions, exit status, modes restored" "$(ask_res "$t")" "2 0 True"
	a_grep "$t.question" "$W/$t.tty" "allow $(re "$a"):80 for python3\[[0-9]+\]\? \[y\]es once / \[a\]lways this run / \[N\]o"
	jv "$(grep '^{' "$W/$t.tty" | sed -n 1p)"
	a_ok "$t.yes.connected"
	jv "$(grep '^{' "$W/$t.tty" | sed -n 2p)"
	a_denied "$t.no.refused"
	sensor_saw "$t.yes.sensor" "tcp and dst host $a"
	sensor_none "$t.no.sensor" "tcp and dst host $b"
	a_grep "$t.no.line" "$W/$t.tty" "denied python3\[[0-9]+\] → $(re "$b"):80"

	# CMD's terminal is the relay's pty: its own session, the size and
	# its change (the client forwards SIGWINCH), what is typed up to ^D
	ask_urun "${t}_tty" --on READY resize:40:100 --on cat-start send:68656c6c6f0a04 - -- \
		-- "$PY" "$C/ttyprobe.py" session
	a_eq "$t.tty.exit_modes" "questions, exit status, modes restored" "$(ask_res "${t}_tty")" "0 7 True"
	a_grep "$t.tty.stdio" "$W/${t}_tty.tty" '"isatty": \[true, true, true\]'
	a_grep "$t.tty.session" "$W/${t}_tty.tty" '"session_leader": true'
	a_grep "$t.tty.size" "$W/${t}_tty.tty" '"size": "24x80"'
	a_grep "$t.tty.sigwinch" "$W/${t}_tty.tty" 'size2=40x100'
	a_grep "$t.tty.eof" "$W/${t}_tty.tty" '^cat-done=hello$'

	# the service's run killed mid-run (it cannot put the terminal back):
	# the client does; and the daemon ends the CMD nothing watches now
	ask_urun "${t}_kill" - -- -- sh -c "echo SIGNOW; touch $RW/ask-kill-$$; sleep 20" &
	local p=$! rp
	wait_for 20 test -e "$RW/ask-kill-$$"
	rp=$(grep -o "): run\[[0-9]*\] started" "$W/daemon.err" | tail -1 | grep -o '[0-9]*')
	local cgid
	cgid=$(stat -c %i "$CGROOT/egressctl/run-$rp" 2>/dev/null)
	[ -n "$rp" ] && kill -KILL "$rp"
	wait "$p"
	a_eq "$t.killed.modes_restored" "the terminal's modes after run's SIGKILL" "$(ask_res "${t}_kill" | cut -d' ' -f3)" True
	wait_for 5 test ! -d "$CGROOT/egressctl/run-$rp"
	a_eq "$t.killed.cmd_ended" "run-$rp's cgroup after run's SIGKILL" "$(test -d "$CGROOT/egressctl/run-$rp" && echo left)" ""
	a_eq "$t.killed.pins_removed" "the pins of cgroup ${cgid:-?}" "$(test -e "$PIN_ROOT/${cgid:-none}" && echo left)" ""
	rm -f "$RW/ask-kill-$$"

	# users.json "ask": false refuses it
	cp "$W/users.json" "$W/users.json.orig"
	printf '{"groups": ["%s"], "ask": false}\n' "$G" >"$W/users.json"
	reread
	urun "${t}_off" "$UA" --ask -- true
	a_rc "$t.off.status" 2 "${t}_off"
	a_grep "$t.off.said" "$W/${t}_off.err" 'refused through the service: --ask \(users.json: "ask": false\)'
	cp "$W/users.json.orig" "$W/users.json"
	reread
}

# CMD, as the user who owns the terminal, tries every way to answer its own
# question (ttyprobe.py attack, as ask.sh's ask_inject): the question goes
# unanswered, the connection refused, nothing at the sensor. The control:
# the same user outside the sandbox reaches the terminal by path (and
# through another process's descriptors where Yama lets it).
test_ask_inject() {
	local t=ask_inject a tag yama=0 uid
	uid=$(id -u "$UA")
	[ -r /proc/sys/kernel/yama/ptrace_scope ] && yama=$(cat /proc/sys/kernel/yama/ptrace_scope)
	tag=${t}_ctl
	rm -f "$RW/$tag.json" "$RW/$tag.holder"
	in_sbx timeout 20 "$PY" "$C/askdrive.py" --limit 15 --tty-owner "$uid" - -- /bin/sh -c \
		'setpriv --reuid="$1" --regid="$1" --clear-groups -- sleep 30 & echo $! >"$2"; sleep 0.3; exec setpriv --reuid="$1" --regid="$1" --clear-groups -- "$3" "$4" attack "$5" 0.3 x $$ "$2"' \
		sh "$uid" "$RW/$tag.holder" "$PY" "$C/ttyprobe.py" "$RW/$tag.json" >"$W/$tag.out" 2>&1
	[ -s "$RW/$tag.holder" ] && kill "$(cat "$RW/$tag.holder")" 2>/dev/null
	# (and any process of the user's stops another of theirs)
	setpriv --reuid="$uid" --regid="$uid" --clear-groups -- sleep 30 &
	local hp=$!
	sleep 0.2
	setpriv --reuid="$uid" --regid="$uid" --clear-groups -- kill -STOP "$hp" &&
		ok "$t.control.signal_holder" || fail "$t.control.signal_holder" "the user cannot stop their own process"
	kill -KILL "$hp" 2>/dev/null
	wait "$hp" 2>/dev/null
	a_eq "$t.control.outer_by_path" "the terminal by path" "$(ask_vector "$tag" outer_by_path)" ok
	if [ "$yama" = 0 ]; then
		a_eq "$t.control.proc_fd_holder" "/proc/HOLDER/fd/0" "$(ask_vector "$tag" proc_fd_holder)" ok
	else
		note "$t.control.proc_fd_holder skipped: kernel.yama.ptrace_scope=$yama refuses it on this host"
	fi

	new4 a
	# (the suite has no prelude.sh: what the script needs goes in front)
	{
		printf 'PY=%s C=%s RW=%s\n' "$PY" "$C" "$RW"
		cat <<'EOF'
"$PY" "$C/ttyprobe.py" attack "$RW/$1.json" 4 a "$PPID" "$RW/$1.holder" &
sleep 1
"$PY" "$C/probe.py" tcp4 "$2" 80
# stop the user's process that holds the terminal (the client could be
# stopped and replaced so): Landlock's signal scope
if kill -STOP "$(cat "$RW/$1.holder")" 2>/dev/null; then echo signal=sent; else echo signal=refused; fi
wait
EOF
	} >"$W/ask_attack.sh"
	chmod 0644 "$W/ask_attack.sh"
	tag=${t}_svc
	rm -f "$RW/$tag.json" "$RW/$tag.holder"
	(cd "$RW" && in_sbx timeout -k 2 40 "$PY" "$C/askdrive.py" --limit 35 --tty-owner "$uid" - -- /bin/sh -c \
		'setpriv --reuid="$1" --regid="$1" --clear-groups -- sleep 30 & echo $! >"$2"; shift 2; exec "$@"' \
		sh "$uid" "$RW/$tag.holder" setpriv --reuid="$UA" --regid="$(id -g "$UA")" --init-groups \
		env EGRESSCTL_USER_SOCKET="$USOCK" "$EGRESSCTL" run --ask --ask-timeout 2 -- \
		/bin/sh "$W/ask_attack.sh" "$tag" "$a") >"$W/$tag.jsonx" 2>"$W/$tag.err"
	[ -s "$RW/$tag.holder" ] && kill "$(cat "$RW/$tag.holder")" 2>/dev/null
	"$PY" -c 'import json,sys; d = json.load(open(sys.argv[1])); open(sys.argv[2], "w").write(d["out"].replace("\r", "")); print(d["questions"])' \
		"$W/$tag.jsonx" "$W/$tag.tty" >"$W/$tag.res" 2>&1
	a_eq "$t.asked" "questions" "$(cat "$W/$tag.res")" 1
	a_grep "$t.unanswered" "$W/$tag.tty" 'no answer: denied'
	# (the transparent listener takes the connection, then closes it)
	jv "$(grep '^{' "$W/$tag.tty" | head -1)"
	[ "$P_ok" = true ] && [ -n "${P_data:-}" ] && fail "$t.refused" "answered: $P_json" || ok "$t.refused"
	a_grep "$t.denied_line" "$W/$tag.tty" "denied python3\[[0-9]+\] → $(re "$a"):80"
	sensor_none "$t.sensor" "tcp and dst host $a"
	a_eq "$t.sti_stdio" "TIOCSTI on stdio" "$(ask_vector "$tag" sti_stdio)" EPERM
	a_eq "$t.sti_dev_tty" "TIOCSTI on /dev/tty" "$(ask_vector "$tag" sti_dev_tty)" EPERM
	a_eq "$t.tioclinux" "TIOCLINUX" "$(ask_vector "$tag" tioclinux)" EPERM
	ask_vector "$tag" outer_by_path | grep -Eq '^(open ENOENT|not the outer terminal)$' &&
		ok "$t.outer_by_path" || fail "$t.outer_by_path" "the terminal by path: $(ask_vector "$tag" outer_by_path)"
	a_eq "$t.other_pts" "other ptys" "$(ask_vector "$tag" other_pts)" "none visible"
	a_eq "$t.proc_fd_holder" "/proc/HOLDER/fd" "$(ask_vector "$tag" proc_fd_holder)" "open EACCES"
	a_grep "$t.signal_holder" "$W/$tag.tty" '^signal=refused$'
}

ask_vector() {	# ask_vector TAG VECTOR: the attack's first result for VECTOR
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["vectors"].get(sys.argv[2], "missing"))' \
		"$RW/$1.json" "$2" 2>/dev/null || echo "no result file"
}

suite_main nosudo.sh nosudo_setup "ip nsenter setpriv unshare mount tcpdump useradd groupadd pgrep timeout bpftool dbus-daemon dbus-send" "$@"
