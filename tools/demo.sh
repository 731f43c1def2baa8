#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make demo`: a confined command that reaches exactly what its policy
# allows, whether or not it uses the proxy, and whose escape attempts are
# denied with readable reasons. Everything happens in two network namespaces
# made here ("sandbox host" 198.18.0.2 and a stand-in "internet" 198.18.0.1
# with its own resolver); nothing leaves the machine.
set -euo pipefail
EGRESSCTL=$(realpath "${1:-build/egressctl}")
TOP=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "demo: run as root (sudo make demo)" >&2; exit 1; }

SBX=egr-demo-sbx-$$
NET=egr-demo-inet-$$
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

# The "internet": a resolver and an HTTP server on 198.18.0.1.
"${NETNS[@]}" dnsmasq --no-daemon --no-resolv --no-hosts --listen-address=198.18.0.1 \
	--bind-interfaces --address=/www.demo.test/198.18.0.1 --address=/blocked.test/198.18.0.1 \
	--address=/exfil.test/198.18.0.1 >/dev/null 2>&1 &
pids+=($!)
"${NETNS[@]}" "$PY" -m http.server --bind 198.18.0.1 80 >/dev/null 2>&1 &
pids+=($!)
# The sandbox host: a "database" on loopback, outside the cgroup.
"${SBXNS[@]}" "$PY" -c 'import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9)); s.listen()
while True: s.accept()[0].close()' &
pids+=($!)
sleep 0.5

user=${SUDO_USER:-nobody}
[ "$user" = root ] && user=nobody
echo "\$ egressctl run --allow www.demo.test --user $user -- demo-escapes.py"
echo
rc=0
"${SBXNS[@]}" "$EGRESSCTL" run --allow www.demo.test --dns-upstream 198.18.0.1 \
	--user "$user" -- "$PY" "$TOP/tools/demo-escapes.py" 2>&1 || rc=$?
echo
echo "exit status $rc: the 'egressctl: denied' lines say who tried what and why;"
echo "the summary gives the --allow rule that would permit each denied destination."
exit "$rc"
