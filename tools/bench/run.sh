#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The egressctl benchmark: throughput, connection rate, latency, memory,
# kernel cost, policy and DNS, each as a ratio to a direct baseline measured
# in the same run (medians of >= 3 rounds, with min-max), next to the
# targets, and beside peer proxies from Debian doing the same job.
#
#   sudo tools/bench/run.sh [--quick] EGRESSCTL     (make bench / make bench-quick)
#   BENCH_PHASES="bulk rate"   run only these phases
#                              (bulk rate https mem kern policy dns daemon ustart;
#                              default: all)
#   BENCH_PEERS="haproxy"      start and measure only these peers (squid tinyproxy
#                              trafficserver mitmproxy haproxy dante microsocks;
#                              default: all; none: no peer)
#   BENCH_KEEP=1               keep the work dir /tmp/egr-bench-PID
#   BENCH_OUT=FILE             results file (default: bench-results.json in the repo)
#   BENCH_HOLD=SECONDS         keep the network and servers up that long after
#                              the phases (for perf/strace by hand), then clean up
#
# Prints one table; writes bench-results.json. Needs root, cgroup v2, BPF,
# and the packages of `tools/install-deps.sh --bench` (a missing peer is
# printed as skipped, with the reason).
#
# Everything runs inside two network namespaces this script creates, and
# nothing leaves them (docs/testing.md):
#
#   netns egrb-sbx-PID ("sandbox host")           netns egrb-inet-PID ("internet")
#   lo 127.0.0.1                                  lo: AnyIP 198.18.1.0/24
#     :7001 holdsrv (idle tunnels' far end)         198.18.1.10 www.bench.test
#     :7002 acceptsrv (connect() latency)           198.18.1.11 fast.bench.test
#     peer proxies: squid :3128, tinyproxy :8888,   198.18.1.20 *.q.bench.test
#     trafficserver :8080, mitmproxy :8081,       nginx :80 (/small 1 KiB, /big)
#     haproxy :9000 (-> 198.18.1.10:80),          dnsmasq 198.18.0.1:53
#     dante :1080, microsocks :1081                 (local answers, TTL 3600)
#   egressctl + its proxy (outside the cgroup,
#     --dns-upstream 198.18.0.1)
#   confined clients (inside the cgroup, as nobody)
#   veth 198.18.0.2 ───────────────────────────── veth 198.18.0.1
#
# The script runs in a private mount namespace where /etc/resolv.conf names
# 198.18.0.1 (so no resolver ever asks the machine's own), and a watchdog
# ends it (with the cleanup) if it overruns. Everything is removed by id:
# namespaces, processes (by pid), cgroups, bpffs pins, work files.
set -u

if [ -z "${EGRB_INNER:-}" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "bench: needs root (BPF, cgroups, network namespaces)" >&2
		exit 77
	fi
	export EGRB_INNER=1
	exec unshare --mount --propagation private -- "$BASH" "$0" "$@"
fi

QUICK=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	-h | --help)
		sed -n '2,19p' "$0"
		exit 0
		;;
	-*)
		echo "bench: unknown option $1" >&2
		exit 2
		;;
	*) break ;;
	esac
	shift
done
[ $# -eq 1 ] || {
	echo "usage: $0 [--quick] EGRESSCTL" >&2
	exit 2
}
EGR=$(realpath "$1")
[ -x "$EGR" ] || {
	echo "bench: $1 is not executable" >&2
	exit 2
}

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
OUTFILE=${BENCH_OUT:-$REPO/bench-results.json}
PHASES=${BENCH_PHASES:-bulk rate https mem kern policy dns daemon ustart}

# ------------------------------------------------------------ parameters

if [ "$QUICK" = 1 ]; then
	ROUNDS=3
	BULK_S=0.5		# seconds per bulk transfer (time-bounded)
	RATE_S=0.3		# seconds per connection-rate run
	PEER_RATE_S=0.2		# the same, through a peer proxy (21 runs a round)
	MEM_TUNNELS=10000
	MEM_INSPECTED=500	# idle inspected HTTPS sessions (phase_mem)
	CONNLAT_N=2000
	DNS_LAT_N=300
	DNS_QPS_S=0.5
	POLICY_DECISIONS=1000000
	BPF_LOAD_S=0.5		# seconds of each connection-rate load in the BPF stats run
	DEADLINE_S=300		# watchdog
	PEER_START_S=10
else
	ROUNDS=3
	BULK_S=3
	RATE_S=2
	PEER_RATE_S=1		# 33 peer runs a round: 1 s each keeps the run under 10 min
	MEM_TUNNELS=10000
	MEM_INSPECTED=500	# idle inspected HTTPS sessions (phase_mem)
	CONNLAT_N=10000
	DNS_LAT_N=2000
	DNS_QPS_S=2
	POLICY_DECISIONS=2000000
	BPF_LOAD_S=1
	DEADLINE_S=840
	PEER_START_S=20
fi
RATE_CONCS="1 32 64"
PEER_RATE_T=20			# timeout of one peer's connection-rate run
DEADLINE_S=$((DEADLINE_S + ${BENCH_HOLD:-0}))

SBX=egrb-sbx-$$
INET=egrb-inet-$$
SQUID_NAME=egrbench$$	# the squid peer's service name: its /dev/shm segments
NS_SBX=/run/netns/$SBX
NS_INET=/run/netns/$INET
W=/tmp/egr-bench-$$		# work dir (0755): configs, logs, binaries
RW=$W/rw			# writable by the confined user (go/stop files)
WWW=/dev/shm/egr-bench-$$	# nginx docroot (the big object is a sparse file)
RAW=$W/raw.jsonl		# one JSON record per measurement
CG_PREFIX=bench-$$		# --cgroup NAMEs: <cgroup2>/egressctl/bench-$$-TAG
PIN_ROOT=/sys/fs/bpf/egressctl
DNS_IP=198.18.0.1
WWW_IP=198.18.1.10
FAST_IP=198.18.1.11
Q_IP=198.18.1.20
HOLD_PORT=7001
ACC_PORT=7002
PIDS=()
SBX_KEEP=()	# the sbx netns' own servers (peers_stop kills everything else there)
CGROOT=""
OLD_BPF_STATS=""
WATCHDOG=""
CUR_PHASE=""	# the phase running (skip records name it)
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --)

note() { echo "# $*" >&2; }
now() { date +%s.%N; }

# ------------------------------------------------------------ cleanup

cg_remove() {	# cg_remove DIR: kill what runs in DIR, rmdir bottom-up
	local d i
	[ -d "$1" ] || return 0
	while read -r d; do
		[ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
	done < <(find "$1" -depth -type d 2>/dev/null)
	while read -r d; do
		for i in $(seq 60); do
			grep -q . "$d/cgroup.procs" 2>/dev/null || break
			sleep 0.05
		done
		rmdir "$d" 2>/dev/null
	done < <(find "$1" -depth -type d 2>/dev/null)
}

cleanup() {
	local p dir id
	trap - EXIT INT TERM HUP
	[ -n "$WATCHDOG" ] && kill "$WATCHDOG" 2>/dev/null
	[ -n "$OLD_BPF_STATS" ] && sysctl -qw kernel.bpf_stats_enabled="$OLD_BPF_STATS"
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	# anything else still in our namespaces is ours (peer children, clients)
	for p in $(ip netns pids "$SBX" 2>/dev/null) $(ip netns pids "$INET" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "$CGROOT" ]; then
		for dir in "$CGROOT/egressctl/$CG_PREFIX"-*; do
			[ -d "$dir" ] && echo "$(stat -c %i "$dir") $dir" >>"$W/cgids"
		done
		for dir in "$CGROOT/egressctl/$CG_PREFIX"-*; do cg_remove "$dir"; done
	fi
	if [ -s "$W/cgids" ]; then
		while read -r id _; do
			[ -n "$id" ] && [ -d "$PIN_ROOT/$id" ] && rm -rf "${PIN_ROOT:?}/$id"
		done < <(sort -u "$W/cgids")
	fi
	# phase ustart's user and group (when it did not remove them)
	[ -n "${UST_USER:-}" ] && userdel "$UST_USER" 2>/dev/null
	[ -n "${UST_GROUP:-}" ] && groupdel "$UST_GROUP" 2>/dev/null
	ip netns del "$SBX" 2>/dev/null
	ip netns del "$INET" 2>/dev/null
	rm -f /dev/shm/"$SQUID_NAME"-*.shm	# a killed squid's segments (peers.sh)
	rm -rf "$WWW"
	if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$W"; else note "kept $W"; fi
}
trap cleanup EXIT
trap 'note "interrupted"; exit 130' INT TERM HUP

# ------------------------------------------------------------ helpers

# (servers started in the background use nsenter itself, which execs, so
# that $! is the server's pid)
in_sbx() { nsenter --net="$NS_SBX" "$@"; }
in_inet() { nsenter --net="$NS_INET" "$@"; }
sbx_listening() { in_sbx ss -Hltn "sport = :$1" | grep -q LISTEN; }
inet_listening() { in_inet ss -Hltn "sport = :$1" | grep -q LISTEN; }

wait_for() {	# wait_for SECONDS CMD...: poll CMD every 50 ms, up to SECONDS
	local i lim=$((20 * $1))
	shift
	for ((i = 0; i < lim; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}

# rec JSON: append one record to the raw results
rec() { echo "$1" >>"$RAW"; }
# jstr S: S as a JSON string
jstr() { "$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
skip() {	# skip ROW REASON (in the phase CUR_PHASE)
	note "skipped $1: $2"
	rec "{\"phase\":\"skip\",\"row\":$(jstr "$1"),\"reason\":$(jstr "$2"),\"during\":$(jstr "$CUR_PHASE")}"
}

cgroup2_mount() {
	awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
		/proc/self/mountinfo | sed 's/\\040/ /g' |
		awk '$0 == "/sys/fs/cgroup" { f = $0 } NR == 1 { first = $0 } END { print (f != "" ? f : first) }'
}

# The policy of every egressctl run: what each phase reaches.
RULES=(
	--allow www.bench.test		# HTTP proxy, CONNECT, SOCKS5, transparent
	--allow tcp://fast.bench.test:80	# the fast path, opened by the DNS answer
	--allow tcp://fast.bench.test:443	# ... and its HTTPS handshakes (phase_https)
	--allow '**.q.bench.test'	# the DNS benchmark's names
	--allow "127.0.0.1:$HOLD_PORT"	# idle tunnels' far end (CONNECT to loopback)
	--allow "127.0.0.1:$ACC_PORT"	# connect() latency, fast path to loopback
)
# More options of every run. The phases but https measure the proxy's
# paths: the kernel-verified path would take www.bench.test's transparent
# connections (phase_https sets its own).
EGR_EXTRA=(--no-kernel-verify)

# egr_start TAG SCRIPT-TEXT: run `egressctl run` (confined CMD: /bin/sh on
# the script, as nobody) in the background in the sbx netns. Sets EGR_PID
# (egressctl itself: nsenter and env exec) and EGR_CG (its cgroup).
egr_start() {
	local tag=$1
	printf '%s\n' "$2" >"$W/$tag.sh"
	chmod 0644 "$W/$tag.sh"
	EGR_CG="$CGROOT/egressctl/$CG_PREFIX-$tag"
	nsenter --net="$NS_SBX" env --default-signal=INT,QUIT "$EGR" run \
		--cgroup "$CG_PREFIX-$tag" --user nobody --dns-upstream "$DNS_IP" -q --max-conns "$BENCH_MAXC" \
		--max-conns-per-process "$BENCH_MAXC" \
		"${RULES[@]}" "${EGR_EXTRA[@]}" \
		-- /bin/sh "$W/$tag.sh" >"$W/$tag.out" 2>"$W/$tag.err" </dev/null &
	EGR_PID=$!
	PIDS+=("$EGR_PID")
	# the cgroup's id, so a leaked pin dir can be removed by id
	(for i in $(seq 100); do
		[ -d "$EGR_CG" ] && {
			echo "$(stat -c %i "$EGR_CG") $EGR_CG" >>"$W/cgids"
			break
		}
		sleep 0.05
	done) &
}

# egr_join SECONDS: wait for the background egressctl; TERM, then KILL it if
# it overstays. EGR_RC is its status. Nothing polls while it runs: a sleep
# forked every 50 ms cost each egressctl row 1-2 ms of p99 latency that no
# direct or peer row paid.
egr_join() {
	local timer
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep "$1" &
		s=$!
		wait "$s"
		kill -0 "$EGR_PID" 2>/dev/null || exit 0
		note "egressctl $EGR_PID overstayed $1 s: TERM"
		kill -TERM "$EGR_PID" 2>/dev/null
		sleep 2
		kill -KILL "$EGR_PID" 2>/dev/null
	) &
	timer=$!
	wait "$EGR_PID" 2>/dev/null
	EGR_RC=$?
	kill -TERM "$timer" 2>/dev/null
	wait "$timer" 2>/dev/null
	cg_remove "$EGR_CG"
}

# egr_run TAG SECONDS SCRIPT-TEXT: the same, in the foreground, bounded
egr_run() {
	egr_start "$1" "$3"
	egr_join "$2"
	if [ "$EGR_RC" != 0 ]; then
		note "egressctl run ($1) exited $EGR_RC: $(tail -c 400 "$W/$1.err" | tr '\n' '|')"
	fi
}

# out_lines TAG PREFIX: the lines "PREFIX ..." the confined script printed
out_lines() { grep "^$2 " "$W/$1.out" 2>/dev/null; }

# wait_line FILE ERE SECONDS: wait until FILE has a line matching ERE
wait_line() {
	local i lim=$((20 * $3))
	for ((i = 0; i < lim; i++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$EGR_PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -Eq -- "$2" "$1" 2>/dev/null
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# ------------------------------------------------------------ setup

setup() {
	local i n
	CGROOT=$(cgroup2_mount)
	[ -n "$CGROOT" ] || {
		echo "bench: no cgroup2 mount" >&2
		return 77
	}
	for n in curl nginx dnsmasq bpftool gcc nsenter unshare setpriv openssl; do
		command -v "$n" >/dev/null || {
			echo "bench: $n is missing (tools/install-deps.sh --bench)" >&2
			return 1
		}
	done
	mkdir -m 0755 "$W" && mkdir -m 1777 "$RW" && mkdir -m 0755 "$WWW" || return 1
	: >"$W/cgids"
	: >"$RAW"
	# fds: 10,000 tunnels are 20,000 proxy descriptors and 10,000 client
	# ones; as high as the hard limit allows (raising it needs CAP_SYS_RESOURCE)
	ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
	# egressctl counts 6 descriptors per connection (client, upstream, a
	# pipe per direction) and refuses a --max-conns they cannot honour: ask
	# for what fits, all of it for one process (the memory phase's client)
	BENCH_MAXC=$((($(ulimit -n) - 512) / 6))
	[ "$BENCH_MAXC" -gt 20000 ] && BENCH_MAXC=20000

	# clients, built here from the tree (never into build/)
	gcc -O2 -g -Wall -pthread "$HERE/benchtool.c" -o "$W/benchtool" 2>"$W/gcc.err" || {
		echo "bench: cannot build benchtool: $(cat "$W/gcc.err")" >&2
		return 1
	}
	chmod 0755 "$W/benchtool"

	# resolv.conf of this mount namespace (and every child's): the test resolver
	echo "nameserver $DNS_IP" >"$W/resolv.conf"
	mount --bind "$W/resolv.conf" /etc/resolv.conf || return 1

	# the network
	ip netns add "$SBX" && ip netns add "$INET" || return 1
	ip -n "$SBX" link add vs type veth peer name vi netns "$INET" || return 1
	ip -n "$SBX" link set lo up
	ip -n "$INET" link set lo up
	ip -n "$SBX" addr add 198.18.0.2/24 dev vs
	ip -n "$INET" addr add 198.18.0.1/24 dev vi
	ip -n "$SBX" link set vs up
	ip -n "$INET" link set vi up
	ip -n "$SBX" route add default via 198.18.0.1
	ip -n "$INET" route add local 198.18.1.0/24 dev lo
	# ephemeral ports above our listeners, TIME_WAIT reuse for the rate runs
	in_sbx sysctl -qw net.ipv4.ip_local_port_range="20000 65000" net.ipv4.tcp_tw_reuse=1 \
		net.core.somaxconn=8192 || return 1
	in_inet sysctl -qw net.ipv4.ip_local_port_range="20000 65000" net.core.somaxconn=8192 \
		net.ipv4.tcp_max_syn_backlog=8192 || return 1
	in_sbx ping -c1 -W2 198.18.0.1 >/dev/null 2>&1

	# the "internet": DNS and HTTP
	nsenter --net="$NS_INET" dnsmasq -k -C /dev/null -u root --pid-file="$W/dnsmasq.pid" --no-resolv --no-hosts \
		--no-poll --bind-interfaces --listen-address="$DNS_IP" --port=53 --local=/test/ \
		--local-ttl=3600 --cache-size=10000 --dns-forward-max=1000 \
		--host-record=www.bench.test,$WWW_IP --host-record=fast.bench.test,$FAST_IP \
		--address=/q.bench.test/$Q_IP >"$W/dnsmasq.out" 2>&1 &
	PIDS+=($!)
	head -c 1024 /dev/zero | tr '\0' 'x' >"$WWW/small"
	truncate -s 32G "$WWW/big"	# sparse: no memory; longer than any transfer
	chmod 0644 "$WWW/small" "$WWW/big"
	# HTTPS (phase_https): a certificate for the bench's names, made here
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$W/tls.key" -out "$W/tls.crt" -subj /CN=www.bench.test \
		-addext "subjectAltName=DNS:*.bench.test" >"$W/openssl.out" 2>&1 || {
		echo "bench: openssl: $(tail -3 "$W/openssl.out")" >&2
		return 1
	}
	chmod 0644 "$W/tls.crt"
	mkdir -p "$W/nginx" && cat >"$W/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
worker_rlimit_nofile 65536;
pid $W/nginx/nginx.pid;
error_log $W/nginx/error.log warn;
events { worker_connections 16384; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	client_body_temp_path $W/nginx/body;
	proxy_temp_path $W/nginx/proxy;
	fastcgi_temp_path $W/nginx/fastcgi;
	uwsgi_temp_path $W/nginx/uwsgi;
	scgi_temp_path $W/nginx/scgi;
	server {
		listen 80 backlog=8192;
		listen 443 ssl backlog=8192;
		ssl_certificate $W/tls.crt;
		ssl_certificate_key $W/tls.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		root $WWW;
		location / { }
	}
}
EOF
	nsenter --net="$NS_INET" nginx -c "$W/nginx.conf" -p "$W/nginx" -e "$W/nginx/error.log" >"$W/nginx.out" 2>&1 &
	PIDS+=($!)

	# the sandbox host's own loopback services
	nsenter --net="$NS_SBX" "$W/benchtool" holdsrv "127.0.0.1:$HOLD_PORT" -T "$DEADLINE_S" >"$W/holdsrv.out" 2>&1 &
	PIDS+=($!)
	SBX_KEEP+=($!)
	nsenter --net="$NS_SBX" "$W/benchtool" acceptsrv "127.0.0.1:$ACC_PORT" -T "$DEADLINE_S" >"$W/acceptsrv.out" 2>&1 &
	PIDS+=($!)
	SBX_KEEP+=($!)

	wait_for 10 inet_listening 80 || {
		echo "bench: nginx did not start: $(cat "$W/nginx.out" "$W/nginx/error.log" 2>/dev/null)" >&2
		return 1
	}
	if ! { wait_for 5 sbx_listening "$HOLD_PORT" && wait_for 5 sbx_listening "$ACC_PORT"; }; then
		echo "bench: loopback servers did not start" >&2
		return 1
	fi
	for i in $(seq 50); do
		n=$(in_sbx timeout 3 "$W/benchtool" dns "$DNS_IP" -m uncached -l 1 2>/dev/null)
		[[ $n == *'"lat_n":1'* ]] && break
		sleep 0.1
	done
	[[ $n == *'"lat_n":1'* ]] || {
		echo "bench: dnsmasq does not answer: $(cat "$W/dnsmasq.out")" >&2
		return 1
	}
	n=$(in_sbx curl -q -sS --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 5 \
		"http://www.bench.test/small" 2>&1)
	[ "$n" = 200 ] || {
		echo "bench: direct fetch of http://www.bench.test/small: $n" >&2
		return 1
	}
	# the confined client as nobody must be able to traverse to its tools
	chmod 0755 "$W"
	return 0
}

meta() {
	local kernel cpu load
	kernel=$(uname -r)
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	rec "{\"phase\":\"meta\",\"kernel\":$(jstr "$kernel"),\"cpu\":$(jstr "$cpu"),\"cores\":$(nproc),\"mem_gib\":$(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo),\"quick\":$QUICK,\"rounds\":$ROUNDS,\"bulk_s\":$BULK_S,\"rate_s\":$RATE_S,\"peer_rate_s\":$PEER_RATE_S,\"loadavg_start\":$(jstr "$load"),\"egressctl\":$(jstr "$EGR"),\"date\":$(jstr "$(date -u +%FT%TZ)")}"
}

# shellcheck source=tools/bench/peers.sh
. "$HERE/peers.sh"
# shellcheck source=tools/bench/phases.sh
. "$HERE/phases.sh"

# ------------------------------------------------------------ main

T0=$(date +%s)
peers_select || exit $?
setup || exit $?
(
	sleep "$DEADLINE_S"
	echo "bench: watchdog: over ${DEADLINE_S}s, stopping" >&2
	kill -TERM $$
) &
WATCHDOG=$!
meta
write_prelude # every phase's client scripts source it
note "egressctl benchmark$([ "$QUICK" = 1 ] && echo ' (quick)'): $ROUNDS rounds; phases: $PHASES; work dir $W"
for ph in $PHASES; do
	declare -F "phase_$ph" >/dev/null || {
		note "no phase $ph (bulk rate mem kern policy dns)"
		continue
	}
	t=$(date +%s)
	note "phase $ph"
	CUR_PHASE=$ph
	"phase_$ph"
	CUR_PHASE=""
	t=$(($(date +%s) - t))
	note "phase $ph: $t s"
	rec "{\"phase\":\"timing\",\"of\":\"$ph\",\"secs\":$t}"
done
if [ -n "${BENCH_HOLD:-}" ]; then
	# the namespaces' names exist only in this script's mount namespace
	note "holding the network for ${BENCH_HOLD}s: nsenter -t $$ -m nsenter --net=$NS_SBX" \
		"(or --net=$NS_INET)"
	sleep "$BENCH_HOLD" &	# in the background: TERM/INT end the wait at once,
	PIDS+=("$!")		# and the cleanup ends the sleep (its wait would hang)
	wait $!
fi
rec "{\"phase\":\"meta_end\",\"elapsed_s\":$(($(date +%s) - T0)),\"loadavg_end\":$(jstr "$(cut -d' ' -f1-3 /proc/loadavg)")}"
"$PY" "$HERE/report.py" "$RAW" "$OUTFILE"
