#!/usr/bin/env bash
# `make demo`: a confined command whose escape attempts are denied with
# readable reasons. Everything happens in two network namespaces made here
# ("sandbox host" 198.18.0.2 and a stand-in "internet" 198.18.0.1); nothing
# leaves the machine. Until the proxy lands, a test helper stands in for the
# transparent listener and answers with the original destination it looked
# up in egressctl's BPF index.
set -euo pipefail
EGRESSCTL=$(realpath "${1:-build/egressctl}")
TOP=$(cd "$(dirname "$0")/.." && pwd)
TLISTEN=$(dirname "$EGRESSCTL")/helpers/tlisten
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "demo: run as root (sudo make demo)" >&2; exit 1; }

SBX=egr-demo-sbx-$$
NET=egr-demo-inet-$$
CG=demo-$$
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip netns del "$SBX" 2>/dev/null || true
	ip netns del "$NET" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$SBX"
ip netns add "$NET"
ip link add "v$$a" netns "$SBX" type veth peer name "v$$b" netns "$NET"
ip -n "$SBX" link set lo up
ip -n "$NET" link set lo up
ip -n "$SBX" addr add 198.18.0.2/24 dev "v$$a"
ip -n "$NET" addr add 198.18.0.1/24 dev "v$$b"
ip -n "$SBX" -6 addr add 2001:db8:1::2/64 dev "v$$a" nodad
ip -n "$NET" -6 addr add 2001:db8:1::1/64 dev "v$$b" nodad
ip -n "$SBX" link set "v$$a" up
ip -n "$NET" link set "v$$b" up
ip -n "$SBX" route add default via 198.18.0.1
ip -n "$SBX" -6 route add default via 2001:db8:1::1

# nsenter directly (not through a function) so that $! is the process itself
SBXNS=(nsenter --net="/run/netns/$SBX")
NETNS=(nsenter --net="/run/netns/$NET")

# The "internet": an HTTP server on 198.18.0.1:8080 and :80.
"${NETNS[@]}" "$PY" -m http.server --bind 198.18.0.1 8080 >/dev/null 2>&1 &
pids+=($!)
"${NETNS[@]}" "$PY" -m http.server --bind 198.18.0.1 80 >/dev/null 2>&1 &
pids+=($!)
# The sandbox host: a "database" on loopback outside the cgroup, and the
# stand-in transparent listener.
"${SBXNS[@]}" "$PY" -c 'import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9)); s.listen()
while True: s.accept()[0].close()' &
pids+=($!)
CGROOT=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
mkdir -p "$CGROOT/egressctl/$CG"
CGID=$(stat -c %i "$CGROOT/egressctl/$CG")
BPFFS=$(awk '$0 ~ / - bpf / {print $5; exit}' /proc/self/mountinfo)
"${SBXNS[@]}" "$TLISTEN" "${BPFFS:-/sys/fs/bpf}/egressctl/$CGID" 15001 >/dev/null &
pids+=($!)
sleep 0.5

user=${SUDO_USER:-nobody}
[ "$user" = root ] && user=nobody
echo "\$ egressctl run --cgroup $CG --transparent-port 15001 --allow 198.18.0.1:8080 \\"
echo "      --user $user -- demo-escapes.py"
echo
rc=0
"${SBXNS[@]}" "$EGRESSCTL" run --cgroup "$CG" --transparent-port 15001 --allow 198.18.0.1:8080 \
	--user "$user" -- "$PY" "$TOP/tools/demo-escapes.py" 198.18.0.1 || rc=$?
rmdir "$CGROOT/egressctl/$CG"
echo
echo "exit status $rc; denied attempts are the 'egressctl: denied' lines above."
exit "$rc"
