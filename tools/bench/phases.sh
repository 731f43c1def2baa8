# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The phases of the benchmark (sourced by run.sh). Each phase runs ROUNDS
# rounds; a round measures the direct baseline and then the egressctl paths
# (and peers), so every ratio pairs numbers taken minutes apart at most.
# Each writes JSON records to $RAW; report.py turns them into the table.
#
# Confined clients run as `egressctl run --user nobody ... -- /bin/sh
# SCRIPT`; the direct baselines run the same client as nobody in the same
# netns without egressctl.

# unconfined client as nobody in the sbx netns, no proxy variables
direct() { in_sbx env -i PATH=/usr/bin:/bin "${NOBODY[@]}" "$@"; }

# rec_lines TAG PREFIX PHASE ROUND: "PREFIX ROW RC JSON" lines of a confined
# run -> records {"phase","row","round","rc","res"}
rec_lines() {
	local row rc json
	while read -r _ row rc json; do
		[[ $json == \{* ]] || json=null
		# plain row names need no quoting help (saves a python start per line)
		if [[ $row =~ ^[A-Za-z0-9_./-]+$ ]]; then row="\"$row\""; else row=$(jstr "$row"); fi
		rec "{\"phase\":\"$3\",\"row\":$row,\"round\":$4,\"rc\":$rc,\"res\":$json}"
	done < <(out_lines "$1" "$2")
}

# ------------------------------------------------------------------ bulk

# prelude.sh, sourced by every client script:
#   bulk ROW CURL-ARGS...  BULK_S seconds of a transfer of /big (32 GiB, so
#                          curl's --max-time ends it): "BULK ROW RC JSON"
#   meas PREFIX ROW CMD... run CMD (a benchtool line): "PREFIX ROW RC JSON"
# In a confined script (EGRCPU=1), the JSON also gets "egr_cpu_ms": the CPU
# time egressctl (the script's parent) used while CMD ran.
write_prelude() {
	cat >"$W/prelude.sh" <<EOF
cpu() { read -r l </proc/\$PPID/stat; l=\${l##*) }; set -- \$l; echo \$((\${12} + \${13})); }
addcpu() {
	case \$1 in
	\{*\}) echo "\${1%\}},\"egr_cpu_ms\":\$((\$2 * 1000 / $(getconf CLK_TCK)))}" ;;
	*) echo "\$1" ;;
	esac
}
meas() {
	pfx=\$1; row=\$2; shift 2
	[ -n "\${EGRCPU:-}" ] && c0=\$(cpu)
	r=\$("\$@"); rc=\$?
	[ -n "\${EGRCPU:-}" ] && r=\$(addcpu "\$r" \$((\$(cpu) - c0)))
	echo "\$pfx \$row \$rc \$r"
}
bulk() {
	row=\$1; shift
	meas BULK "\$row" /usr/bin/curl -q -sS -o /dev/null --max-time $BULK_S \\
		-w '{"bytes":%{size_download},"secs":%{time_total},"code":%{http_code}}' "\$@" 2>/dev/null
}
EOF
	chmod 0644 "$W/prelude.sh"
}

phase_bulk() {
	local r i row url=http://www.bench.test/big tag script
	local paths=("egr_http -x \"\$HTTP_PROXY\" $url"
		"egr_connect -p -x \"\$HTTP_PROXY\" $url"
		"egr_socks5 -x \"\$ALL_PROXY\" $url"
		"egr_transparent --noproxy '*' $url"
		"egr_fast --noproxy '*' http://fast.bench.test/big")
	peers_start
	for r in $(seq "$ROUNDS"); do
		note "bulk round $r/$ROUNDS"
		# the baseline of the round: direct before and after the egressctl run
		direct /bin/sh -c ". $W/prelude.sh; bulk direct --noproxy '*' $url" >"$W/bulk-direct-$r.out"
		rec_lines "bulk-direct-$r" BULK bulk "$r"
		# the paths in a different order each round (no path always first)
		script=". $W/prelude.sh; EGRCPU=1"
		for i in $(seq 0 $((${#paths[@]} - 1))); do
			script+="
bulk ${paths[$(((i + r - 1) % ${#paths[@]}))]}"
		done
		tag=bulk-egr-$r
		egr_run "$tag" $((${#paths[@]} * (${BULK_S%.*} + 3) + 10)) "$script"
		rec_lines "$tag" BULK bulk "$r"
		direct /bin/sh -c ". $W/prelude.sh; bulk direct --noproxy '*' $url" >"$W/bulk-direct-$r.out"
		rec_lines "bulk-direct-$r" BULK bulk "$r"
		for row in "${PEER_BULK_ROWS[@]}"; do
			# shellcheck disable=SC2086 # PEER_CURL holds words
			direct /bin/sh -c ". $W/prelude.sh; bulk $row ${PEER_CURL[$row]} $url" \
				>"$W/bulk-peer-$r.out"
			rec_lines "bulk-peer-$r" BULK bulk "$r"
		done
	done
	# a rate phase next uses them too (starting them takes seconds)
	[[ " $PHASES " == *" bulk rate "* ]] || peers_stop
}

# ------------------------------------------------------------------ rate

# rate_egr ROUND: egressctl's five paths at every concurrency, one
# confined run
rate_egr() {
	local mode c target script=". $W/prelude.sh; EGRCPU=1; B=$W/benchtool"
	for mode in http connect socks5 transparent fast; do
		target=www.bench.test:80
		[ $mode = fast ] && target=fast.bench.test:80
		for c in $RATE_CONCS; do
			script+="
meas RATE egr_$mode/$c timeout 30 \$B rate $mode $target -c $c -d $RATE_S"
		done
	done
	egr_run "rate-egr-$1" $((15 * (${RATE_S%.*} + 4) + 20)) "$script"
	rec_lines "rate-egr-$1" RATE rate "$1"
}

# rate_peers ROUND: every checked peer with the same client, unconfined as
# nobody like the baseline, PEER_RATE_S per run; a peer that overruns its
# timeout is not run at higher concurrencies in that round
rate_peers() {
	local row c res rc
	for row in "${PEER_RATE_ROWS[@]}"; do
		for c in $RATE_CONCS; do
			# shellcheck disable=SC2086 # PEER_VIA holds words
			res=$(direct timeout "$PEER_RATE_T" "$W/benchtool" rate "${PEER_MODE[$row]}" \
				www.bench.test:80 ${PEER_VIA[$row]} -c "$c" -d "$PEER_RATE_S" \
				2>"$W/rate-$row-$c.err")
			rc=$?
			echo "RATE $row/$c $rc $res" >"$W/rate-peer-$1.out"
			rec_lines "rate-peer-$1" RATE rate "$1"
			if [ "$rc" = 124 ]; then
				note "rate: $row overran ${PEER_RATE_T}s with $c clients (round $1)"
				break
			fi
		done
	done
}

# The direct baseline first in every round, then egressctl and the peers,
# which of the two goes first alternating by round.
phase_rate() {
	local r c res
	peers_start
	for r in $(seq "$ROUNDS"); do
		note "rate round $r/$ROUNDS"
		for c in $RATE_CONCS; do
			res=$(direct timeout 30 "$W/benchtool" rate direct www.bench.test:80 -c "$c" \
				-d "$RATE_S" 2>"$W/rate-direct.err")
			echo "RATE direct/$c $? $res" >"$W/rate-direct-$r-$c.out"
			rec_lines "rate-direct-$r-$c" RATE rate "$r"
		done
		if [ $((r % 2)) = 1 ]; then
			rate_egr "$r"
			rate_peers "$r"
		else
			rate_peers "$r"
			rate_egr "$r"
		fi
	done
	peers_stop
}

# ----------------------------------------------------------------- https

# HTTPS to nginx (TLS, a P-256 certificate made at setup) by name, the way
# CI clients fetch from registries: direct (unconfined), the kernel-verified
# path (no proxy hop; the kernel checks the SNI), the transparent proxy (the
# same client, a run with --no-kernel-verify), CONNECT (curl -p -x), and
# inspected (the transparent path with --limited: TLS ended by egressctl,
# each request judged, a new verified TLS connection to nginx for each),
# and mitmproxy doing the same (CONNECT, TLS ended with a leaf of its CA,
# nginx's verified; peer_mitmproxy_https, when BENCH_PEERS has it); for
# its connection rate (wrk speaks no proxy) a second mitmdump in reverse
# mode in front of nginx, the same work a request (peer_mitmproxy_rev_https:
# rate rows only).
#   BULK ROW ...     curl, /big over one connection, BULK_S seconds
#   RATE ROW/C ...   wrk, C clients, a new TLS connection per request
#                    (Connection: close), RATE_S seconds
#   HS ROW ...       (also the fast path's, tcp://fast.bench.test:443: the
#                    same confinement without the check)
#                    the TLS handshake's time (curl time_appconnect -
#                    time_connect), p50 of HS_N handshakes; --resolve, so
#                    no lookup of each curl's overlaps the handshakes (the
#                    bulk line before it had egressctl's DNS answer the
#                    name, which opened the kernel-verified path)
# Then one more kernel-verified run with bpf_stats on: each program's run
# time per call on this path (phase "https_bpf").
HS_N=${BENCH_HS_N:-200} # BENCH_HS_N: more handshakes for a finer p50
https_prelude() {
	cat <<EOF
. $W/prelude.sh
set -f # K's '*' is curl's, not the shell's
K="-k --noproxy *"
hs() { r=\$1; shift; hsto \$r www.bench.test $WWW_IP "\$@"; }
hsto() { # hsto ROW HOST ADDR CURL-ARGS...
	row=\$1; h=\$2; ip=\$3; shift 3; i=0; : >"$RW/hs-\$row"
	while [ \$i -lt $HS_N ]; do
		/usr/bin/curl -q -sS -o /dev/null -w '%{time_connect} %{time_appconnect}\\n' "\$@" \\
			--resolve \$h:443:\$ip https://\$h/small >>"$RW/hs-\$row" 2>/dev/null
		i=\$((i + 1))
	done
	p50=\$(awk '{ print (\$2 - \$1) * 1000000 }' "$RW/hs-\$row" | sort -n | awk '{ a[NR] = \$1 } END { print a[int((NR + 1) / 2)] }')
	echo "HS \$row 0 {\"p50_us\":\${p50:-null},\"n\":\$(wc -l <"$RW/hs-\$row")}"
}
wr() { # wr ROW C [URL]
	row=\$1; c=\$2; u=\${3:-https://www.bench.test/small}
	o=\$(timeout 30 wrk -t 2 -c \$c -d ${RATE_S}s -H 'Connection: close' \$u 2>&1)
	rc=\$?
	rps=\$(printf '%s\\n' "\$o" | awk '/^Requests\\/sec:/ { print \$2 }')
	echo "RATE \$row/\$c \$rc {\"rps\":\${rps:-null}}"
}
EOF
}

# https_paths ROW CURL-ARGS: the bulk, handshake and rate lines of one path
# (through a proxy, CONNECT: no rate rows, wrk speaks no proxy)
https_paths() {
	local c out="bulk $1 $2 https://www.bench.test/big
hs $1 $2"
	if command -v wrk >/dev/null && [[ $2 != *" -x "* ]]; then
		for c in $RATE_CONCS; do
			out+="
wr $1 $c"
		done
	fi
	printf '%s\n' "$out"
}

https_rec() { # https_rec TAG ROUND: the lines of a run as phase https records
	rec_lines "$1" BULK https "$2"
	rec_lines "$1" RATE https "$2"
	rec_lines "$1" HS https "$2"
}

https_bpf() { # the kernel-verified path's programs, bpf_stats on
	local tag=https-bpf line
	OLD_BPF_STATS=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	EGR_EXTRA=()
	egr_start "$tag" "$(https_prelude)
bulk egr_kv_https \$K https://www.bench.test/big >/dev/null
hs egr_kv_https \$K >/dev/null
echo DONE
i=0; while [ ! -e $RW/https-bpf-stop ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done"
	if wait_line "$W/$tag.out" '^DONE' 90; then
		while read -r line; do
			rec "{\"phase\":\"https_bpf\",\"round\":1,\"res\":$line}"
		done < <("$PY" "$HERE/report.py" bpfstats "$EGR_CG")
	else
		note "https BPF stats: the workload did not finish: $(tail -c 300 "$W/$tag.err")"
	fi
	touch "$RW/https-bpf-stop"
	egr_join 20
	EGR_EXTRA=(--no-kernel-verify)
	sysctl -qw kernel.bpf_stats_enabled="$OLD_BPF_STATS"
	OLD_BPF_STATS=""
}

phase_https() {
	local r tag mitm=
	command -v wrk >/dev/null || skip "https connection rate" "wrk is not installed"
	if peer_wanted mitmproxy; then
		PEER_T0=$(date +%s)
		PEER_ROWS=()
		peer_start mitmproxy
		peer_check mitmproxy -p -x http://127.0.0.1:8081
		[[ " ${PEER_ROWS[*]} " == *" peer_mitmproxy "* ]] && mitm=1
	fi
	if [ -n "$mitm" ] && command -v wrk >/dev/null; then
		mkdir -p "$W/mitmrev"
		nsenter --net="$NS_SBX" env HOME="$W/mitmrev" mitmdump -q --mode reverse:https://www.bench.test:443 \
			--listen-host 127.0.0.1 --listen-port 8444 --set confdir="$W/mitmproxy" \
			--set ssl_verify_upstream_trusted_ca="$W/tls.crt" --set flow_detail=0 \
			--set termlog_verbosity=error >"$W/mitmrev/out" 2>&1 &
		MITMREV_PID=$!
		PIDS+=("$MITMREV_PID")
		wait_for 20 sbx_listening 8444 || {
			note "mitmproxy reverse: not listening: $(tail -c 200 "$W/mitmrev/out")"
			kill "$MITMREV_PID" 2>/dev/null
			MITMREV_PID=
		}
	fi
	for r in $(seq "$ROUNDS"); do
		note "https round $r/$ROUNDS"
		direct /bin/sh -c "$(https_prelude)
$(https_paths direct_https "\$K")" >"$W/https-direct-$r.out"
		https_rec "https-direct-$r" "$r"
		tag=https-kv-$r
		# the kernel-verified path, CONNECT, and the fast path's handshakes
		# (tcp://fast.bench.test:443: the same confinement, no check)
		EGR_EXTRA=()
		# (NO_PROXY names www.bench.test: curl would take -x around it)
		egr_run "$tag" 150 "$(https_prelude)
$(https_paths egr_kv_https "\$K")
unset NO_PROXY no_proxy
$(https_paths egr_connect_https "-k -p -x \$HTTP_PROXY")
/usr/bin/curl -q -sS \$K -o /dev/null https://fast.bench.test/small
hsto egr_fast_https fast.bench.test $FAST_IP \$K"
		EGR_EXTRA=(--no-kernel-verify)
		https_rec "$tag" "$r"
		tag=https-tr-$r
		egr_run "$tag" 150 "$(https_prelude)
$(https_paths egr_transparent_https "\$K")"
		https_rec "$tag" "$r"
		# HTTPS inspection: nginx's certificate is the one trusted upstream
		tag=https-ins-$r
		EGR_EXTRA=(--no-kernel-verify --limited --upstream-ca "$W/tls.crt")
		egr_run "$tag" 150 "$(https_prelude)
$(https_paths egr_inspected_https "\$K")"
		EGR_EXTRA=(--no-kernel-verify)
		https_rec "$tag" "$r"
		if [ -n "$mitm" ]; then
			direct /bin/sh -c "$(https_prelude)
$(https_paths peer_mitmproxy_https "-k -p -x http://127.0.0.1:8081")
$(for c in $RATE_CONCS; do [ -n "${MITMREV_PID:-}" ] && echo "wr peer_mitmproxy_rev_https $c https://127.0.0.1:8444/small"; done)" \
				>"$W/https-mitm-$r.out"
			https_rec "https-mitm-$r" "$r"
		fi
	done
	if [ -n "${MITMREV_PID:-}" ]; then
		kill "$MITMREV_PID" 2>/dev/null
		wait "$MITMREV_PID" 2>/dev/null
		MITMREV_PID=
	fi
	[ -z "$mitm" ] || peers_stop
	https_bpf
}

# ---------------------------------------------------------------- memory

# N idle CONNECT tunnels from a confined client to the holdsrv on the sbx
# loopback; RSS of the egressctl process before and after.
phase_mem() {
	local r tag before after fds res sock
	for r in $(seq "$ROUNDS"); do
		note "memory round $r/$ROUNDS: $MEM_TUNNELS tunnels"
		tag=mem-$r
		egr_start "$tag" "exec $W/benchtool hold 127.0.0.1:$HOLD_PORT -p env -n $MEM_TUNNELS -T 90 --go $RW/go-$r --stop $RW/stop-$r"
		if ! wait_line "$W/$tag.out" '^READY' 15; then
			note "memory: the hold client did not start: $(tail -c 300 "$W/$tag.err")"
			egr_join 5
			continue
		fi
		sleep 0.5	# egressctl idle: event loop up, no client yet
		before=$(rss_kib "$EGR_PID")
		touch "$RW/go-$r"
		wait_line "$W/$tag.out" '^\{' 60
		sleep 0.5
		after=$(rss_kib "$EGR_PID")
		fds=$(find "/proc/$EGR_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
		res=$(grep -m1 '^{' "$W/$tag.out")
		sock=$(in_sbx cat /proc/net/sockstat | awk '/^TCP:/ { print $NF }')
		touch "$RW/stop-$r"
		egr_join 20
		rec "{\"phase\":\"mem\",\"round\":$r,\"rss_before_kib\":${before:-null},\"rss_after_kib\":${after:-null},\"fds_after\":$fds,\"tcp_mem_pages\":${sock:-null},\"res\":${res:-null},\"egr_err\":$(jstr "$(grep -v '^$' "$W/$tag.err" | tail -3)")}"
		mem_inspected "$r"
	done
}

# MEM_INSPECTED idle inspected HTTPS sessions (tlshold.py: TLS ended by
# egressctl with the run's CA, one request each, then idle; --limited and
# nginx's certificate upstream, as phase_https's inspected row): RSS of
# egressctl before and after, as phase "mem_inspected"
mem_inspected() {
	local r=$1 tag=mem-ins-$1 before after res
	cp "$HERE/tlshold.py" "$W/tlshold.py" && chmod 0644 "$W/tlshold.py"
	EGR_EXTRA=(--no-kernel-verify --limited --upstream-ca "$W/tls.crt")
	egr_start "$tag" "exec $PY $W/tlshold.py www.bench.test /small $MEM_INSPECTED $RW/ins-go-$r $RW/ins-stop-$r"
	EGR_EXTRA=(--no-kernel-verify)
	if ! wait_line "$W/$tag.out" '^READY' 15; then
		note "memory: the inspected holder did not start: $(tail -c 300 "$W/$tag.err")"
		egr_join 5
		return
	fi
	sleep 0.5
	before=$(rss_kib "$EGR_PID")
	touch "$RW/ins-go-$r"
	wait_line "$W/$tag.out" '^\{' 120
	sleep 0.5
	after=$(rss_kib "$EGR_PID")
	res=$(grep -m1 '^{' "$W/$tag.out")
	touch "$RW/ins-stop-$r"
	egr_join 20
	rec "{\"phase\":\"mem_inspected\",\"round\":$r,\"rss_before_kib\":${before:-null},\"rss_after_kib\":${after:-null},\"res\":${res:-null}}"
}

# ------------------------------------------------------------ kernel cost

bpf_stats() {	# bpf_stats ROUND CGPATH: a record per egr_* program on CGPATH
	local line
	while read -r line; do
		rec "{\"phase\":\"bpf\",\"round\":$1,\"res\":$line}"
	done < <("$PY" "$HERE/report.py" bpfstats "$2")
}

phase_kern() {
	local r tag c res
	# connect() latency, stats off: unconfined vs fast path vs redirect
	for r in $(seq "$ROUNDS"); do
		note "connect latency round $r/$ROUNDS"
		res=$(direct timeout 60 "$W/benchtool" connlat "127.0.0.1:$ACC_PORT" -n "$CONNLAT_N")
		echo "CONN unconfined $? $res" >"$W/conn-direct-$r.out"
		rec_lines "conn-direct-$r" CONN connlat "$r"
		tag=conn-egr-$r
		egr_run "$tag" 120 "B=$W/benchtool
r=\$(timeout 60 \$B connlat 127.0.0.1:$ACC_PORT -n $CONNLAT_N); echo \"CONN fast_path \$? \$r\"
r=\$(timeout 60 \$B connlat www.bench.test:80 -n $CONNLAT_N); echo \"CONN redirect \$? \$r\""
		rec_lines "$tag" CONN connlat "$r"
	done
	# BPF run time per call, stats on, a mixed workload in each round
	OLD_BPF_STATS=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	for r in $(seq "$ROUNDS"); do
		note "BPF stats round $r/$ROUNDS"
		tag=bpf-$r
		c="/usr/bin/curl -q -sS -o /dev/null --max-time 5"
		egr_start "$tag" "B=$W/benchtool
\$B connlat 127.0.0.1:$ACC_PORT -n $CONNLAT_N >/dev/null
\$B connlat www.bench.test:80 -n $CONNLAT_N >/dev/null
\$B dns $DNS_IP -m cached -l 500 >/dev/null
\$B dns $DNS_IP -m uncached -l 200 >/dev/null
\$B rate connect www.bench.test:80 -c 8 -d $BPF_LOAD_S >/dev/null
\$B rate transparent www.bench.test:80 -c 8 -d $BPF_LOAD_S >/dev/null
\$B rate fast fast.bench.test:80 -c 8 -d $BPF_LOAD_S >/dev/null
$c -r 0-67108863 -p -x \"\$HTTP_PROXY\" http://www.bench.test/big
$c -r 0-67108863 --noproxy '*' http://fast.bench.test/big
echo DONE
i=0; while [ ! -e $RW/bpf-stop-$r ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done"
		if wait_line "$W/$tag.out" '^DONE' 90; then
			bpf_stats "$r" "$EGR_CG"
		else
			note "BPF stats: the workload did not finish: $(tail -c 300 "$W/$tag.err")"
		fi
		touch "$RW/bpf-stop-$r"
		egr_join 20
	done
	sysctl -qw kernel.bpf_stats_enabled="$OLD_BPF_STATS"
	OLD_BPF_STATS=""
}

# ---------------------------------------------------------------- policy

phase_policy() {
	local r out f
	local srcs=()
	# the rule engine whole but the policy file's loader (config.c: jansson)
	for f in "$REPO"/userspace/policy/*.c; do
		[ "${f##*/}" = config.c ] || srcs+=("$f")
	done
	gcc -O2 -std=gnu11 -D_GNU_SOURCE -I"$REPO/userspace" "$HERE/policy_bench.c" \
		"${srcs[@]}" -o "$W/policy_bench" -lm 2>"$W/policy_bench.gcc" || {
		skip "policy decisions" "policy_bench does not build: $(head -c 300 "$W/policy_bench.gcc")"
		return
	}
	for r in $(seq "$ROUNDS"); do
		out=$(timeout 120 "$W/policy_bench" 100000 "$POLICY_DECISIONS" 2>&1)
		echo "$out" >"$W/policy-$r.out"
		rec "{\"phase\":\"policy\",\"round\":$r,\"res\":$("$PY" "$HERE/report.py" policyparse "$W/policy-$r.out")}"
	done
	# HTTPS inspection's leaf certificates: minted, and a cache hit
	if ! gcc -O2 -std=gnu11 -D_GNU_SOURCE -I"$REPO/userspace" "$HERE/ca_bench.c" \
		"$REPO/userspace/inspect/ca.c" -lssl -lcrypto -o "$W/ca_bench" 2>"$W/ca_bench.gcc"; then
		skip "leaf certificates" "ca_bench does not build: $(head -c 300 "$W/ca_bench.gcc")"
		return
	fi
	for r in $(seq "$ROUNDS"); do
		out=$(timeout 60 "$W/ca_bench" 200 50 2>&1)
		[[ $out == \{* ]] || { note "ca_bench: $out"; continue; }
		rec "{\"phase\":\"ca\",\"round\":$r,\"res\":$out}"
	done
}

# ------------------------------------------------------------------- dns

phase_dns() {
	local r tag m res
	for r in $(seq "$ROUNDS"); do
		note "DNS round $r/$ROUNDS"
		for m in cached uncached; do
			res=$(direct timeout 60 "$W/benchtool" dns "$DNS_IP" -m $m -l "$DNS_LAT_N" \
				-q "$DNS_QPS_S" -w 32)
			echo "DNS upstream/$m $? $res" >"$W/dns-direct-$r-$m.out"
			rec_lines "dns-direct-$r-$m" DNS dns "$r"
		done
		tag=dns-egr-$r
		egr_run "$tag" 150 "B=$W/benchtool
r=\$(timeout 60 \$B dns $DNS_IP -m cached -l $DNS_LAT_N -q $DNS_QPS_S -w 32); echo \"DNS egressctl/cached \$? \$r\"
r=\$(timeout 60 \$B dns $DNS_IP -m uncached -l $DNS_LAT_N -q $DNS_QPS_S -w 32); echo \"DNS egressctl/uncached \$? \$r\""
		rec_lines "$tag" DNS dns "$r"
	done
}

# ---------------------------------------------------------------- daemon

# Runner mode with 100,000-rule policies (www.bench.test among them):
#  - start: `egressctl daemon` started, the time until the first decision
#    it serves (a client in the target cgroup retrying every 2 ms), fresh
#    and after a kill -9 (taking the pins over);
#  - reload: 32 clients opening connections through the transparent path,
#    three runs: without a reload, with a SIGHUP 2 s in swapping the policy
#    for another 100,000-rule one, without again; the build time, the p99
#    and max latency of the connections begun while it was built and
#    applied against the same window (offset from the run's start) of the
#    runs on either side (latency drifts within a run and from one run to
#    the next: report.py reloadparse), and the connections refused (both
#    policies allow them: the target is none).

# in_tcg CMD...: CMD as nobody inside the daemon's target cgroup (sbx netns)
in_tcg() {
	in_sbx sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"' \
		"$DCG" "$@"
}

daemon_policies() {
	"$PY" - "$W/policy-a.json" "$W/policy-b.json" <<'PYEOF'
import json, sys
for path, tag in zip(sys.argv[1:], "ab"):
    rules = ["h%d.%s.filler.test" % (i, tag) for i in range(100000)]
    rules.append("www.bench.test")
    json.dump({"allow": rules}, open(path, "w"))
PYEOF
}

# daemon_start TAG: the daemon on $DCG with $W/policy.json; D_PID, D_T0 (ns)
daemon_start() {
	D_T0=$(date +%s%N)
	nsenter --net="$NS_SBX" "$EGR" daemon --cgroup "$DCG" --policy "$W/policy.json" \
		--control "$W/daemon.ctl" --dns-upstream "$DNS_IP" --max-conns "$BENCH_MAXC" \
		--log "$W/$1.jlog" \
		--max-conns-per-process "$BENCH_MAXC" >>"$W/$1.dout" 2>&1 </dev/null &
	D_PID=$!
	PIDS+=("$D_PID")
}

# KNOCK: a transparent fetch of www.bench.test every 2 ms for 6 s (before
# the attach it goes direct, unconfined; during a restart's gap it is
# refused; the daemon's first decision is the first of its own log)
KNOCK='import socket, time
end = time.time() + 6
while time.time() < end:
    try:
        s = socket.create_connection(("198.18.1.10", 80), timeout=1)
        s.sendall(b"GET /small HTTP/1.1\r\nHost: www.bench.test\r\nConnection: close\r\n\r\n")
        s.recv(12)
        s.close()
    except OSError:
        pass
    time.sleep(0.002)'

# dstop: TERM to the daemon, KILL if it has not gone within 10 s (no
# `wait`: the daemon's pid is polled)
dstop() {
	local i
	kill -TERM "$D_PID" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		kill -0 "$D_PID" 2>/dev/null || return 0
		sleep 0.05
	done
	note "daemon $D_PID overstayed its TERM: KILL"
	kill -KILL "$D_PID" 2>/dev/null
}

# dwait FILE ERE SECONDS: until FILE has a line matching ERE (the daemon alive)
dwait() {
	local i
	for ((i = 0; i < 20 * $3; i++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$D_PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -Eq -- "$2" "$1" 2>/dev/null
}

phase_daemon() {
	local r t1 kind hup res
	DCG=$CGROOT/egressctl/$CG_PREFIX-daemon
	mkdir -p "$DCG" && echo "$(stat -c %i "$DCG") $DCG" >>"$W/cgids"
	daemon_policies || { skip "daemon" "cannot write the policies"; return; }
	cp "$W/policy-a.json" "$W/policy.json"
	for r in $(seq "$ROUNDS"); do
		note "daemon round $r/$ROUNDS"
		for kind in fresh takeover; do
			[ "$kind" = fresh ] && "$EGR" detach --cgroup "$DCG" >/dev/null 2>&1
			in_tcg "$PY" -c "$KNOCK" >/dev/null 2>&1 &
			sleep 0.3 # the client knocking already
			daemon_start "daemon-$r-$kind"
			dwait "$W/daemon-$r-$kind.jlog" '"decision":"allow"' 10
			# stopped with TERM so that its log is complete: the programs
			# stay pinned, as after a kill -9, for the next one to take over
			dstop
			# the first decision in its log (before the attach the client went
			# direct, unconfined, or was refused: no decision)
			t1=$("$PY" -c 'import json, sys, datetime
for ln in open(sys.argv[1]):
    d = json.loads(ln)
    if d.get("decision") == "allow" and d.get("host") == "www.bench.test":
        t = datetime.datetime.strptime(d["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        print(int(t.timestamp() * 1e6)); break' "$W/daemon-$r-$kind.jlog" 2>/dev/null)
			if [[ $t1 =~ ^[0-9]+$ ]]; then
				rec "{\"phase\":\"daemon\",\"round\":$r,\"row\":\"start/$kind\",\"us\":$((t1 - D_T0 / 1000))}"
			else
				rec "{\"phase\":\"daemon\",\"round\":$r,\"row\":\"start/$kind\",\"us\":null}"
			fi
		done
		sleep 6 # the knocking client done
		# the reload runs: the daemon up, 32 clients, with and without a SIGHUP
		daemon_start "daemon-$r"
		dwait "$W/daemon-$r.dout" 'ready:' 15
		in_tcg timeout 30 "$W/benchtool" rate transparent www.bench.test:80 -c 32 -d 6 \
			-o "$RW/rate-noreload-$r" >"$W/rate-noreload-$r.json"
		: >"$W/rate-reload-$r.json"
		in_tcg timeout 30 "$W/benchtool" rate transparent www.bench.test:80 -c 32 -d 6 \
			-o "$RW/rate-reload-$r" >"$W/rate-reload-$r.json" &
		bt=$!
		sleep 2
		cp "$W/policy-$([ $((r % 2)) = 1 ] && echo b || echo a).json" "$W/policy.json"
		hup=$(date +%s%N)
		kill -HUP "$D_PID"
		# waited for, not polled: a poll (grep, kill -0, sleep 20 times a
		# second) during the run added 1.3 ms to its p99 by itself
		wait "$bt"
		dwait "$W/daemon-$r.dout" 'reloaded:' 10
		# the same clients again without a reload: the window is compared
		# with the same window of the runs before and after it
		in_tcg timeout 30 "$W/benchtool" rate transparent www.bench.test:80 -c 32 -d 6 \
			-o "$RW/rate-after-$r" >"$W/rate-after-$r.json"
		res=$("$PY" "$HERE/report.py" reloadparse "$RW/rate-noreload-$r,$RW/rate-after-$r" \
			"$RW/rate-reload-$r" "$hup" "$W/daemon-$r.dout")
		rec "{\"phase\":\"daemon\",\"round\":$r,\"row\":\"reload\",\"res\":$res}"
		dstop
	done
	"$EGR" detach --cgroup "$DCG" >/dev/null 2>&1
	cg_remove "$DCG"
}

# ---------------------------------------------------------------- ustart

# run without sudo (issue 31): a user's `egressctl run` through the
# daemon's user socket, from its start to CMD's first instruction, beside
# root's `run --user` of the same user to the same, in the same round
# (5 of each, alternating, the medians a round's); CMD is date +%s%N, its
# clock read first thing. The group and user are the bench's own
# (UST_GROUP, UST_USER: removed here, or by the cleanup).
ust_once() { # ust_once KIND: one start, its microseconds (or nothing)
	local t0 t1
	t0=$(date +%s%N)
	if [ "$1" = root ]; then
		t1=$(cd / && in_sbx "$EGR" run -q --user "$UST_USER" -- date +%s%N 2>/dev/null)
	else
		t1=$(cd / && in_sbx setpriv --reuid="$UST_USER" --regid="$UST_GROUP" --init-groups \
			env EGRESSCTL_USER_SOCKET="$W/user.sock" "$EGR" run -q -- date +%s%N 2>/dev/null)
	fi
	[[ $t1 =~ ^[0-9]+$ ]] && echo $(((t1 - t0) / 1000))
}

phase_ustart() {
	local r i kind d us
	UST_GROUP=egrb$$
	UST_USER=egrb$$u
	if ! groupadd "$UST_GROUP" || ! useradd -M -N -g "$UST_GROUP" -s /bin/sh "$UST_USER"; then
		skip ustart "cannot make a group and user (groupadd, useradd)"
		return
	fi
	printf '{"groups": ["%s"], "max_runs_per_user": 4}\n' "$UST_GROUP" >"$W/users.json"
	in_sbx "$EGR" daemon --control "$W/ustart.ctl" --user-socket "$W/user.sock" \
		--users "$W/users.json" >"$W/ustart.dout" 2>&1 </dev/null &
	d=$!
	PIDS+=("$d")
	for ((i = 0; i < 200; i++)); do [ -S "$W/user.sock" ] && break; sleep 0.05; done
	for r in $(seq "$ROUNDS"); do
		note "ustart round $r/$ROUNDS"
		for i in 1 2 3 4 5; do
			for kind in root user; do
				us=$(ust_once "$kind")
				rec "{\"phase\":\"ustart\",\"round\":$r,\"row\":\"start/$kind\",\"us\":${us:-null}}"
			done
		done
	done
	kill -TERM "$d" 2>/dev/null
	wait "$d" 2>/dev/null
	userdel "$UST_USER" && groupdel "$UST_GROUP" && UST_USER= && UST_GROUP=
}
