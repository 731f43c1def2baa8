# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2034
# Peer proxies from Debian for the bulk and rate benchmarks (sourced by
# run.sh): each configured allow-all with logging off, started in the sbx
# netns on loopback, checked with one fetch, and used by an unconfined
# client (curl, benchtool rate) exactly as egressctl's proxy is used by a
# confined one. A peer that is not installed, does not listen within
# PEER_START_S, or fails the check is recorded as skipped with the reason,
# never measured. Each phase that uses them calls peers_start (a no-op if
# they are up) and peers_stop (which waits until the sbx netns holds only our
# own servers); the bulk phase leaves them up for a rate phase that follows.
# No peer keeps origin connections for reuse (squid
# server_persistent_connections off, trafficserver keep_alive_enabled_out
# 0; the others never pool): like egressctl, which sends "Connection:
# close" upstream, each proxied request opens its own connection to www.
#
# peer_NAME functions start one peer and set PEER_PORT (return 3: not
# installed); PEER_ROWS (rows peer_NAME) and PEER_CURL[row] (curl
# arguments) are filled by peers_start, and so are PEER_RATE_ROWS and
# PEER_MODE[row] / PEER_VIA[row] (`benchtool rate` MODE and its options):
#   squid, tinyproxy, trafficserver, mitmproxy  connect -p ADDR (row peer_NAME)
#                                               http -p ADDR (row peer_NAME_http)
#   haproxy (TCP forward to www:80)             direct --connect-to ADDR
#   dante, microsocks                           socks5 -p ADDR
# BENCH_PEERS="haproxy dante" starts and measures only the peers named
# (default: all seven; "none": no peer), so that a quick run can compare
# egressctl with haproxy alone.

declare -A PEER_CURL=() PEER_PID=() PEER_MODE=() PEER_VIA=()
PEER_ROWS=()
PEER_BULK_ROWS=()
PEER_RATE_ROWS=()

peer_squid() {
	command -v squid >/dev/null || return 3
	PEER_PORT=3128
	mkdir -p "$W/squid" && chmod 0777 "$W/squid"
	cat >"$W/squid/squid.conf" <<EOF
http_port 127.0.0.1:$PEER_PORT
http_access allow all
access_log none
cache_store_log none
cache_log $W/squid/cache.log
cache deny all
cache_mem 8 MB
pid_filename $W/squid/squid.pid
coredump_dir $W/squid
dns_nameservers $DNS_IP
visible_hostname bench.test
shutdown_lifetime 1 seconds
max_filedescriptors 65536
server_persistent_connections off
EOF
	# -n: a service name of our own, so its shared-memory segments
	# (/dev/shm/NAME-cf__*.shm) are told apart and removed by peers_stop
	nsenter --net="$NS_SBX" squid -N -n "$SQUID_NAME" -f "$W/squid/squid.conf" >"$W/squid/out" 2>&1 &
	PEER_PID[squid]=$!
}

peer_tinyproxy() {
	command -v tinyproxy >/dev/null || return 3
	PEER_PORT=8888
	mkdir -p "$W/tinyproxy" && chmod 0777 "$W/tinyproxy"
	# no Allow and no ConnectPort lines: every client and port is allowed
	cat >"$W/tinyproxy/tinyproxy.conf" <<EOF
User nobody
Group nogroup
Port $PEER_PORT
Listen 127.0.0.1
Timeout 600
MaxClients 2000
LogLevel Critical
DisableViaHeader Yes
EOF
	nsenter --net="$NS_SBX" tinyproxy -d -c "$W/tinyproxy/tinyproxy.conf" >"$W/tinyproxy/out" 2>&1 &
	PEER_PID[tinyproxy]=$!
}

peer_trafficserver() {
	command -v traffic_server >/dev/null || return 3
	PEER_PORT=8080
	local d=$W/trafficserver
	mkdir -p "$d/var" "$d/run" "$d/log" "$d/cache" && cp -r /etc/trafficserver "$d/etc" || return 1
	cat >"$d/runroot.yaml" <<EOF
prefix: $d
exec_prefix: /usr
bindir: /usr/bin
sbindir: /usr/sbin
sysconfdir: $d/etc
datadir: /usr/share/trafficserver
includedir: /usr/include
libdir: /usr/lib/trafficserver
libexecdir: /usr/lib/trafficserver/modules
localstatedir: $d/var
runtimedir: $d/run
logdir: $d/log
cachedir: $d/cache
EOF
	# a forward proxy: no remap required, no cache, no logs, CONNECT to :80
	cat >>"$d/etc/records.config" <<EOF
CONFIG proxy.config.admin.user_id STRING #-1
CONFIG proxy.config.http.server_ports STRING $PEER_PORT
CONFIG proxy.config.url_remap.remap_required INT 0
CONFIG proxy.config.reverse_proxy.enabled INT 0
CONFIG proxy.config.http.cache.http INT 0
CONFIG proxy.config.log.logging_enabled INT 0
CONFIG proxy.config.http.connect_ports STRING 1-65535
CONFIG proxy.config.dns.nameservers STRING $DNS_IP
CONFIG proxy.config.dns.resolv_conf STRING NULL
CONFIG proxy.config.hostdb.host_file.path STRING $d/etc/hosts.empty
CONFIG proxy.config.http.insert_client_ip INT 0
CONFIG proxy.config.http.insert_squid_x_forwarded_for INT 0
CONFIG proxy.config.http.insert_request_via_str INT 0
CONFIG proxy.config.http.keep_alive_enabled_out INT 0
EOF
	: >"$d/etc/hosts.empty"
	cat >"$d/etc/ip_allow.yaml" <<EOF
ip_allow:
  - apply: in
    ip_addrs: 0/0
    action: allow
  - apply: in
    ip_addrs: ::/0
    action: allow
  - apply: out
    ip_addrs: 0/0
    action: allow
EOF
	: >"$d/etc/remap.config"
	: >"$d/etc/logging.yaml"
	: >"$d/etc/plugin.config"
	echo "$d/cache/cache.db 64M" >"$d/etc/storage.config"
	nsenter --net="$NS_SBX" env TS_RUNROOT="$d/runroot.yaml" traffic_server --run-root="$d/runroot.yaml" \
		>"$d/out" 2>&1 &
	PEER_PID[trafficserver]=$!
}

peer_mitmproxy() {
	command -v mitmdump >/dev/null || return 3
	PEER_PORT=8081
	mkdir -p "$W/mitmproxy"
	# streaming bodies (else it buffers each response whole), no flow output;
	# HTTPS it ends (its own CA in confdir, as Sandcat uses it) verified
	# upstream against nginx's certificate, as egressctl's --upstream-ca
	nsenter --net="$NS_SBX" env HOME="$W/mitmproxy" mitmdump -q --listen-host 127.0.0.1 --listen-port "$PEER_PORT" \
		--set confdir="$W/mitmproxy" --set stream_large_bodies=128k --set flow_detail=0 \
		--set ssl_verify_upstream_trusted_ca="$W/tls.crt" \
		--set termlog_verbosity=error >"$W/mitmproxy/out" 2>&1 &
	PEER_PID[mitmproxy]=$!
}

peer_haproxy() {
	command -v haproxy >/dev/null || return 3
	PEER_PORT=9000
	mkdir -p "$W/haproxy"
	cat >"$W/haproxy/haproxy.cfg" <<EOF
global
	maxconn 4096
defaults
	mode tcp
	timeout connect 5s
	timeout client 600s
	timeout server 600s
frontend f
	bind 127.0.0.1:$PEER_PORT
	default_backend b
backend b
	server www $WWW_IP:80
EOF
	nsenter --net="$NS_SBX" haproxy -db -f "$W/haproxy/haproxy.cfg" >"$W/haproxy/out" 2>&1 &
	PEER_PID[haproxy]=$!
}

peer_dante() {
	command -v danted >/dev/null || return 3
	PEER_PORT=1080
	mkdir -p "$W/dante"
	cat >"$W/dante/danted.conf" <<EOF
logoutput: $W/dante/danted.log
internal: 127.0.0.1 port = $PEER_PORT
external: 198.18.0.2
socksmethod: none
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
	from: 127.0.0.0/8 to: 0.0.0.0/0
}
socks pass {
	from: 0.0.0.0/0 to: 0.0.0.0/0
	command: connect
}
EOF
	nsenter --net="$NS_SBX" danted -f "$W/dante/danted.conf" -p "$W/dante/danted.pid" >"$W/dante/out" 2>&1 &
	PEER_PID[dante]=$!
}

peer_microsocks() {
	command -v microsocks >/dev/null || return 3
	PEER_PORT=1081
	mkdir -p "$W/microsocks"
	nsenter --net="$NS_SBX" microsocks -i 127.0.0.1 -p "$PEER_PORT" >"$W/microsocks/out" 2>&1 &
	PEER_PID[microsocks]=$!
}

# peer_start NAME: start it (all peers start at once, then are checked)
declare -A PEER_RC=() PEER_PORTS=()
peer_start() {
	PEER_PORT=""
	"peer_$1"
	PEER_RC[$1]=$?
	PEER_PORTS[$1]=$PEER_PORT
	[ -n "${PEER_PID[$1]:-}" ] && PIDS+=("${PEER_PID[$1]}")
}

# peer_check NAME CURL-ARGS...: wait for it to listen (PEER_START_S from
# PEER_T0), fetch through it; on success add the row peer_NAME to PEER_ROWS
peer_check() {
	local name=$1 row=peer_$1 port=${PEER_PORTS[$1]} code log left
	shift
	if [ "${PEER_RC[$name]}" = 3 ]; then
		skip "$row" "not installed (tools/install-deps.sh --bench)"
		return
	fi
	left=$((PEER_T0 + PEER_START_S - $(date +%s)))
	[ "$left" -ge 1 ] || left=1
	if [ "${PEER_RC[$name]}" != 0 ] || ! wait_for "$left" sbx_listening "$port"; then
		log=$(tail -c 300 "$W/$name/out" 2>/dev/null | tr '\n' ' ')
		skip "$row" "did not listen on 127.0.0.1:$port within ${PEER_START_S}s: ${log:-no output}"
		peer_kill "$name"
		return
	fi
	code=""
	for _ in 1 2 3 4 5; do	# some accept before they can serve
		code=$(in_sbx env -i PATH=/usr/bin:/bin "${NOBODY[@]}" curl -q -sS -o /dev/null \
			-w '%{http_code}' --max-time 5 "$@" http://www.bench.test/small 2>&1)
		[ "$code" = 200 ] && break
		sleep 0.5
	done
	if [ "$code" != 200 ]; then
		skip "$row" "check fetch through it failed: ${code:0:200}"
		peer_kill "$name"
		return
	fi
	PEER_ROWS+=("$row")
	PEER_CURL[$row]=$(printf '%q ' "$@")
	note "peer $row: up on 127.0.0.1:$port after $(($(date +%s) - PEER_T0)) s"
}

peer_kill() {
	local p=${PEER_PID[$1]:-} i keep=()
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 40); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	# reaped: its pid may be reused, so the cleanup must not signal it
	unset "PEER_PID[$1]"
	for i in "${PIDS[@]}"; do [ "$i" = "$p" ] || keep+=("$i"); done
	PIDS=("${keep[@]}")
}

# peers_bulk: PEER_BULK_ROWS, the checked peers' bulk rows: PEER_ROWS, and
# for each HTTP proxy among them an absolute-URI row (ROW_http: curl -x
# without -p), as egressctl's HTTP proxy is measured
peers_bulk() {
	local row name
	PEER_BULK_ROWS=()
	for row in "${PEER_ROWS[@]}"; do
		PEER_BULK_ROWS+=("$row")
		name=${row#peer_}
		case $name in
		squid | tinyproxy | trafficserver | mitmproxy)
			PEER_BULK_ROWS+=("${row}_http")
			PEER_CURL[${row}_http]="-x http://127.0.0.1:${PEER_PORTS[$name]}"
			;;
		esac
	done
}

# peers_rate: PEER_RATE_ROWS, PEER_MODE, PEER_VIA of the checked peers
# (their absolute-URI HTTP rows too, except with --quick)
peers_rate() {
	local row name via
	PEER_RATE_ROWS=()
	PEER_MODE=()
	PEER_VIA=()
	for row in "${PEER_ROWS[@]}"; do
		name=${row#peer_}
		via=127.0.0.1:${PEER_PORTS[$name]}
		case $name in
		squid | tinyproxy | trafficserver | mitmproxy)
			PEER_MODE[$row]=connect
			PEER_MODE[${row}_http]=http
			PEER_VIA[$row]="-p $via"
			PEER_VIA[${row}_http]="-p $via"
			PEER_RATE_ROWS+=("$row")
			# --quick: CONNECT only (the targets compare against it), to
			# stay under 2 minutes
			[ "$QUICK" = 1 ] || PEER_RATE_ROWS+=("${row}_http")
			;;
		haproxy)
			PEER_MODE[$row]=direct
			PEER_VIA[$row]="--connect-to $via"
			PEER_RATE_ROWS+=("$row")
			;;
		dante | microsocks)
			PEER_MODE[$row]=socks5
			PEER_VIA[$row]="-p $via"
			PEER_RATE_ROWS+=("$row")
			;;
		esac
	done
}

PEERS_ALL="squid tinyproxy trafficserver mitmproxy haproxy dante microsocks"
# peers_select: PEERS_WANTED from BENCH_PEERS; an unknown name is an error
peers_select() {
	local n
	PEERS_WANTED=${BENCH_PEERS-$PEERS_ALL}
	[ "$PEERS_WANTED" = none ] && PEERS_WANTED=""
	for n in $PEERS_WANTED; do
		[[ " $PEERS_ALL " == *" $n "* ]] || {
			echo "bench: BENCH_PEERS: no peer $n ($PEERS_ALL, or none)" >&2
			return 2
		}
	done
}
peer_wanted() { [[ " $PEERS_WANTED " == *" $1 "* ]]; }

PEERS_UP=0
peers_start() {
	local n
	[ "$PEERS_UP" = 1 ] && return	# still up from the bulk phase
	PEERS_UP=1
	PEER_T0=$(date +%s)
	PEER_ROWS=()
	PEER_CURL=()
	PEER_PID=()
	for n in $PEERS_WANTED; do
		peer_start "$n"
	done
	peer_wanted squid && peer_check squid -p -x http://127.0.0.1:3128
	peer_wanted tinyproxy && peer_check tinyproxy -p -x http://127.0.0.1:8888
	peer_wanted trafficserver && peer_check trafficserver -p -x http://127.0.0.1:8080
	peer_wanted mitmproxy && peer_check mitmproxy -p -x http://127.0.0.1:8081
	peer_wanted haproxy && peer_check haproxy --noproxy '*' --connect-to www.bench.test:80:127.0.0.1:9000
	peer_wanted dante && peer_check dante -x socks5h://127.0.0.1:1080
	peer_wanted microsocks && peer_check microsocks -x socks5h://127.0.0.1:1081
	peers_bulk
	peers_rate
}

# sbx_strays: the processes in the sbx netns but our own servers
sbx_strays() {
	local p
	for p in $(ip netns pids "$SBX" 2>/dev/null); do
		[[ " ${SBX_KEEP[*]} " == *" $p "* ]] || echo "$p"
	done
}

peers_stop() {
	local n p left
	for n in "${!PEER_PID[@]}"; do peer_kill "$n"; done
	# what the peers forked (dante's and squid's children, ATS threads' own
	# processes): every process left in the sbx netns but our own servers;
	# then wait (5 s at most) until they are gone, so that a later
	# peers_start finds the ports free
	for p in $(sbx_strays); do kill -KILL "$p" 2>/dev/null; done
	for _ in $(seq 100); do
		left=$(sbx_strays)
		[ -z "$left" ] && break
		sleep 0.05
	done
	[ -z "$left" ] || note "peers_stop: still in the sbx netns: $(echo "$left" | tr '\n' ' ')"
	# what a squid killed before its own cleanup leaves behind
	rm -f /dev/shm/"$SQUID_NAME"-*.shm
	PEER_ROWS=()
	PEER_RATE_ROWS=()
	PEER_BULK_ROWS=()
	PEERS_UP=0
}
