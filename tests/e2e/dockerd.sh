# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# A real dockerd (Debian's docker.io) for the suites that need one
# (docker.sh, ci.sh's github_runner): in the sandbox host's network
# namespace and the suite's own mount namespace (the one the job and
# egressctl's daemon are in, as on a host), its data root, exec root and
# pid file in the work dir, no iptables (a published port is its userland
# proxy's, docker-proxy, as on GitHub's runners for 127.0.0.1), the vfs
# storage driver, its
# bridge docker0 198.19.6.1/24 routed by the test internet, its
# containers' default cgroup parent /egr-e2e-PID-docker, their nameserver
# the test's dnsmasq (INET_DNS: audit_net.sh). The image is imported from
# busybox-static: no registry is ever asked. Root reaches dockerd's own
# socket through a hard link in a directory of its own (ROOTSOCK, on the
# socket's file system), which a mount over the socket's name does not
# cover. Sourced after lib.sh and audit_net.sh.
#
#   dockerd_start GROUP   dockerd on SOCK, GROUP its socket's group; the
#                         image IMAGE imported; DK/ctx an empty build context
#   dockerd_stop          its containers removed, dockerd stopped (the
#                         suite's EXIT trap calls it, then dockerd_cgroups_rm)

DOCKER=/usr/bin/docker # Debian's client (not whatever else is on PATH)
DK=$W/dk		 # dockerd's data, exec root, pid file (and socket)
SOCK=$DK/docker.sock	 # where dockerd listens (a suite may name another first)
ROOTSOCK=$DK/own/docker.sock # dockerd's own socket, a hard link only root can reach
IMAGE=egr-e2e-busybox
GW=198.19.6.1		# docker0: where the containers reach egressctl's daemon
DPARENT=/egr-e2e-$$-docker # dockerd's default cgroup parent
dcg() { echo "$CGROOT/egr-e2e-$$-dockerd"; } # dockerd's own cgroup

dockerd_pid() { cat "$DK/docker.pid" 2>/dev/null; }

# dk_root ARGS...: root's docker on dockerd's own socket (its hard link)
dk_root() { timeout -k 5 120 nsenter --net="$NS_SBX" "$DOCKER" -H "unix://$ROOTSOCK" "$@"; }

# http HOST PATH [ADDR]: what a container runs for one plain-HTTP request
# with busybox nc: "R: <status line>", or the client's words (its files
# named after PATH: a service's loop and an exec in it never read each
# other's answer)
http() {
	printf 'rm -f /tmp/f.%s; mkfifo /tmp/f.%s; nc -w 10 %s 80 </tmp/f.%s >/tmp/o.%s 2>&1 & n=$!; ' "$2" "$2" "${3:-$1}" "$2" "$2"
	printf '{ printf "GET /%s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n"; ' "$2" "$1"
	printf 'while kill -0 $n 2>/dev/null; do sleep 0.1; done; } >/tmp/f.%s; echo "R: $(head -1 /tmp/o.%s)"; ' "$2" "$2"
}

# a_first NAME FILE ERE: the first result line ("R: ...") matches ERE
a_first() {
	local got
	got=$(sed -n 's/^R: //p' "$2" | head -1)
	if [[ $got =~ $3 ]]; then ok "$1"; else fail "$1" "container said '$got' (all: $(head -c 500 "$2" | tr '\n' '|'))"; fi
}

dockerd_start() {
	local group=$1 i
	[ -x /usr/sbin/dockerd ] && [ -x "$DOCKER" ] ||
		{ echo "docker.io missing (tools/install-deps.sh --containers)"; return 1; }
	mkdir -p "$DK/rootfs/bin" "$DK/rootfs/etc" "$DK/rootfs/tmp" "$DK/ctx" || return 1
	echo '{}' >"$DK/daemon.json"
	# in a cgroup of its own, as a systemd service's: egressctl confines
	# dockerd's own connections there (a build's FROM and ADD of a URL)
	mkdir -p "$(dcg)" || return 1
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(dcg)" nsenter --net="$NS_SBX" /usr/sbin/dockerd \
		--config-file "$DK/daemon.json" --data-root "$DK/root" --exec-root "$DK/exec" \
		--pidfile "$DK/docker.pid" -H "unix://$SOCK" -G "$group" --bip "$GW/24" \
		--iptables=false --ip6tables=false --storage-driver vfs \
		--dns "$INET_DNS" --cgroup-parent "$DPARENT" --exec-opt native.cgroupdriver=cgroupfs \
		>"$DK/dockerd.log" 2>&1 &
	PIDS+=($!)
	for i in $(seq 300); do
		[ -S "$SOCK" ] && [ -s "$DK/docker.pid" ] && break
		sleep 0.1
	done
	mkdir -m 0700 "$(dirname "$ROOTSOCK")" && ln "$SOCK" "$ROOTSOCK" ||
		{ echo "dockerd: $(tail -5 "$DK/dockerd.log")"; return 1; }
	wait_secs 20 dk_root version >/dev/null 2>&1 || { echo "dockerd: $(tail -5 "$DK/dockerd.log")"; return 1; }
	ip -n "$INET" route add 198.19.6.0/24 via 198.18.0.2 || return 1
	cp /bin/busybox "$DK/rootfs/bin/busybox" || return 1
	# a suite's static helpers (docker.sh: clients/pktsend.c), if it made them
	[ -x "$DK/pktsend" ] && { cp "$DK/pktsend" "$DK/rootfs/bin/pktsend" || return 1; }
	for i in sh nc nslookup cat echo head tail sleep printf mkfifo rm kill wget grep mkdir mount; do
		ln -s busybox "$DK/rootfs/bin/$i"
	done
	echo 'root:x:0:0:root:/:/bin/sh' >"$DK/rootfs/etc/passwd"
	echo 'root:x:0:' >"$DK/rootfs/etc/group"
	tar -C "$DK/rootfs" -c . | dk_root import - "$IMAGE" >"$DK/import.out" 2>&1 ||
		{ echo "docker import: $(tail -3 "$DK/import.out")"; return 1; }
	return 0
}

dockerd_stop() {
	local p
	p=$(dockerd_pid)
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
	dk_root ps -aq 2>/dev/null | xargs -r timeout 60 "$DOCKER" -H "unix://$ROOTSOCK" rm -f \
		>/dev/null 2>&1
	kill -TERM "$p" 2>/dev/null
	wait_secs 15 sh -c "! kill -0 $p 2>/dev/null"
}

# dockerd_cgroups_rm: what is left of the cgroups of the suite's (and of
# its containers', which runc makes in the v1 hierarchies too, beside the
# v2 ones) once no container runs: the v1 hierarchies' egressctl/ is
# runc's, made for the job's containers (cgroup2's is egressctl's own,
# shared: left alone)
dockerd_cgroups_rm() {
	local d
	for d in /sys/fs/cgroup/*/egressctl/"$CG_PREFIX"-* /sys/fs/cgroup/*/egr-e2e-$$-*; do
		[ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroupfs ] || continue
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	for d in /sys/fs/cgroup/*/egressctl; do
		[ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroupfs ] && rmdir "$d" 2>/dev/null
	done
}
