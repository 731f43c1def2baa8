#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of containers in runner mode, `egressctl daemon
# --containers ADDR`: a real container runtime (podman, rootful, runc, vfs
# storage, netavark) places its containers under a target cgroup
# (--cgroup-parent), and every container there is confined by the
# target's programs and policy, whatever its network: on a bridge (its
# own network namespace: redirects and DNS reach the daemon at the
# bridge's gateway ADDR), with --network host (as on the host), with
# --network none (nothing to reach, nothing leaks). A container under
# another parent is not affected. Each test asserts the client's result
# and the world's: the web server's and dnsmasq's logs, the decision log
# (which names the container) and the leak sensor.
#
#   tests/e2e/containers.sh build/egressctl    (as root; make e2e does this)
#   E2E_TESTS="bridge host" ...      run only these test functions
#   E2E_KEEP=1 ...                   keep /tmp/egr-e2e-PID (logs, pcap)
#
# The network is audit.sh's (audit_net.sh): dnsmasq on 198.18.0.1
# (a.example.test 203.0.113.10, ...), HTTP on :80 of every address of the
# test "internet", the leak sensor on its veth. Podman runs in the sandbox
# host's network namespace (nsenter --net only), with its storage, run
# directory, configuration and network definitions in the work dir: its
# bridge podman0 (198.19.1.1/24, containers 198.19.1.x) and NAT are that
# namespace's, whose one way out is the veth to the test internet; the
# image is built here from busybox-static (no registry is ever asked).
# The containers' nameserver is the test's dnsmasq. The containerd test
# runs a containerd of its own (Debian's 1.6, runc) the same way, in the
# sandbox host's network namespace with its root, state and sockets in the
# work dir, an OCI archive of the same busybox-static userland imported.
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion, and as the last
# line "N passed, M failed".  Exit 1 if any failed, 77 if not root.

set -u
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"
. "$(dirname "$0")/audit_net.sh"

ALL_TESTS="bridge split host none outside off relay othernet ambiguous loopback restart annotations containerd"
CTR_SUBNET=198.19.1.0/24
CTR_GW=198.19.1.1	# podman0 in the sbx netns: where containers reach the daemon
IMAGE=localhost/egr-e2e-busybox
PM=$W/podman		# podman's root, run root, config and networks
A_DENY=203.0.113.60	# fresh addresses, one per attempt (the sensor tells them apart)
A_HOST_DENY=203.0.113.61
A_OUT=203.0.113.62
A_NONE=203.0.113.63
A_OFF=203.0.113.64
NET2=egr-e2e-$$-net2	# a second podman network, 198.19.2.0/24
NOWHERE=198.19.3.1	# an address no interface of the sbx netns has
AMB_NS=(egr-e2e-$$-amba egr-e2e-$$-ambb)	# the ambiguous test's two namespaces
AMB_GW=198.19.4.1	# their --containers address
AMB_IP=198.19.5.2	# the address both have
AMB_DENIED=203.0.113.70	# where A connects (denied)
AMB_ALLOWED=203.0.113.71	# where B connects (allowed)
LO_OWN=15999		# --proxy-port: one of "egressctl's ports" in the loopback test
A_GAP=203.0.113.72	# restart: what a container tries while no daemon runs
CD=$W/containerd	# the containerd test's own: root, state, socket, runc root, fifos
CD_IMAGE=localhost/egr-e2e-busybox:latest
CD_PID=			# that containerd, while it runs
CD_IDS=()		# every container id it was asked to run

# ------------------------------------------------------------- the runtime

# podman as this suite runs it: in the sbx netns, everything under $PM
pm() {
	CONTAINERS_CONF="$PM/containers.conf" timeout -k 5 120 nsenter --net="$NS_SBX" \
		podman --root "$PM/root" --runroot "$PM/run" --storage-driver vfs "$@"
}

# tcg TAG: a target cgroup this suite makes (cg_watch records its id,
# e2e_cleanup empties and removes it); parent TAG: the same as podman's
# --cgroup-parent (relative to the cgroup2 root)
tcg() { echo "$CGROOT/egr-e2e-$$-$1"; }
parent() { echo "/egr-e2e-$$-$1"; }

# ctr TAG PARENT_TAG NETWORK SCRIPT: one container (removed when done)
# under --cgroup-parent PARENT_TAG's, on NETWORK (bridge, host, none),
# running sh -c SCRIPT; output in $W/TAG.cout, its id in CID
ctr() {
	local tag=$1
	rm -f "$W/$tag.cid"
	pm run --rm --cidfile "$W/$tag.cid" --cgroup-parent="$(parent "$2")" --network "$3" \
		"$IMAGE" sh -c "$4" >"$W/$tag.cout" 2>&1
	CID=$(cat "$W/$tag.cid" 2>/dev/null)
}

# http HOST PATH [ADDR [PORT]]: what a container runs for one plain-HTTP
# request with busybox nc (its wget crashes in Debian 12's busybox-static):
# the status line, or the client's words (its files named after PATH, so
# two in one container at once never read each other's answer)
# (nc half-closes at the end of its input, which ends a plain-HTTP
# exchange at the proxy: the request's writer stays until nc is done)
http() {
	printf 'rm -f /tmp/f.%s; mkfifo /tmp/f.%s; nc -w 10 %s %s </tmp/f.%s >/tmp/o.%s 2>&1 & n=$!; ' "$2" "$2" "${3:-$1}" "${4:-80}" "$2" "$2"
	printf '{ printf "GET /%s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n"; ' "$2" "$1"
	printf 'while kill -0 $n 2>/dev/null; do sleep 0.1; done; } >/tmp/f.%s; echo "R: $(head -1 /tmp/o.%s)"; ' "$2" "$2"
}

ctr_setup() {
	local b
	for b in podman runc /usr/lib/podman/netavark iptables /bin/busybox; do
		command -v "$b" >/dev/null || { echo "container runtime: $b missing (tools/install-deps.sh --containers)"; return 1; }
	done
	mkdir -p "$PM/networks" "$PM/tmp" "$PM/rootfs/bin" "$PM/rootfs/etc" "$PM/rootfs/tmp" || return 1
	# Debian 12's podman with its defaults fails here in three ways, each
	# answered below: crun refuses a hybrid cgroup layout ("cgroups in
	# hybrid mode not supported, drop all controllers from cgroupv2":
	# runc it is), the default rlimits need CAP_SYS_RESOURCE, which this
	# machine's root lacks (setrlimit EPERM: lower ones), and no systemd
	# runs (cgroupfs, a file event log)
	cat >"$PM/containers.conf" <<EOF
[containers]
netns = "bridge"
dns_servers = ["$INET_DNS"]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$PM/events.log"
runtime = "runc"
tmp_dir = "$PM/tmp"
[network]
network_backend = "netavark"
network_config_dir = "$PM/networks"
default_subnet = "$CTR_SUBNET"
EOF
	cp /bin/busybox "$PM/rootfs/bin/busybox" || return 1
	for b in sh nc nslookup cat echo head sleep ip printf mkfifo rm; do ln -s busybox "$PM/rootfs/bin/$b"; done
	echo 'root:x:0:0:root:/:/bin/sh' >"$PM/rootfs/etc/passwd"
	echo 'root:x:0:' >"$PM/rootfs/etc/group"
	tar -C "$PM/rootfs" -c . | pm import - "$IMAGE" >"$W/import.out" 2>&1 ||
		{ echo "podman import: $(tail -3 "$W/import.out")"; return 1; }
	# one container proves the runtime runs here at all, and shows what
	# its network is: a bridge in the sbx netns, no other way out
	mkdir -p "$(tcg probe)"
	# podman0 made here, with a MAC of its own and a port that keeps it:
	# netavark makes it without setting its MAC, so the kernel gave it the
	# lowest of its ports', which changed as containers came and went
	# (another test's leaving, one joining) under the ARP entry of one
	# already talking to its gateway, whose packets to the old MAC were
	# then lost ("nc: timed out" in annotations, 1 full run in about 10
	# under load); and netavark removes the bridge with its last container
	in_sbx ip link add podman0 address 02:00:c6:13:01:01 type bridge &&
		in_sbx ip addr add "$CTR_GW/24" dev podman0 && in_sbx ip link set podman0 up &&
		in_sbx ip link add egrkeep0 type veth peer name egrkeep1 &&
		in_sbx ip link set egrkeep0 master podman0 && in_sbx ip link set egrkeep0 up ||
		{ echo "cannot make podman0"; return 1; }
	ctr probe probe bridge 'ip -4 addr show eth0; ip route; cat /etc/resolv.conf'
	grep -q "inet ${CTR_GW%.1}\." "$W/probe.cout" ||
		{ echo "podman run: $(tail -c 600 "$W/probe.cout" | tr '\n' '|')"; return 1; }
	note "a container's network: $(tr '\n' '|' <"$W/probe.cout")"
	note "the sbx netns's routes: $(in_sbx ip -4 route | tr '\n' '|')"
	return 0
}

containers_setup() {
	audit_setup || return 1
	ctr_setup
}

# the runtime's leftovers go before the namespaces and cgroups do:
# containers, their mounts, runc's cgroups in the v1 hierarchies
eval "net_$(declare -f e2e_cleanup)"
e2e_cleanup() {
	local d m
	ctrd_stop
	if [ -d "$PM/root" ]; then
		pm rm -af -t 0 >/dev/null 2>&1
		while read -r m; do umount -l "$m" 2>/dev/null; done < <(awk -v p="$PM/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
	fi
	for d in "${AMB_NS[@]}"; do ip netns del "$d" 2>/dev/null; done
	for d in /sys/fs/cgroup/*/egr-e2e-$$-*; do
		[ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroupfs ] || continue
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	net_e2e_cleanup
}

# ------------------------------------------------------------- the daemon

# dstart TAG ARGS...: `egressctl daemon ARGS` in the background (sbx netns,
# its own control socket); waits until it says ready. D_PID.
dstart() {
	local tag=$1
	shift
	# emptied before the start: a tag started before has its "ready:" in
	# the file, and the background shell's truncation may come too late
	: >"$W/$tag.dout"
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/$tag.ctl" "$@" \
		>>"$W/$tag.dout" 2>&1 </dev/null &
	D_PID=$!
	PIDS+=("$D_PID")
	if ! wait_secs 15 grep -qs "ready:" "$W/$tag.dout"; then
		fail "$tag.daemon_ready" "the daemon did not come up: $(tail -c 600 "$W/$tag.dout" | tr '\n' '|')"
		return 1
	fi
	return 0
}
dstop() { kill -TERM "$D_PID" 2>/dev/null; wait "$D_PID" 2>/dev/null; }

# a_first NAME TAG ERE: the first result line ("R: ...", as http() says
# it) the container printed matches ERE (podman may say more around it)
a_first() {
	local got
	got=$(sed -n 's/^R: //p' "$W/$2.cout" | head -1)
	if [[ $got =~ $3 ]]; then ok "$1"; else fail "$1" "container said '$got' (all: $(head -c 400 "$W/$2.cout" | tr '\n' '|'))"; fi
}

# ======================================================================
# bridge: a container on podman's bridge, under the target: before the
# daemon it reaches a denied address and resolves a denied name; with it,
# an allowed host is reached by name through the proxy, a denied address
# gets 403 and sends nothing, a denied name is REFUSED and never asked
# upstream; every decision names the container. Each container is new:
# its first connection is the one judged.
# ======================================================================
test_bridge() {
	local t=bridge
	mkdir -p "$(tcg $t)"
	ctr "$t.ctl" $t bridge "$(http "$A_DENY" "$t.ctl")"
	a_first "$t.control.reached" "$t.ctl" '^HTTP/1\.[01] 200'
	sensor_saw "$t.control.sensor" "dst host $A_DENY and tcp dst port 80"
	ctr "$t.ctl_dns" $t bridge 'nslookup ctl-denied.test 2>&1 | tail -3'
	a_grep "$t.control.dns_asked" "$DNSLOG" "query\\[A\\] ctl-denied\\.test "
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0

	ctr "$t.allowed" $t bridge "$(http a.example.test "$t.allowed")"
	a_first "$t.allowed.by_name" "$t.allowed" '^HTTP/1\.[01] 200'
	a_grep "$t.allowed.server_saw" "$WEBLOG" "^HTTP local=$(re "$A_A"):80 .* target=/$t\\.allowed "
	a_jlog "$t.allowed.logged" "$W/$t.jlog" decision=allow host=a.example.test source=transparent \
		container="$CID" cgroup_path="$(re "$(parent $t)")/libpod-$CID(\\.scope)?"
	a_jlog "$t.allowed.dns_logged" "$W/$t.jlog" decision=allow source=dns host=a.example.test \
		container="$CID"

	ctr "$t.denied" $t bridge "$(http "$A_DENY" "$t.denied")"
	a_first "$t.denied.403" "$t.denied" '^HTTP/1\.[01] 403'
	a_nogrep "$t.denied.server_saw_nothing" "$WEBLOG" "target=/$t\\.denied "
	a_jlog "$t.denied.logged" "$W/$t.jlog" decision=deny ip="$(re "$A_DENY")" container="$CID"
	"$EGRESSCTL" summary --control "$W/$t.ctl" >"$W/$t.summary" 2>&1
	a_grep "$t.denied.summary_names_it" "$W/$t.summary" "^  denied .*$(re "$A_DENY"):80 .*nc\[[0-9]+\]@${CID:0:12}"
	sensor_none_since "$t.denied.sensor" "$(sensor_count "dst host $A_DENY")" "dst host $A_DENY"

	ctr "$t.dns" $t bridge 'nslookup denied-ctr.test 2>&1 | tail -3'
	a_grep "$t.dns.refused" "$W/$t.dns.cout" "REFUSED"
	a_nogrep "$t.dns.never_upstream" "$DNSLOG" "denied-ctr\\.test"
	a_jlog "$t.dns.logged" "$W/$t.jlog" decision=deny source=dns host=denied-ctr.test container="$CID"

	dstop
}

# ======================================================================
# split: the job itself runs podman, inside the target, and asks for
# --cgroups=split: the container goes under the job's own cgroup
# (libpod-payload-ID), no --cgroup-parent needed, and is confined.
# ======================================================================
test_split() {
	local t=split
	mkdir -p "$(tcg $t)"
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	rm -f "$W/$t.cid"
	CONTAINERS_CONF="$PM/containers.conf" timeout -k 5 120 nsenter --net="$NS_SBX" \
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(tcg $t)" \
		podman --root "$PM/root" --runroot "$PM/run" --storage-driver vfs run --rm \
		--cidfile "$W/$t.cid" --cgroups=split "$IMAGE" \
		sh -c "cat /proc/self/cgroup; $(http a.example.test "$t.allowed") $(http "$A_DENY" "$t.denied")" \
		>"$W/$t.cout" 2>&1
	CID=$(cat "$W/$t.cid" 2>/dev/null)
	a_grep "$t.under_the_job" "$W/$t.cout" "^0::$(re "$(parent $t)")/libpod-payload-$CID$"
	a_grep "$t.allowed" "$W/$t.cout" '^R: HTTP/1\.[01] 200'
	a_grep "$t.denied" "$W/$t.cout" '^R: HTTP/1\.[01] 403'
	a_jlog "$t.named" "$W/$t.jlog" decision=allow host=a.example.test container="$CID"
	sensor_none_since "$t.denied.sensor" "$(sensor_count "dst host $A_DENY")" "dst host $A_DENY"
	dstop
}

# ======================================================================
# host: --network host shares the sandbox host's network namespace, the
# daemon's: confined as a process of the target on the host is.
# ======================================================================
test_host() {
	local t=host
	mkdir -p "$(tcg $t)"
	ctr "$t.ctl" $t host "$(http "$A_HOST_DENY" "$t.ctl")"
	a_first "$t.control.reached" "$t.ctl" '^HTTP/1\.[01] 200'
	sensor_saw "$t.control.sensor" "dst host $A_HOST_DENY and tcp dst port 80"
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	ctr "$t.allowed" $t host "$(http a.example.test "$t.allowed")"
	a_first "$t.allowed.by_name" "$t.allowed" '^HTTP/1\.[01] 200'
	a_grep "$t.allowed.server_saw" "$WEBLOG" "target=/$t\\.allowed "
	a_jlog "$t.allowed.logged" "$W/$t.jlog" decision=allow host=a.example.test container="$CID"
	ctr "$t.denied" $t host "$(http "$A_HOST_DENY" "$t.denied")"
	a_first "$t.denied.403" "$t.denied" '^HTTP/1\.[01] 403'
	sensor_none_since "$t.denied.sensor" "$(sensor_count "dst host $A_HOST_DENY")" "dst host $A_HOST_DENY"
	ctr "$t.dns" $t host 'nslookup host-denied.test 2>&1 | tail -3'
	a_grep "$t.dns.refused" "$W/$t.dns.cout" "REFUSED"
	a_nogrep "$t.dns.never_upstream" "$DNSLOG" "host-denied\\.test"
	dstop
}

# ======================================================================
# none: --network none has only a loopback of its own: nothing to reach
# with the daemon or without, and nothing reaches the sensor.
# ======================================================================
test_none() {
	local t=none
	mkdir -p "$(tcg $t)"
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	ctr "$t.try" $t none "$(http a.example.test "$t.try" "$A_NONE") nslookup a.example.test 2>&1 | tail -1"
	a_nogrep "$t.not_reached" "$W/$t.try.cout" '^R: HTTP/'
	a_nogrep "$t.server_saw_nothing" "$WEBLOG" "target=/$t\\.try "
	sensor_none "$t.sensor" "dst host $A_NONE"
	dstop
}

# ======================================================================
# outside: a container under another parent cgroup is none of the
# daemon's business: it reaches the address a confined one may not.
# ======================================================================
test_outside() {
	local t=outside
	mkdir -p "$(tcg $t)" "$(tcg $t-other)"
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	ctr "$t.other" "$t-other" bridge "$(http a.example.test "$t.other" "$A_OUT")"
	a_first "$t.other_reached" "$t.other" '^HTTP/1\.[01] 200'
	sensor_saw "$t.other_sensor" "dst host $A_OUT and tcp dst port 80"
	a_jlog_none "$t.not_logged" "$W/$t.jlog" ip="$(re "$A_OUT")"
	dstop
}

# ======================================================================
# off: without --containers the daemon has no listener in a bridged
# container's namespace: its connections are refused, said as such, and
# nothing leaves (the programs' verdict for other network namespaces).
# ======================================================================
test_off() {
	local t=off
	mkdir -p "$(tcg $t)"
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --allow a.example.test --dns-upstream "$INET_DNS" \
		--log "$W/$t.jlog" || return 0
	ctr "$t.try" $t bridge "$(http a.example.test "$t.try" "$A_OFF")"
	a_nogrep "$t.not_reached" "$W/$t.try.cout" '^R: HTTP/'
	a_jlog "$t.logged" "$W/$t.jlog" decision=deny source=bpf ip="$(re "$A_OFF")" \
		reason="(?i).*network namespace.*"
	sensor_none "$t.sensor" "dst host $A_OFF"
	dstop
}

# ======================================================================
# relay: the listeners on the bridge's gateway are no open proxy for the
# containers outside the target: a container under another parent reaches
# the gateway (control: a server there answers it), but the daemon's HTTP
# proxy port there serves it nothing.
# ======================================================================
test_relay() {
	local t=relay port
	mkdir -p "$(tcg $t)" "$(tcg $t-other)"
	# (the gateway's address exists only while a container is on the bridge)
	nsenter --net="$NS_SBX" "$PY" "$C/webservers.py" --log "$W/$t.web" --bind 0.0.0.0 \
		--http 8080 >"$W/$t.web.ready" 2>"$W/$t.web.err" &
	PIDS+=($!)
	wait_secs 5 grep -qs READY "$W/$t.web.ready"
	ctr "$t.ctl" "$t-other" bridge "$(http a.example.test "$t.ctl" "$CTR_GW" 8080)"
	a_first "$t.control.gateway_reached" "$t.ctl" '^HTTP/1\.[01] 200'
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	port=$(in_sbx ss -Hltnp | awk -v p="pid=$D_PID," -v g="$CTR_GW:" '$0 ~ p && index($4, g) == 1 { sub(/.*:/, "", $4); print $4 }' | sort -n | head -1)
	if [ -z "$port" ]; then
		fail "$t.port" "no listener of the daemon on $CTR_GW: $(in_sbx ss -Hltnp | tr '\n' '|')"
	else
		ctr "$t.try" "$t-other" bridge "printf 'GET http://a.example.test/$t.try HTTP/1.0\\r\\n\\r\\n' | nc -w 5 $CTR_GW $port 2>&1 | head -1"
		a_nogrep "$t.outsider_served_nothing" "$W/$t.try.cout" 'HTTP/'
		a_nogrep "$t.server_saw_nothing" "$WEBLOG" "$t\\.try"
	fi
	dstop
}

# ======================================================================
# othernet: a container on another network (its own bridge and gateway)
# reaches the daemon's address through its gateway too. And that address
# must be this host's: a bridge goes away with its last container, and a
# redirect to an address the host does not have is routed out. Control:
# a container's connection to such an address leaves (the sensor sees
# it); with the daemon, which makes the address the host's (on lo), the
# same container is confined and nothing goes to that address.
# ======================================================================
test_othernet() {
	local t=othernet base
	mkdir -p "$(tcg $t)"
	pm network create --subnet 198.19.2.0/24 "$NET2" >"$W/$t.net" 2>&1 ||
		{ fail "$t.network" "podman network create: $(tail -c 300 "$W/$t.net")"; return; }
	ctr "$t.ctl" $t "$NET2" "$(http a.example.test "$t.ctl" "$NOWHERE")"
	sensor_saw "$t.control.leaves" "dst host $NOWHERE and tcp dst port 80"
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$NOWHERE" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	a_grep "$t.address_added" "$W/$t.dout" "added $(re "$NOWHERE")/32 to lo"
	base=$(sensor_now "dst host $NOWHERE")
	ctr "$t.allowed" $t "$NET2" "$(http a.example.test "$t.allowed")"
	a_first "$t.allowed.by_name" "$t.allowed" '^HTTP/1\.[01] 200'
	a_jlog "$t.allowed.logged" "$W/$t.jlog" decision=allow host=a.example.test container="$CID"
	ctr "$t.denied" $t "$NET2" "$(http "$A_DENY" "$t.denied")"
	a_first "$t.denied.403" "$t.denied" '^HTTP/1\.[01] 403'
	sensor_none_since "$t.nothing_to_the_address" "$base" "dst host $NOWHERE"
	dstop
}

# ======================================================================
# ambiguous: two sockets of two network namespaces with the same address
# and port (containers may have them), both redirected: the proxy cannot
# tell whose connection it accepts, and must not guess. Two namespaces
# stand in for the containers (a runtime gives no two the same address):
# A and B both have 198.19.5.2, the sbx netns routes it back to A. A's
# connection (to a denied address) is held back (its SYNs dropped in A)
# while B connects from the same address and port to an allowed one;
# then A's SYN goes through. Had the index kept B's record, A's
# connection would be judged and relayed as B's (the allowed address,
# B's pid). It is refused instead, and nothing reaches either address.
# ======================================================================
# amb_client NS DEST TAG: in the target, bound to AMB_IP:40001, a line of
# plain TCP (not HTTP: the proxy judges it by the index's destination)
amb_client() {
	nsenter --net="/run/netns/$1" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(tcg ambiguous)" \
		"$PY" -c 'import json, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 40001)); s.settimeout(40); r = {"ok": False}
try:
    s.connect((sys.argv[2], 80)); s.sendall(sys.argv[3].encode() + b" plain tcp\n")
    d = s.recv(200).decode("latin-1"); r = {"ok": bool(d), "data": d.split("\r\n")[0]}
except OSError as e:
    r["errno"] = type(e).__name__ if isinstance(e, socket.timeout) else str(e)
print(json.dumps(r), flush=True)' "$AMB_IP" "$2" "$3" >"$W/$3.out" 2>&1 &
	PIDS+=($!)
}

test_ambiguous() {
	local t=ambiguous i ns a_pid b_pid
	mkdir -p "$(tcg $t)"
	have_egr || return 0
	for i in 0 1; do
		ns=${AMB_NS[$i]}
		ip netns add "$ns" && ip -n "$ns" link set lo up &&
			ip -n "$ns" link add e0 type veth peer name "x$i" netns "$SBX" &&
			ip -n "$ns" addr add "$AMB_IP/32" dev e0 && ip -n "$ns" link set e0 up &&
			ip -n "$ns" route add "$AMB_GW/32" dev e0 && ip -n "$SBX" link set "x$i" up &&
			in_sbx sysctl -qw "net.ipv4.conf.x$i.rp_filter=0" ||
			{ fail "$t.setup" "namespace $ns"; return; }
	done
	in_sbx sysctl -qw net.ipv4.conf.all.rp_filter=0
	ip -n "$SBX" route add "$AMB_IP/32" dev x0 || { fail "$t.setup" "route"; return; }
	dstart $t --cgroup "$(tcg $t)" --containers "$AMB_GW" --allow "$AMB_ALLOWED" \
		--log "$W/$t.jlog" || return 0
	# A: its SYNs are dropped in A for now; the index has its entry
	nsenter --net="/run/netns/${AMB_NS[0]}" iptables -A OUTPUT -p tcp --tcp-flags SYN,ACK SYN -j DROP
	amb_client "${AMB_NS[0]}" "$AMB_DENIED" amb.a
	a_pid=$!
	wait_secs 10 grep -qs "\"ip\":\"$(re "$AMB_DENIED")\"" "$W/$t.jlog"
	# B: the same address and port, to the allowed address
	amb_client "${AMB_NS[1]}" "$AMB_ALLOWED" amb.b
	b_pid=$!
	wait_secs 10 grep -qs "\"ip\":\"$(re "$AMB_ALLOWED")\"" "$W/$t.jlog"
	a_jlog "$t.both_redirected" "$W/$t.jlog" decision=redirect ip="$(re "$AMB_ALLOWED")"
	nsenter --net="/run/netns/${AMB_NS[0]}" iptables -D OUTPUT -p tcp --tcp-flags SYN,ACK SYN -j DROP
	wait_secs 30 grep -qs '^{' "$W/amb.a.out"
	a_nogrep "$t.a_not_served" "$W/amb.a.out" '"ok": true'
	a_grep "$t.said" "$W/$t.dout" "refused a connection from $(re "$AMB_IP"):40001: more than one socket"
	a_nogrep "$t.servers_saw_nothing" "$WEBLOG" "amb\.(a|b)"
	a_jlog_none "$t.never_judged_as_b" "$W/$t.jlog" source=transparent ip="$(re "$AMB_ALLOWED")"
	a_jlog_none "$t.never_credited_to_b" "$W/$t.jlog" source=transparent pid="$b_pid"
	sensor_none "$t.sensor" "dst host $AMB_ALLOWED or dst host $AMB_DENIED"
	kill "$a_pid" "$b_pid" 2>/dev/null
	dstop
}

# ======================================================================
# loopback: egressctl's ports are its own only in its own network
# namespace. In a container's, 127.0.0.1:PORT is that namespace's: a
# process outside the target there (a pod's other container, a runtime's
# helper) listening on one of those ports is a host service like any
# other, out of reach. Control: the container reaches such a listener
# (a servers.py echo on the container's loopback, outside its cgroup);
# with the daemon (--proxy-port makes the port one of its own) the same
# connect is refused and the listener sees nothing.
# ======================================================================
test_loopback() {
	local t=loopback netns
	mkdir -p "$(tcg $t)"
	rm -f "$W/$t.cid"
	pm run -d --cidfile "$W/$t.cid" --cgroup-parent="$(parent $t)" "$IMAGE" sleep 120 \
		>"$W/$t.run" 2>&1
	CID=$(cat "$W/$t.cid" 2>/dev/null)
	netns=$(pm inspect --format '{{.NetworkSettings.SandboxKey}}' "$CID" 2>/dev/null)
	if [ -z "$CID" ] || [ ! -e "$netns" ]; then
		fail "$t.setup" "no container or netns: $(tail -c 300 "$W/$t.run")"
		return
	fi
	: >"$W/$t.host"
	nsenter --net="$netns" "$PY" "$C/servers.py" host --log "$W/$t.host" --proto tcp \
		--addr 127.0.0.1 --port "$LO_OWN" >"$W/$t.host.ready" 2>&1 &
	PIDS+=($!)
	wait_secs 5 grep -qs READY "$W/$t.host.ready"
	pm exec "$CID" sh -c "echo ctl | nc -w 3 127.0.0.1 $LO_OWN; echo rc=\$?" >"$W/$t.ctl.cout" 2>&1
	a_grep "$t.control.reached" "$W/$t.host" "^ACCEPT tcp local=127\.0\.0\.1:$LO_OWN"
	if have_egr && dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --proxy-port "$LO_OWN" \
		--allow a.example.test --log "$W/$t.jlog"; then
		: >"$W/$t.host"
		pm exec "$CID" sh -c "echo try | nc -w 3 127.0.0.1 $LO_OWN; echo rc=\$?" >"$W/$t.try.cout" 2>&1
		a_grep "$t.refused" "$W/$t.try.cout" "rc=1"
		a_nogrep "$t.listener_saw_nothing" "$W/$t.host" "ACCEPT"
		a_jlog "$t.logged" "$W/$t.jlog" decision=deny source=bpf ip=127.0.0.1 port="$LO_OWN" \
			container="$CID"
		dstop
	fi
	pm rm -f -t 0 "$CID" >/dev/null 2>&1
}

# ======================================================================
# restart: kill -9 of the daemon leaves the programs pinned: a container's
# connection meanwhile finds no listener at the gateway and nothing
# leaves; the restarted daemon takes the programs over (its listeners on
# both addresses, on the pinned ports) and containers are confined again.
# ======================================================================
test_restart() {
	local t=restart
	mkdir -p "$(tcg $t)"
	have_egr || return 0
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	kill -KILL "$D_PID"
	wait "$D_PID" 2>/dev/null
	ctr "$t.gap" $t bridge "$(http "$A_GAP" "$t.gap")"
	a_nogrep "$t.gap.not_served" "$W/$t.gap.cout" '^R: HTTP/'
	sensor_none "$t.gap.sensor" "dst host $A_GAP"
	dstart $t --cgroup "$(tcg $t)" --containers "$CTR_GW" --allow a.example.test \
		--dns-upstream "$INET_DNS" --log "$W/$t.jlog" || return 0
	a_grep "$t.took_over" "$W/$t.dout" "took over the programs pinned on"
	ctr "$t.after" $t bridge "$(http a.example.test "$t.after")"
	a_first "$t.after.by_name" "$t.after" '^HTTP/1\.[01] 200'
	a_jlog "$t.after.logged" "$W/$t.jlog" decision=allow host=a.example.test container="$CID"
	dstop
}


# otlp_denials FILE ADDR: each denial of ADDR in the OTLP requests an
# OTLP collector (clients/logrecv.py) wrote to FILE, as "deny:
# container=ID container.id=... k8s.namespace.name=... k8s.pod.name=...
# k8s.container.name=...": the decision's container, its resource's names
otlp_denials() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, sys
for line in open(sys.argv[1]):
    body = json.loads(json.loads(line)["body"])
    for rl in body["resourceLogs"]:
        res = {a["key"]: a["value"].get("stringValue") for a in rl["resource"]["attributes"]}
        for sl in rl["scopeLogs"]:
            for r in sl["logRecords"]:
                d = json.loads(r["body"]["stringValue"])
                if d.get("ip") == sys.argv[2] and d.get("decision") == "deny":
                    print("deny: container=%s " % d.get("container") + " ".join(
                        "%s=%s" % (k, res.get(k)) for k in
                        ("container.id", "k8s.namespace.name", "k8s.pod.name", "k8s.container.name")))
PYEOF
}

# ======================================================================
# annotations: containers annotated as the kubelet's runtime does
# (io.kubernetes.cri.sandbox-namespace, io.kubernetes.pod.name,
# io.kubernetes.cri.container-type in the OCI bundle's config.json),
# matched by a selector's "annotations" as their cgroups appear: a pod of
# namespace ci-* gets the selector's policy (allowed 200, denied 403,
# nothing at the sensor), its denial at an OTLP collector under a resource
# naming it (container.id, k8s.namespace.name, k8s.pod.name); one of
# another namespace, under the same parent, gets "default": "deny". Each container waits for the attach
# before its first connection: it takes seconds (docs/operations.md,
# "Fleet").
# ======================================================================
# pods_config FILE BUNDLES GLOB ADDR PORT: a daemon config whose selector
# "ci-pods" takes the cgroups GLOB names whose OCI bundle (BUNDLES, {id}
# the cgroup's container) is annotated as a pod of namespace ci-* would
# be; its containers reach egressctl at ADDR, its decisions go to OTLP on
# PORT; any other cgroup gets the default, deny
pods_config() {
	cat >"$1" <<EOF
{"default": "deny", "oci_bundles": ["$2"], "targets": [
  {"name": "ci-pods", "cgroup": "$3",
   "annotations": {"io.kubernetes.cri.sandbox-namespace": "ci-*", "io.kubernetes.cri.container-type": "container"},
   "containers": "$4", "allow": ["a.example.test"], "dns_upstream": "$INET_DNS",
   "log": "otlp:http://127.0.0.1:$5/v1/logs"}
]}
EOF
}

test_annotations() {
	local t=ann a_ci=203.0.113.65 a_prod=203.0.113.66 p1 p2 c otlp_port=14318
	mkdir -p "$(tcg $t)" "$W/$t.go"
	pods_config "$W/$t.json" "$PM/root/vfs-containers/{id}/userdata" "$(parent $t)/libpod-*" "$CTR_GW" "$otlp_port"
	have_egr || return 0
	# the pod's decisions go to an OTLP collector (clients/logrecv.py)
	nsenter --net="$NS_SBX" "$PY" "$C/logrecv.py" otlp 127.0.0.1 "$otlp_port" "$W/$t.otlp" \
		>"$W/$t.otlp.ready" 2>"$W/$t.otlp.err" &
	PIDS+=("$!")
	wait_secs 10 grep -qs READY "$W/$t.otlp.ready"
	dstart $t --config "$W/$t.json" || return 0
	kube() { printf -- '--annotation=io.kubernetes.cri.sandbox-namespace=%s --annotation=io.kubernetes.pod.name=%s --annotation=io.kubernetes.cri.container-type=container' "$1" "$2"; }
	rm -f "$W/$t.ci.cid" "$W/$t.prod.cid"
	# each container waits for /go/NAME, which the test makes once the
	# daemon said it attached to the container's cgroup
	# shellcheck disable=SC2046 # kube's words are meant to split
	pm run --rm --cidfile "$W/$t.ci.cid" --cgroup-parent="$(parent $t)" --network bridge $(kube ci-a job-1) \
		-v "$W/$t.go:/go:ro" "$IMAGE" sh -c "while [ ! -e /go/ci ]; do sleep 0.2; done; $(http a.example.test "$t.ci" "$A_A") $(http "$a_ci" "$t.ci2")" \
		>"$W/$t.ci.cout" 2>&1 &
	p1=$!
	# shellcheck disable=SC2046
	pm run --rm --cidfile "$W/$t.prod.cid" --cgroup-parent="$(parent $t)" --network bridge $(kube prod job-2) \
		-v "$W/$t.go:/go:ro" "$IMAGE" sh -c "while [ ! -e /go/prod ]; do sleep 0.2; done; $(http "$a_prod" "$t.prod")" \
		>"$W/$t.prod.cout" 2>&1 &
	p2=$!
	for c in ci prod; do
		wait_secs 20 test -s "$W/$t.$c.cid"
		wait_secs 30 grep -qs "libpod-$(cat "$W/$t.$c.cid" 2>/dev/null): attached" "$W/$t.dout"
		touch "$W/$t.go/$c"
	done
	wait "$p1" "$p2"
	a_grep "$t.ci.attached" "$W/$t.dout" "target ci-pods:$(re "$(parent $t)")/libpod-$(cat "$W/$t.ci.cid" 2>/dev/null): attached"
	a_grep "$t.prod.default" "$W/$t.dout" "target default:$(re "$(parent $t)")/libpod-$(cat "$W/$t.prod.cid" 2>/dev/null): attached"
	a_grep "$t.ci.allowed" "$W/$t.ci.cout" '^R: HTTP/1\.[01] 200'
	a_grep "$t.ci.denied" "$W/$t.ci.cout" '^R: HTTP/1\.[01] 403'
	a_nogrep "$t.prod.not_reached" "$W/$t.prod.cout" '^R: HTTP/'
	sensor_none "$t.ci.sensor" "dst host $a_ci"
	sensor_none "$t.prod.sensor" "dst host $a_prod"
	dstop
	# its denial at the collector, under a resource naming the pod
	otlp_denials "$W/$t.otlp" "$a_ci" >"$W/$t.otlp.check" 2>&1
	a_grep "$t.ci.otlp_resource" "$W/$t.otlp.check" \
		"^deny: container=[^ ]* container.id=$(cat "$W/$t.ci.cid" 2>/dev/null) k8s.namespace.name=ci-a k8s.pod.name=job-1 "
}

# ------------------------------------------------------- containerd's own

# cdr ARGS...: ctr, the client, on the containerd test's containerd (the
# namespace the kubelet's CRI uses: k8s.io)
cdr() { timeout -k 5 120 ctr --address "$CD/containerd.sock" --namespace k8s.io "$@"; }

# cd_newid: a container id as containerd's CRI makes them (64 hex digits)
cd_newid() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
# cd_sandbox ID: the id of container ID's pod sandbox (one pod each),
# made from ID: runc's v2 shim names its socket after the sandbox id
# (one shim per pod), and ctrd_stop finds it again
cd_sandbox() { printf 'sandbox/%s' "$1" | sha256sum | cut -d' ' -f1; }

# ctrd_start TAG: Debian's containerd (1.6) of our own, in the sbx netns
# (a --net-host container is then on the sandbox host's network), its
# root, state, sockets, runc root and fifos under $CD, no CRI plugin (no
# CNI, no streaming server), no registry: the image is an OCI archive
# made here from busybox-static and imported. CD_PID.
ctrd_start() {
	local b arch
	# (type -P: ctr is also this suite's podman function; cdr runs the
	# binary, through timeout)
	for b in containerd ctr containerd-shim-runc-v2 runc /bin/busybox; do
		type -P "$b" >/dev/null ||
			{ fail "$1.runtime" "$b missing (tools/install-deps.sh --containers)"; return 1; }
	done
	mkdir -p "$CD/rootfs/bin" "$CD/rootfs/etc" "$CD/rootfs/tmp" "$CD/rootfs/go" "$CD/runc" \
		"$CD/fifo" "$CD/tmp" || return 1
	# (opt would make /opt/containerd; aufs, btrfs, devmapper and zfs
	# probe the host's modules and disks; none is needed)
	cat >"$CD/config.toml" <<EOF
version = 2
root = "$CD/root"
state = "$CD/state"
temp = "$CD/tmp"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$CD/containerd.sock"
[ttrpc]
  address = "$CD/containerd.sock.ttrpc"
EOF
	nsenter --net="$NS_SBX" containerd --config "$CD/config.toml" >"$CD/containerd.log" 2>&1 </dev/null &
	CD_PID=$!
	PIDS+=("$CD_PID")
	if ! wait_secs 20 cdr version >/dev/null 2>&1; then
		fail "$1.containerd" "containerd did not come up: $(tail -c 600 "$CD/containerd.log" | tr '\n' '|')"
		return 1
	fi
	cp /bin/busybox "$CD/rootfs/bin/busybox" || return 1
	for b in sh nc cat echo head sleep printf mkfifo rm kill; do ln -s busybox "$CD/rootfs/bin/$b"; done
	echo 'root:x:0:0:root:/:/bin/sh' >"$CD/rootfs/etc/passwd"
	echo 'root:x:0:' >"$CD/rootfs/etc/group"
	arch=$(dpkg --print-architecture)
	case $arch in i386) arch=386 ;; armhf | armel) arch=arm ;; ppc64el) arch=ppc64le ;; esac
	# an OCI image layout, as a tar ctr imports: one uncompressed layer
	# (the rootfs), its config, a manifest, the index naming it
	"$PY" - "$CD/rootfs" "$CD/image.tar" "$CD_IMAGE" "$arch" >"$W/$1.image" 2>&1 <<'PYEOF' ||
import hashlib, io, json, sys, tarfile
rootfs, out, name, arch = sys.argv[1:5]
blobs = {}
def blob(data):
    d = hashlib.sha256(data).hexdigest()
    blobs[d] = data
    return {"digest": "sha256:" + d, "size": len(data)}
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
    t.add(rootfs, arcname=".")
layer = blob(layer.getvalue())
config = blob(json.dumps({"architecture": arch, "os": "linux",
                          "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"]},
                          "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}).encode())
manifest = blob(json.dumps({"schemaVersion": 2,
                            "mediaType": "application/vnd.oci.image.manifest.v1+json",
                            "config": dict(mediaType="application/vnd.oci.image.config.v1+json", **config),
                            "layers": [dict(mediaType="application/vnd.oci.image.layer.v1.tar", **layer)]}).encode())
index = {"schemaVersion": 2, "manifests": [dict(
    mediaType="application/vnd.oci.image.manifest.v1+json", platform={"architecture": arch, "os": "linux"},
    annotations={"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]},
    **manifest)]}
with tarfile.open(out, "w") as t:
    def put(path, data):
        ti = tarfile.TarInfo(path)
        ti.size, ti.mode = len(data), 0o644
        t.addfile(ti, io.BytesIO(data))
    put("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
    put("index.json", json.dumps(index).encode())
    for d, data in blobs.items():
        put("blobs/sha256/" + d, data)
PYEOF
		{ fail "$1.image" "the OCI archive: $(tail -c 300 "$W/$1.image")"; return 1; }
	cdr images import --snapshotter native "$CD/image.tar" >"$W/$1.import" 2>&1 ||
		{ fail "$1.import" "ctr images import: $(tail -c 300 "$W/$1.import" | tr '\n' '|')"; return 1; }
	return 0
}

# cd_run TAG PARENT_TAG ID NAMESPACE POD SCRIPT: container ID as the
# kubelet's CRI (containerd's, cgroupfs driver) makes it: in the cgroup
# PARENT/cri-containerd-ID.scope, with the annotations the CRI writes in
# its bundle's config.json, here for a pod POD of NAMESPACE (container
# "main"); on the host's network (the sbx netns), $W/TAG.go as /go,
# running sh -c SCRIPT; output in $W/TAG.cout. The caller records ID in
# CD_IDS first (this may run in the background: a subshell). SCRIPT's
# output goes to a file of a read-write bind ($W/TAG.res as /res), not
# through ctr's stdout: ctr run lost the last line of a container that
# exited at once (1 run in about 10 under load); ctr's own says go to
# $W/TAG.ctr.
cd_run() {
	mkdir -p "$W/$1.go" "$W/$1.res"
	cdr run --rm --snapshotter native --net-host --runc-root "$CD/runc" --fifo-dir "$CD/fifo" \
		--cgroup "$(parent "$2")/cri-containerd-$3.scope" \
		--annotation io.kubernetes.cri.container-type=container \
		--annotation io.kubernetes.cri.container-name=main \
		--annotation "io.kubernetes.cri.sandbox-id=$(cd_sandbox "$3")" \
		--annotation "io.kubernetes.cri.sandbox-namespace=$4" \
		--annotation "io.kubernetes.cri.sandbox-name=$5" \
		--mount "type=bind,src=$W/$1.go,dst=/go,options=rbind:ro" \
		--mount "type=bind,src=$W/$1.res,dst=/res,options=rbind:rw" \
		"$CD_IMAGE" "$3" sh -c "{ $6
} >/res/out 2>&1" </dev/null >"$W/$1.ctr" 2>&1
	cat "$W/$1.res/out" >"$W/$1.cout" 2>/dev/null
}

# ctrd_stop: every container of CD_IDS gone (task killed and deleted,
# container and its snapshot deleted), the image and its snapshot, then
# containerd itself, what it could not end, the mounts under $CD, the
# shims' sockets (containerd 1.6 puts them in /run/containerd/s/, named
# sha256(ADDRESS/NAMESPACE/SANDBOX_ID), left by a shim killed) and $CD.
# Run at the test's end and at exit; a second call does nothing.
ctrd_stop() {
	local id k m
	[ -n "$CD_PID" ] || return 0
	if kill -0 "$CD_PID" 2>/dev/null; then
		for id in "${CD_IDS[@]}"; do
			cdr tasks kill -s SIGKILL "$id" >/dev/null 2>&1
			cdr tasks delete -f "$id" >/dev/null 2>&1
			cdr containers delete "$id" >/dev/null 2>&1
		done
		cdr images rm --sync "$CD_IMAGE" >/dev/null 2>&1
		for k in $(cdr snapshots --snapshotter native ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do
			cdr snapshots --snapshotter native rm "$k" >/dev/null 2>&1
		done
		kill -TERM "$CD_PID" 2>/dev/null
		wait_secs 10 cd_gone || kill -KILL "$CD_PID" 2>/dev/null
	fi
	wait "$CD_PID" 2>/dev/null
	CD_PID=
	# what containerd did not end (it was gone, or hung): the containers'
	# processes (cgroup.kill of their cgroups) and their shims, by id
	for id in "${CD_IDS[@]}"; do
		for k in "$CGROOT"/egr-e2e-$$-*/cri-containerd-"$id".scope; do
			[ -e "$k/cgroup.kill" ] || continue
			echo 1 >"$k/cgroup.kill" 2>/dev/null
			wait_for 3 cg_empty "$k"
		done
		for k in /proc/[0-9]*; do
			[[ $(tr '\0' ' ' 2>/dev/null <"$k/cmdline") == *"containerd-shim-runc-v2 -namespace k8s.io -id $id -address $CD/containerd.sock " ]] &&
				kill -KILL "${k#/proc/}" 2>/dev/null
		done
	done
	while read -r m; do umount -l "$m" 2>/dev/null; done < <(awk -v p="$CD/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
	for id in "${CD_IDS[@]}"; do
		k=/run/containerd/s/$(printf '%s' "$CD/containerd.sock/k8s.io/$(cd_sandbox "$id")" | sha256sum | cut -d' ' -f1)
		[ -S "$k" ] && rm -f "$k"
	done
	rm -rf --one-file-system "$CD"
}
cd_gone() { ! kill -0 "$CD_PID" 2>/dev/null; }

# ======================================================================
# containerd: the annotation selector against a real containerd (Debian
# 12's 1.6, runc), its containers made as the kubelet's CRI makes them:
# cgroup PARENT/cri-containerd-ID.scope (cgroupfs), the CRI's annotations
# (io.kubernetes.cri.sandbox-namespace, -sandbox-name, -container-type,
# -container-name, -sandbox-id) in the bundle containerd writes,
# <state>/io.containerd.runtime.v2.task/k8s.io/ID/config.json, which
# "oci_bundles" names; on the host's network (the sbx netns, whose
# address is the selector's "containers", as the DaemonSet's NODE_IP). Control
# (no daemon): a container of the ci namespace reaches the address the
# selector denies. With the daemon: one of namespace ci-a is attached
# with the selector's name; its first connect, at once, is the hold's
# (EPERM, never at the sensor); once attached, the allowed name answers
# 200, the denied address 403 and nothing reaches the sensor, its denial
# at an OTLP collector naming the container, under a resource naming it
# (container.id, k8s.namespace.name, k8s.pod.name, k8s.container.name);
# one of namespace prod, under the same parent, gets "default": "deny"
# (attached as default:..., nothing allowed, nothing at the sensor). At
# the end nothing of containerd's is left (containers, snapshots, mounts).
# ======================================================================
# cd_nth NAME TAG N ERE: the Nth result line ("R: ...", as http() says it)
# of TAG's container matches ERE
cd_nth() {
	local got
	got=$(sed -n 's/^R: //p' "$W/$2.cout" | sed -n "$3p")
	if [[ $got =~ $4 ]]; then ok "$1"; else fail "$1" "container said '$got' (all: $(head -c 500 "$W/$2.cout" | tr '\n' '|'))"; fi
}

test_containerd() {
	local t=ctrd a_ci=203.0.113.73 a_prod=203.0.113.74 a_early=203.0.113.75 otlp_port=14319
	local node_ip=198.18.0.2	# the sbx netns's own address: "containers", as env:NODE_IP is
	local id_ctl id_ci id_prod p1 p2 c base rest
	mkdir -p "$(tcg $t)"
	ctrd_start $t || return 0
	# control: no daemon, the ci namespace's container reaches a_ci
	id_ctl=$(cd_newid)
	CD_IDS+=("$id_ctl")
	cd_run "$t.ctl" $t "$id_ctl" ci-a job-0 "cat /proc/self/cgroup; $(http "$a_ci" "$t.ctl")"
	a_grep "$t.control.cgroup" "$W/$t.ctl.cout" "^0::$(re "$(parent $t)")/cri-containerd-$id_ctl\\.scope$"
	a_first "$t.control.reached" "$t.ctl" '^HTTP/1\.[01] 200'
	sensor_saw "$t.control.sensor" "dst host $a_ci and tcp dst port 80"
	have_egr || { ctrd_stop; return 0; }
	pods_config "$W/$t.json" "$CD/state/io.containerd.runtime.v2.task/k8s.io/{id}" \
		"$(parent $t)/cri-containerd-*.scope" "$node_ip" "$otlp_port"
	nsenter --net="$NS_SBX" "$PY" "$C/logrecv.py" otlp 127.0.0.1 "$otlp_port" "$W/$t.otlp" \
		>"$W/$t.otlp.ready" 2>"$W/$t.otlp.err" &
	PIDS+=("$!")
	wait_secs 10 grep -qs READY "$W/$t.otlp.ready"
	base=$(sensor_now "dst host $a_ci")
	dstart $t --config "$W/$t.json" || { ctrd_stop; return 0; }
	id_ci=$(cd_newid)
	id_prod=$(cd_newid)
	CD_IDS+=("$id_ci" "$id_prod")
	# ci: one connect at once (its cgroup is held until attached), then,
	# once the test says both are attached (/go/go), the allowed name
	# (through DNS) and the denied address; prod, then: the allowed name
	# (by its address) and another address
	cd_run "$t.ci" $t "$id_ci" ci-a job-1 "$(http "$a_early" "$t.early") while [ ! -e /go/go ]; do sleep 0.2; done; $(http a.example.test "$t.ci") $(http "$a_ci" "$t.ci2")" &
	p1=$!
	cd_run "$t.prod" $t "$id_prod" prod job-2 "while [ ! -e /go/go ]; do sleep 0.2; done; $(http a.example.test "$t.prod" "$A_A") $(http "$a_prod" "$t.prod2")" &
	p2=$!
	# Both go on once both are attached: the daemon loads a target's
	# programs on its loop (2 s or more), and meanwhile every target's
	# responder and proxies wait: a DNS query of one attached first went
	# unanswered past the resolver's 2 s while the other's loaded (2 runs
	# in about 60 when each went on at its own attach). (The attach line's
	# "target NAME:" is cut at 100 characters: the cgroup it names
	# follows "attached to".)
	for c in "$id_ci" "$id_prod"; do
		wait_secs 60 grep -qs ": attached to $(tcg $t)/cri-containerd-$c\\.scope " "$W/$t.dout"
	done
	touch "$W/$t.ci.go/go" "$W/$t.prod.go/go"
	wait "$p1" "$p2"
	a_grep "$t.ci.attached" "$W/$t.dout" \
		"target ci-pods:$(re "$(parent $t)")/cri-containerd-[0-9a-f]+(\\.scope)?: attached to $(re "$(tcg $t)")/cri-containerd-$id_ci\\.scope "
	a_grep "$t.prod.default" "$W/$t.dout" \
		"target default:$(re "$(parent $t)")/cri-containerd-[0-9a-f]+(\\.scope)?: attached to $(re "$(tcg $t)")/cri-containerd-$id_prod\\.scope "
	cd_nth "$t.ci.early_held" "$t.ci" 1 'not permitted'
	# (what the hold refused is said once a second, when it changed)
	wait_secs 5 grep -Eqs "held below $(re "$(tcg $t)") so far: [1-9][0-9]* connects" "$W/$t.dout"
	a_grep "$t.hold_said" "$W/$t.dout" "held below $(re "$(tcg $t)") so far: [1-9][0-9]* connects"
	sensor_none "$t.ci.early_sensor" "dst host $a_early"
	cd_nth "$t.ci.allowed" "$t.ci" 2 '^HTTP/1\.[01] 200'
	a_grep "$t.ci.server_saw" "$WEBLOG" "target=/$t\\.ci "
	cd_nth "$t.ci.denied" "$t.ci" 3 '^HTTP/1\.[01] 403'
	sensor_none_since "$t.ci.sensor" "$base" "dst host $a_ci"
	cd_nth "$t.prod.allowed_name_denied" "$t.prod" 1 '^HTTP/1\.[01] 403'
	a_nogrep "$t.prod.server_saw_nothing" "$WEBLOG" "target=/$t\\.prod "
	cd_nth "$t.prod.denied" "$t.prod" 2 '^HTTP/1\.[01] 403'
	sensor_none "$t.prod.sensor" "dst host $a_prod"
	dstop
	# the ci container's denial at the collector, naming the container
	# (with "containers" set, as the DaemonSet's example has it), under a
	# resource naming it too, from the annotations containerd's CRI writes
	otlp_denials "$W/$t.otlp" "$a_ci" >"$W/$t.otlp.check" 2>&1
	a_grep "$t.ci.otlp_named" "$W/$t.otlp.check" \
		"^deny: container=$id_ci container.id=$id_ci k8s.namespace.name=ci-a k8s.pod.name=job-1 k8s.container.name=main\$"
	# nothing of containerd's left behind: containers, tasks, snapshots
	# but the image's, runc's state, the containers' cgroups
	rest="$(cdr containers ls -q 2>&1)$(cdr tasks ls -q 2>&1)$(ls -A "$CD/runc/k8s.io" 2>/dev/null)"
	rest+=$(cdr snapshots --snapshotter native ls 2>&1 | awk 'NR > 1 && $NF != "Committed"')
	for c in "$id_ctl" "$id_ci" "$id_prod"; do
		[ -d "$(tcg $t)/cri-containerd-$c.scope" ] && rest+=" cgroup $c"
	done
	if [ -z "$rest" ]; then ok "$t.runtime_clean"; else fail "$t.runtime_clean" "left: $(echo "$rest" | tr '\n' '|')"; fi
	ctrd_stop
	rest=$(awk -v p="$CD/" 'index($5, p) == 1' /proc/self/mountinfo)
	[ -e "$CD" ] && rest+=" $CD"
	if [ -z "$rest" ]; then ok "$t.stopped_clean"; else fail "$t.stopped_clean" "left: $rest"; fi
}

suite_main containers.sh containers_setup "ip nsenter tcpdump ss dnsmasq openssl" "$@"
