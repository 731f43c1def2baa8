#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of docker in a confined job, `egressctl daemon --docker
# PATH`: a real dockerd (Debian's docker.io), a job user in dockerd's
# socket group, the job's cgroup confined by the daemon, which keeps
# dockerd's socket for it. The job's `docker run`, `docker build` (its RUN
# steps), service containers on a network of their own and `docker exec`
# in them, a compose project's service (Debian's docker-compose 1.29,
# `up` on a network compose makes, then `down`) are confined by the job's
# policy: an allowed name answers, a
# denied address gets 403 and a denied name REFUSED, and nothing reaches
# the leak sensor; every flag that would take a container out of the
# job's cgroup or out of the programs' sight is refused with a message
# naming it (each shown to work without egressctl first), as is BuildKit,
# and a container that is not the job's may not be started or exec'd in.
# Anybody else's containers (root's, through the same socket or dockerd's
# own) are untouched; the socket stays covered while the daemon is gone
# (fail closed) and is dockerd's again after a detach. A name asked of
# docker's embedded DNS (127.0.0.11) never goes upstream. A dockerd with
# systemd's cgroup driver, under a systemd of the test's own, confines the
# same way a job the CI scripts put in a slice's cgroup.
#
#   tests/e2e/docker.sh build/egressctl    (as root; make e2e does this)
#   E2E_TESTS="run flags" ...        run only these test functions
#   E2E_KEEP=1 ...                   keep /tmp/egr-e2e-PID (logs, pcap)
#
# The network is audit.sh's (audit_net.sh): dnsmasq on 198.18.0.1
# (a.example.test 203.0.113.10), HTTP on :80 of every address of the test
# "internet", the leak sensor on its veth. dockerd runs in the sandbox
# host's network namespace and the suite's own mount namespace (the one
# the job and the daemon are in, as on a host), everything under the work
# dir (--data-root, --exec-root, --pidfile, its socket), no iptables, its
# bridge docker0 198.19.6.1/24 (a user-defined network 198.19.7.0/24, the
# compose project's 198.19.10.0/24) routed by the test internet; its default cgroup parent is the suite's,
# the containers' nameserver the test's dnsmasq. Root reaches dockerd's
# own socket through a hard link in a directory of its own, which the
# daemon's mount over the socket's name does not cover. The image is
# imported from busybox-static (no registry is ever asked). That dockerd
# is tests/e2e/dockerd.sh's, which ci.sh's github_runner shares. The job
# user and its group are made for the run and removed.
#
# Output: "ok NAME" / "FAIL NAME: reason" per assertion, and as the last
# line "N passed, M failed".  Exit 1 if any failed, 77 if not root.

set -u
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"
. "$(dirname "$0")/audit_net.sh"
. "$(dirname "$0")/dockerd.sh" # DOCKER DK SOCK ROOTSOCK IMAGE GW DPARENT, dockerd_start, http
. "$(dirname "$0")/sd.sh"      # SD_CG's systemd: sd_boot, sd_in, sd_down

ALL_TESTS="control mntns run packet fetch serve published services host build service compose peers dns127 flags setid socket registry foreign outsider names buildkit stop labels podman systemd"
NET2=egr-e2e-$$-net	# a user-defined network (a compose project's)
NET2_SUBNET=198.19.7.0/24
JOBU=egrdk$$		# the job user and its group (dockerd's socket group)
A_CTL=203.0.113.60	# fresh addresses: the sensor tells attempts apart
A_RUN=203.0.113.61
A_HOST=203.0.113.62
A_BUILD=203.0.113.63
A_SVC=203.0.113.64
A_FOREIGN=203.0.113.65
A_OUT=203.0.113.66
A_DIRECT=203.0.113.67
A_GAP=203.0.113.68
A_AFTER=203.0.113.69
A_REG_CTL=203.0.113.70	# registries dockerd would reach for the job
A_REG_PULL=203.0.113.71
A_REG_PUSH=203.0.113.72
A_REG_LOGIN=203.0.113.73
A_PCTL=203.0.113.74	# podman's service
A_PRUN=203.0.113.75
DC=/usr/bin/docker-compose # Debian's docker-compose (v1, 1.29)
CMP=$DK/home/compose	# the compose project's file, the job user's
CMP_PROJECT=egr-e2e-$$-cmp # its name (v1 names its containers PROJECT_SERVICE_N)
CMP_SUBNET=198.19.10.0/24 # the network compose makes for it (PROJECT_default)
A_CMP_CTL=203.0.113.79	# what its service tries: without egressctl
A_CMP=203.0.113.80	# confined
A_LBL_CTL=203.0.113.81	# test_labels: without egressctl
A_LBL=203.0.113.82	# a labelled container's denied address
A_LBL_PROD=203.0.113.83	# the default's
A_PKT=203.0.113.84	# an AF_PACKET frame's datagram (packet)
A_ADD_CTL=203.0.113.85	# what dockerd fetches for a build: control
A_ADD=203.0.113.86	# the job's ADD of a URL
A_FROM=203.0.113.87	# the job's FROM of an image on a registry
A_PLIB=203.0.113.88	# a container made through podman's own API (podman)
A_KEPT=203.0.113.89	# dockerd's connection from before the daemon (fetch)
A_PUB=203.0.113.96	# a network a rule allows dockerd besides its own (published)
A_SRV_OUT=203.0.113.90	# a client outside the host, of the job's server (serve)
A_SRV_CTL=203.0.113.91	# ... of root's server: the control
IP_SRV=198.19.7.81	# the job's server, on NET2
IP_SRV_ROOT=198.19.7.82	# root's
SRV_LATE_NET=egr-e2e-$$-late # a network made after the daemon's start (serve)
SRV_LATE_SUBNET=198.19.13.0/24
IP_SRV_LATE=198.19.13.10
SVC_NET=github_network_$(printf '%032x' $$) # a CI job's services' network, as GitHub's runner names it
SVC_SUBNET=198.19.11.0/24
IP_SVC=198.19.11.10	# a service of the job's, started before the daemon (services)
A_SVC_CTL=203.0.113.92	# what the job has the service fetch: the control
A_SVC_OUT=203.0.113.93	# ... with --docker-services
PEER_PROJECT=egr-e2e-$$-peer # a compose project of two services (peers)
PEER_SUBNET=198.19.14.0/24
A_PEER=203.0.113.97	# what its client tries that the policy denies
PEER_NET=egr-e2e-$$-pnet # the job's network for the disconnect case (peers)
PEER_NET_SUBNET=198.19.16.0/24
PEER_ROUTED=198.19.16.128/25 # routed by this host to the test internet
IP_PEER_Y=198.19.16.200	# a job's server on PEER_NET, in that /25
PEER_BR_NET=egr-e2e-$$-bnet # a network with a bridge named by the job
PEER_BR=egrpb$$
PEER_BR_SUBNET=198.19.17.0/24
L_PID=
PM=$DK/pm		# podman's root, run root, configuration, networks, socket
PSOCK=$PM/podman.sock
PIMAGE=localhost/egr-e2e-busybox
P_PID=
SD=$DK/sd		# systemd's dockerd (the systemd cgroup driver): its files, its socket
SDSOCK=$SD/docker.sock
SDROOTSOCK=$SD/own/docker.sock
SD_CG=$(cgroup2_mount)/egr-e2e-$$-sd # the cgroup of that systemd's namespaces: its root
SD_GW=198.19.9.1	# its bridge
A_SDCTL=203.0.113.76
A_SDRUN=203.0.113.77
A_SDBUILD=203.0.113.78
S_PID=
SD_JOBPID=
SD_JOB=
# the flags refused (dockerd's own socket: its hard link), each with the
# address its container tries (203.0.113.
# 100 + its index), and where a flag is a way out of the job's cgroup in
# a line of shell, the container takes it first (ESCAPE): the container's
# shell moves itself to the root cgroup, where no program of the job's runs
CG2=$(cgroup2_mount)
FLAGS=("--privileged" "--cap-add NET_ADMIN" "--cap-add SYS_ADMIN" "--pid host" "-v /:/host"
	"-v $ROOTSOCK:/var/run/docker.sock" "--userns host" "--cgroup-parent $DPARENT-x"
	"--security-opt seccomp=unconfined" "--security-opt apparmor=unconfined"
	"--mount type=bind,source=$CG2,target=/cg" "-v $DK/exec/containerd/containerd.sock:/c.sock")
ESCAPE=("" "" "mkdir -p /tmp/c && mount -t cgroup2 none /tmp/c && echo \$\$ >/tmp/c/cgroup.procs; "
	"" "echo \$\$ >/host$CG2/cgroup.procs; " "" "" "" "" "" "echo \$\$ >/cg/cgroup.procs; " "")
D_PID=

# ------------------------------------------------------------- the rig

# dk_outsider ARGS...: root's docker on SOCK in the suite's mount
# namespace: through egressctl's socket once the daemon keeps it
dk_outsider() { timeout -k 5 120 nsenter --net="$NS_SBX" "$DOCKER" -H "unix://$SOCK" "$@"; }

# dk_job ARGS...: the job's docker: the job user, in the job's cgroup
dk_job() {
	timeout -k 5 120 nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' \
		"${JOB_CG:-$(cg_path job)}" setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups \
		env -i PATH=/usr/bin:/bin HOME="$DK/home" DOCKER_HOST="${JOB_HOST:-unix://$SOCK}" \
		${DOCKER_BUILDKIT:+DOCKER_BUILDKIT=$DOCKER_BUILDKIT} "$DOCKER" "$@"
}

dockerd_setup() {
	groupadd "$JOBU" && useradd -M -N -g "$JOBU" -d "$DK/home" -s /bin/sh "$JOBU" ||
		{ echo "cannot make the job user $JOBU"; return 1; }
	mkdir -p "$DK/home" && chown "$JOBU:$JOBU" "$DK/home" || return 1
	mkdir -p "$(cg_path job)" || return 1
	# test_packet's frame writer, in the image (a static binary: the image
	# has no libc); without it that test says so and skips
	cc -static -O2 -o "$DK/pktsend" "$E2E_SRC/clients/pktsend.c" >"$DK/pktsend.cc" 2>&1 ||
		rm -f "$DK/pktsend"
	# the job's shell: a job always has a process (the daemon compares its
	# mount namespace with its own)
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(cg_path job)" \
		setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups sleep 3600 &
	PIDS+=($!)
	dockerd_start "$JOBU" || return 1
	ip -n "$INET" route add "$NET2_SUBNET" via 198.18.0.2 &&
		ip -n "$INET" route add "$CMP_SUBNET" via 198.18.0.2 || return 1
	dk_root network create --subnet "$NET2_SUBNET" "$NET2" >"$DK/net.out" 2>&1 ||
		{ echo "docker network create: $(tail -3 "$DK/net.out")"; return 1; }
	return 0
}

docker_setup() {
	audit_setup || return 1
	dockerd_setup
}

# dockerd's leftovers go before the namespaces and cgroups do: its
# containers (and dockerd, which stops its containerd), podman's, the v1
# cgroups runc made beside the v2 ones, the job user
eval "net_$(declare -f e2e_cleanup)"
e2e_cleanup() {
	local d
	[ -n "$D_PID" ] && kill -KILL "$D_PID" 2>/dev/null
	if [ -n "$(dockerd_pid)" ] && kill -0 "$(dockerd_pid)" 2>/dev/null; then
		dk_root ps -aq 2>/dev/null | xargs -r timeout 60 "$DOCKER" -H "unix://$ROOTSOCK" rm -f \
			>/dev/null 2>&1
		dk_root network rm "${CMP_PROJECT}_default" >/dev/null 2>&1
	fi
	dockerd_stop
	[ -n "$P_PID" ] && kill -KILL "$P_PID" 2>/dev/null
	[ -n "$S_PID" ] && kill -KILL "$S_PID" 2>/dev/null
	sd_job_down
	sd_down
	if [ -d "$PM/root" ]; then
		pm rm -af -t 0 >/dev/null 2>&1
		while read -r d; do umount -l "$d" 2>/dev/null; done < <(awk -v p="$PM/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
	fi
	dockerd_cgroups_rm
	net_e2e_cleanup
	umount "/tmp/egr-e2e-$$-sid.ram" 2>/dev/null
	rm -rf "/tmp/egr-e2e-$$-sid" "/tmp/egr-e2e-$$-sid.ram" "/tmp/egr-e2e-$$-stop" # test_setid's, test_stop's
	userdel "$JOBU" 2>/dev/null
	groupdel "$JOBU" 2>/dev/null
}

# ------------------------------------------------------------- the daemon

# dstart TAG [ARGS...]: the daemon confining the job's cgroup, keeping
# SOCK (sbx netns, its own control socket); waits until it is ready.
dstart() {
	local tag=$1 n
	shift
	# a tag started before has its "ready:" in the file already: one more
	n=$(grep -cs "ready:" "$W/$tag.dout")
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/d.ctl" --cgroup "$(cg_path job)" \
		--docker "$SOCK" --allow a.example.test --dns-upstream "$INET_DNS" \
		--log "$W/d.jlog" "$@" >>"$W/$tag.dout" 2>&1 </dev/null &
	D_PID=$!
	PIDS+=("$D_PID")
	if ! wait_secs 20 sh -c '[ "$(grep -cs "ready:" "$1")" -gt "$2" ]' x "$W/$tag.dout" "${n:-0}"; then
		fail "$tag.daemon_ready" "the daemon did not come up: $(tail -c 600 "$W/$tag.dout" | tr '\n' '|')"
		return 1
	fi
	return 0
}
dstop() { kill -TERM "$D_PID" 2>/dev/null; wait "$D_PID" 2>/dev/null; D_PID=; }

# daemon_up: the daemon the tests after control share, started once
daemon_up() {
	have_egr || return 1
	[ -n "$D_PID" ] && kill -0 "$D_PID" 2>/dev/null && return 0
	dstart daemon
}

# covered: SOCK is covered by a mount in the suite's namespace
covered() { awk -v p="$SOCK" '$5 == p { f = 1 } END { exit !f }' /proc/self/mountinfo; }

# ======================================================================
# control: without egressctl, the job's container is not under the job's
# cgroup and reaches a denied address, a compose project's service
# (docker-compose up) too; each flag the daemon refuses works
# here (with its way out of the cgroup, where it has one) and reaches an
# address of its own (--privileged cannot: this host's root lacks
# CAP_SYS_RESOURCE, which it would give).
# ======================================================================
test_control() {
	local t=control i f a
	dk_job run --rm "$IMAGE" sh -c "tail -1 /proc/self/cgroup; $(http "$A_CTL" $t)" >"$W/$t.out" 2>&1
	a_first "$t.reached" "$W/$t.out" '^HTTP/1\.[01] 200'
	a_grep "$t.outside_the_job" "$W/$t.out" "^0::$(re "$DPARENT")/[0-9a-f]{64}$"
	sensor_saw "$t.sensor" "dst host $A_CTL and tcp dst port 80"
	# dockerd fetches a build's ADD of a URL itself, outside the job
	mkdir -p "$DK/$t.add"
	printf 'FROM %s\nADD http://%s/%s.add /x\n' "$IMAGE" "$A_ADD_CTL" "$t" >"$DK/$t.add/Dockerfile"
	DOCKER_BUILDKIT=0 dk_job build --no-cache "$DK/$t.add" >"$W/$t.add" 2>&1
	sensor_saw "$t.add.sensor" "dst host $A_ADD_CTL and tcp dst port 80"
	# dockerd reaches the registry a pull names, for whoever asks
	dk_job pull "$A_REG_CTL/egr/x" >"$W/$t.pull" 2>&1
	sensor_saw "$t.pull.sensor" "dst host $A_REG_CTL and tcp dst port 443"
	# docker's embedded DNS (127.0.0.11 on a user-defined network) answers
	# what it does not know by asking upstream from dockerd: a name out
	dk_job run --rm --network "$NET2" "$IMAGE" nslookup "ctl-exfil-$$.data.test" 127.0.0.11 \
		>"$W/$t.dns127" 2>&1
	dns_sync
	a_grep "$t.dns127.forwarded" "$DNSLOG" "query\\[A\\] ctl-exfil-$$\\.data\\.test from"
	# the compose project (test_compose's, its service's denied address
	# its own): its container is dockerd's, on compose's network, and
	# reaches the address
	if have_dc "$t.compose"; then
		compose_up "$t.compose" "$A_CMP_CTL"
		a_grep "$t.compose.outside_the_job" "$W/$t.compose.lines" "^0::$(re "$DPARENT")/[0-9a-f]{64}$"
		a_grep "$t.compose.reached" "$W/$t.compose.lines" '^R: HTTP/1\.[01] 200'
		a_grep "$t.compose.server_saw" "$WEBLOG" "target=/$t\\.compose\\.denied "
		sensor_saw "$t.compose.sensor" "dst host $A_CMP_CTL and tcp dst port 80"
		compose_down "$t.compose"
	fi
	for i in "${!FLAGS[@]}"; do
		f=${FLAGS[$i]}
		a=203.0.113.$((100 + i))
		# shellcheck disable=SC2086 # the flag's words
		dk_job run --rm $f "$IMAGE" sh -c "${ESCAPE[$i]}$(http "$a" "$t.$i")" >"$W/$t.$i.out" 2>&1
		if [ "$f" = --privileged ] && grep -q "unable to apply caps: operation not permitted" "$W/$t.$i.out"; then
			note "$t: $f cannot run on this host (root lacks CAP_SYS_RESOURCE): its control is skipped"
			continue
		fi
		a_first "$t.flag.$i.reached" "$W/$t.$i.out" '^HTTP/1\.[01] 200'
	done
}

# ======================================================================
# setid: a read-write bind of a host directory is where a container of
# the job could leave a set-id root file for the job's user to run on the
# host, outside egressctl's sudo sandbox and the job's cgroup. The
# control: root's container (dockerd's own socket) makes one there. The
# job's: as the image's user (root) it runs with the bind idmapped: what
# it makes is the job user's, set-uid to nobody else, it cannot chown to
# another, make a device node or write root's file there; as uid 5 it
# makes nothing; on ramfs (no idmapped mounts) refused, saying why; as
# the job's own uid:gid it runs, with no-new-privileges, and what it
# leaves is the job user's; read-only as root runs; docker exec -u 0
# refused; docker cp of a set-uid root archive into the job's container
# with such a bind refused (the control: root's makes the file), docker
# cp out works; root asking (a container of the job's with docker's
# socket) for --user 0:0 and a read-write bind refused.
# ======================================================================
test_setid() {
	local t=setid d uid gid
	daemon_up || return 0
	d=/tmp/egr-e2e-$$-sid # outside $W, which holds dockerd's root
	mkdir -p "$d" && chown "$JOBU:$JOBU" "$d"
	uid=$(id -u "$JOBU")
	gid=$(id -g "$JOBU")
	dk_root run --rm -v "$d:/x" "$IMAGE" sh -c 'cp /bin/busybox /x/ctl && chmod 4755 /x/ctl' \
		>"$W/$t.ctl" 2>&1
	a_eq "$t.control.setid_root" "the control's file (owner, mode)" "$(stat -c '%u %a' "$d/ctl" 2>&1)" "0 4755"
	rm -f "$d/ctl"
	# as root: the bind idmapped, the job's uid:gid its root
	echo root >"$d/roots" && chmod 666 "$d/roots" && chmod 644 "$d/roots"
	dk_job run --rm -v "$d:/x" "$IMAGE" sh -c 'cp /bin/busybox /x/b && chmod 4755 /x/b && echo made;
id -u; stat -c "inside %u" /x/b; chown 5 /x/b 2>/dev/null || echo chown_refused;
mknod /x/dev b 7 0 2>/dev/null || echo mknod_refused; { echo x >>/x/roots; } 2>/dev/null || echo write_refused;
grep ^NoNewPrivs /proc/self/status' >"$W/$t.root" 2>&1
	a_grep "$t.root.ran" "$W/$t.root" '^made$'
	a_grep "$t.root.is_root_inside" "$W/$t.root" '^inside 0$'
	a_eq "$t.root.file_is_the_jobs" "the root container's file (owner, mode)" "$(stat -c '%u %a' "$d/b" 2>&1)" "$uid 4755"
	a_grep "$t.root.chown_refused" "$W/$t.root" '^chown_refused$'
	a_grep "$t.root.mknod_refused" "$W/$t.root" '^mknod_refused$'
	a_eq "$t.root.no_device" "a device node of the root container" "$(stat -c %F "$d/dev" 2>&1 | grep -c special)" 0
	a_grep "$t.root.roots_file_refused" "$W/$t.root" '^write_refused$'
	a_eq "$t.root.roots_file_kept" "root's file in the bind" "$(cat "$d/roots")" root
	a_grep "$t.root.nnp" "$W/$t.root" '^NoNewPrivs:[[:space:]]*1$'
	# as another user: nothing of it maps, nothing made
	dk_job run --rm -u 5 -v "$d:/x" "$IMAGE" sh -c 'touch /x/five 2>/dev/null || echo refused' >"$W/$t.u5" 2>&1
	a_grep "$t.u5.refused" "$W/$t.u5" '^refused$'
	expect "$t.u5.nothing_made" "a file of uid 5's container" test ! -e "$d/five"
	# a file system that cannot be idmapped (ramfs): refused, saying why
	mkdir -p "$d.ram" && mount -t ramfs ramfs "$d.ram" && chown "$uid:$gid" "$d.ram"
	dk_job run --rm -v "$d.ram:/x" "$IMAGE" true >"$W/$t.ram" 2>&1
	a_grep "$t.ramfs.refused" "$W/$t.ram" "-v $(re "$d.ram"):/x \\(read-write\\) as the image's user or root is refused in a confined job: .*cannot be idmapped"
	umount "$d.ram" && rmdir "$d.ram"
	dk_job run --rm --user "$uid:$gid" -v "$d:/x" "$IMAGE" \
		sh -c 'grep ^NoNewPrivs /proc/self/status; cp /bin/busybox /x/own && chmod 4755 /x/own && echo made' \
		>"$W/$t.own" 2>&1
	a_grep "$t.own.ran" "$W/$t.own" '^made$'
	a_grep "$t.own.nnp" "$W/$t.own" '^NoNewPrivs:[[:space:]]*1$'
	a_eq "$t.own.file_is_the_jobs" "its file (owner, mode)" "$(stat -c '%u %a' "$d/own" 2>&1)" "$uid 4755"
	dk_job run --rm -v "$d:/x:ro" "$IMAGE" sh -c 'ls /x >/dev/null && echo read' >"$W/$t.ro" 2>&1
	a_grep "$t.ro.ran" "$W/$t.ro" '^read$'
	dk_job run -d --name "egr-e2e-$$-sid" "$IMAGE" sleep 30 >"$W/$t.d" 2>&1
	dk_job exec -u 0 "egr-e2e-$$-sid" echo in >"$W/$t.exec" 2>&1
	a_grep "$t.exec_root.refused" "$W/$t.exec" "docker exec -u 0 is refused in a confined job"
	dk_job exec "egr-e2e-$$-sid" echo in >"$W/$t.exec2" 2>&1
	a_grep "$t.exec_own.ran" "$W/$t.exec2" '^in$'
	dk_root rm -f "egr-e2e-$$-sid" >/dev/null 2>&1
	# docker cp into a read-write bind: dockerd writes the files as root,
	# with the owner and set-id bits the archive says (docker 20.10; later
	# ones make them root's without -a). Any job can write an archive of
	# a set-uid root file (tar --owner=0), and a docker cp of it into its
	# own container's bind would leave one on the host.
	mkdir -p "$W/$t.tar" && cp /bin/busybox "$W/$t.tar/cp" && chmod 4755 "$W/$t.tar/cp"
	tar --owner=0 --group=0 -C "$W/$t.tar" -cf "$W/$t.tar/a.tar" cp && chmod 644 "$W/$t.tar/a.tar"
	dk_root run -d --name "egr-e2e-$$-sidc" -v "$d:/x" "$IMAGE" sleep 60 >"$W/$t.cpd" 2>&1
	dk_root cp - "egr-e2e-$$-sidc:/x" <"$W/$t.tar/a.tar" >"$W/$t.cpctl" 2>&1
	a_eq "$t.control.cp_setid_root" "the control's copied file (owner, mode)" \
		"$(stat -c '%u %a' "$d/cp" 2>&1)" "0 4755"
	rm -f "$d/cp"
	dk_root rm -f "egr-e2e-$$-sidc" >/dev/null 2>&1
	dk_job run -d --name "egr-e2e-$$-sidc" --user "$uid:$gid" -v "$d:/x" "$IMAGE" sleep 60 \
		>"$W/$t.cpd2" 2>&1
	a_grep "$t.cp.container_ran" "$W/$t.cpd2" '^[0-9a-f]{64}$'
	dk_job cp - "egr-e2e-$$-sidc:/x" <"$W/$t.tar/a.tar" >"$W/$t.cp" 2>&1
	a_grep "$t.cp.refused" "$W/$t.cp" "docker cp into container .* is refused in a confined job: it binds $(re "$d") read-write"
	a_eq "$t.cp.nothing_made" "a file the refused docker cp made" "$(stat -c '%u %a' "$d/cp" 2>&1 | grep -c '^0 ')" 0
	dk_job cp "egr-e2e-$$-sidc:/etc/hostname" "$d/out" >"$W/$t.cpout" 2>&1
	a_eq "$t.cp_out.ran" "docker cp out of it" "$(stat -c '%u' "$d/out" 2>&1)" "$uid"
	dk_root rm -f "egr-e2e-$$-sidc" >/dev/null 2>&1
	# root asking: a container of the job's that binds docker's socket
	# (as GitHub's container actions do) runs docker as root; --user 0:0
	# is then the asker's own uid:gid, and an exec -u 0 too
	local libs
	libs=$(dirname "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/x)")
	dk_job run --rm -v "$SOCK:$SOCK" -e DOCKER_HOST="unix://$SOCK" -v "$DOCKER:/usr/bin/docker:ro" \
		-v /lib64:/lib64:ro -v "$libs:/lib/x86_64-linux-gnu:ro" "$IMAGE" /usr/bin/docker run --rm --user 0:0 \
		-v "$d:/x" "$IMAGE" sh -c 'cp /bin/busybox /x/nested && chmod 4755 /x/nested' >"$W/$t.nested" 2>&1
	a_grep "$t.nested.refused" "$W/$t.nested" "-v $(re "$d"):/x \\(read-write\\) asked for by root .* is refused in a confined job"
	a_eq "$t.nested.nothing_made" "a file of the nested container" "$(stat -c '%u %a' "$d/nested" 2>&1 | grep -c '^0 ')" 0
	rm -rf "$d"
}

# ======================================================================
# labels: a selector by docker label (dockerd's config.v2.json, "labels"
# in the daemon's config beside a cgroup glob): containers root starts
# under a parent the glob names, one labelled as the selector says (its
# policy: the allowed name answers, a denied address 403), one labelled
# otherwise (the default, "deny": nothing answers); nothing at the sensor.
# Each waits for a file the test makes once the daemon said it attached.
# The control: the same container with no daemon reaches the address.
# ======================================================================
test_labels() {
	local t=labels parent id_ci id_prod p1 p2
	parent=/egr-e2e-$$-lbl
	mkdir -p "$CG2$parent" "$W/$t.go" || { fail "$t.setup" "mkdir $CG2$parent"; return 0; }
	# lbl NAME LABEL SCRIPT: root's container under parent, waiting for
	# /go/NAME, its id in $W/t.NAME.cid
	lbl() {
		dk_root run --rm --cidfile "$W/$t.$1.cid" --cgroup-parent "$parent" --label "egressctl.test/job=$2" \
			-v "$W/$t.go:/go:ro" "$IMAGE" sh -c "tail -1 /proc/self/cgroup; while [ ! -e /go/$1 ]; do sleep 0.2; done; $3" \
			>"$W/$t.$1.out" 2>&1
	}
	rm -f "$W/$t".*.cid
	touch "$W/$t.go/ctl"
	lbl ctl ci-0 "$(http "$A_LBL_CTL" $t.ctl)"
	a_first "$t.control.reached" "$W/$t.ctl.out" '^HTTP/1\.[01] 200'
	sensor_saw "$t.control.sensor" "dst host $A_LBL_CTL and tcp dst port 80"
	have_egr || return 0
	cat >"$W/$t.json" <<EOF
{"default": "deny", "docker_containers": ["$DK/root/containers/{id}"], "targets": [
  {"name": "ci", "cgroup": "$parent/*", "labels": {"egressctl.test/job": "ci-*"},
   "containers": "$GW", "allow": ["a.example.test"], "dns_upstream": "$INET_DNS", "log": "$W/$t.jlog"}
]}
EOF
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/$t.ctl" --config "$W/$t.json" \
		>"$W/$t.dout" 2>&1 </dev/null &
	L_PID=$!
	PIDS+=("$L_PID")
	if ! wait_secs 20 grep -qs "ready:" "$W/$t.dout"; then
		fail "$t.daemon_ready" "$(tail -c 600 "$W/$t.dout" | tr '\n' '|')"
		return 0
	fi
	lbl ci ci-1 "$(http a.example.test $t.allowed) $(http "$A_LBL" $t.denied)" &
	p1=$!
	lbl prod prod-1 "$(http "$A_LBL_PROD" $t.prod)" &
	p2=$!
	wait_secs 20 test -s "$W/$t.ci.cid"
	wait_secs 20 test -s "$W/$t.prod.cid"
	id_ci=$(cat "$W/$t.ci.cid" 2>/dev/null)
	id_prod=$(cat "$W/$t.prod.cid" 2>/dev/null)
	wait_secs 60 grep -qs "target ci:$(re "$parent")/${id_ci:-none}: attached" "$W/$t.dout"
	wait_secs 60 grep -qs "target default:$(re "$parent")/${id_prod:-none}: attached" "$W/$t.dout"
	touch "$W/$t.go/ci" "$W/$t.go/prod"
	wait "$p1" "$p2"
	a_grep "$t.ci.attached" "$W/$t.dout" "target ci:$(re "$parent")/${id_ci:-none}: attached to $(re "$CG2$parent/${id_ci:-none}")"
	a_grep "$t.prod.default" "$W/$t.dout" "target default:$(re "$parent")/${id_prod:-none}: attached"
	a_grep "$t.ci.allowed" "$W/$t.ci.out" '^R: HTTP/1\.[01] 200'
	a_grep "$t.ci.denied.403" "$W/$t.ci.out" '^R: HTTP/1\.[01] 403'
	a_nogrep "$t.prod.nothing" "$W/$t.prod.out" '^R: HTTP/'
	a_jlog "$t.ci.logged" "$W/$t.jlog" decision=deny ip="$(re "$A_LBL")"
	sensor_none "$t.ci.sensor" "dst host $A_LBL"
	sensor_none "$t.prod.sensor" "dst host $A_LBL_PROD"
	kill -TERM "$L_PID" 2>/dev/null
	wait "$L_PID" 2>/dev/null
}

# ======================================================================
# run: the job's `docker run` (docker0, a network namespace of its own):
# under the job's cgroup; an allowed name answers, a denied address gets
# 403 and a denied name REFUSED, never asked upstream; decisions name the
# container; nothing reaches the sensor. `docker run -i` relays stdin to
# its end (the stream dockerd takes over, half-closed).
# ======================================================================
test_run() {
	local t=run cid
	daemon_up || return 0
	a_grep "$t.took_the_socket" "$W/daemon.dout" "$(re "$SOCK") is egressctl's now.*reach egressctl at $(re "$GW")"
	expect "$t.covered" "$SOCK is not covered by a mount" covered
	rm -f "$W/$t.cid"
	dk_job run --rm --cidfile "$DK/home/$t.cid" "$IMAGE" sh -c "tail -1 /proc/self/cgroup; \
$(http a.example.test $t.allowed) $(http "$A_RUN" $t.denied) nslookup denied-run.test 2>&1 | tail -2" \
		>"$W/$t.out" 2>&1
	cid=$(cat "$DK/home/$t.cid" 2>/dev/null)
	a_grep "$t.under_the_job" "$W/$t.out" "^0::/egressctl/$(re "$(cg_name job)")/${cid:-none}$"
	a_grep "$t.allowed" "$W/$t.out" '^R: HTTP/1\.[01] 200'
	a_grep "$t.allowed.server_saw" "$WEBLOG" "target=/$t\\.allowed "
	a_grep "$t.denied.403" "$W/$t.out" '^R: HTTP/1\.[01] 403'
	a_nogrep "$t.denied.server_saw_nothing" "$WEBLOG" "target=/$t\\.denied "
	a_grep "$t.dns.refused" "$W/$t.out" "REFUSED"
	a_never_asked "$t.dns.never_upstream" "denied-run\\.test"
	a_jlog "$t.logged" "$W/d.jlog" decision=allow host=a.example.test container="${cid:-none}"
	a_jlog "$t.denied_logged" "$W/d.jlog" decision=deny ip="$(re "$A_RUN")" container="${cid:-none}"
	sensor_none "$t.sensor" "dst host $A_RUN"
	# docker run -i: stdin through the stream taken over, its end passed on
	echo "stdin-$$" | dk_job run -i --rm "$IMAGE" cat >"$W/$t.stdin" 2>&1
	a_grep "$t.stdin_relayed" "$W/$t.stdin" "^stdin-$$\$"
}

# ======================================================================
# packet: an AF_PACKET socket writes an IP datagram as a frame to the
# container's gateway, or with --network host on the host's interface: no
# connect, sendmsg or egress hook of a cgroup sees it, and the host
# forwards or sends it. Root's containers send one each way (the controls:
# seen at the sensor); the job's cannot make the socket (NET_RAW dropped
# from every container of the job's; before, its datagram was seen), nor
# ask for NET_RAW, and nothing is seen. A classic build's RUN step keeps
# NET_RAW (the build API cannot drop it): root's build sends one (seen);
# the job's sends one too, and the packet guard drops it at the host side
# of the step's veth (before, it was seen), while the same step's request
# through egressctl is answered.
# ======================================================================
test_packet() {
	local t=packet
	[ -x "$DK/pktsend" ] || { note "$t: no static pktsend ($(head -c 200 "$DK/pktsend.cc")): skipped"; return 0; }
	daemon_up || return 0
	# (a name looked up first: the gateway's MAC is then in the ARP table)
	dk_root run --rm "$IMAGE" sh -c "nslookup a.example.test >/dev/null 2>&1; pktsend eth0 $A_PKT 9999" \
		>"$W/$t.ctl" 2>&1
	a_grep "$t.control.sent" "$W/$t.ctl" '^sent [0-9]+$'
	sensor_saw "$t.control.sensor" "udp and dst host $A_PKT and dst port 9999"
	dk_root run --rm --network host "$IMAGE" sh -c "pktsend $SBX_IF $A_PKT 9998" >"$W/$t.ctlhost" 2>&1
	a_grep "$t.control.host_sent" "$W/$t.ctlhost" '^sent [0-9]+$'
	sensor_saw "$t.control.host_sensor" "udp and dst host $A_PKT and dst port 9998"
	local base
	base=$(sensor_now "dst host $A_PKT")
	dk_job run --rm "$IMAGE" sh -c "nslookup a.example.test >/dev/null 2>&1; pktsend eth0 $A_PKT 9999" \
		>"$W/$t.out" 2>&1
	a_grep "$t.refused" "$W/$t.out" '^socket: Operation not permitted$'
	dk_job run --rm --network host "$IMAGE" sh -c "pktsend $SBX_IF $A_PKT 9998" >"$W/$t.host" 2>&1
	a_grep "$t.host_refused" "$W/$t.host" '^socket: Operation not permitted$'
	dk_job run --rm --cap-add NET_RAW "$IMAGE" sh -c "nslookup a.example.test >/dev/null 2>&1; pktsend eth0 $A_PKT 9999" >"$W/$t.add" 2>&1
	a_grep "$t.cap_add_refused" "$W/$t.add" 'egressctl: --cap-add NET_RAW is refused'
	sensor_none_since "$t.sensor" "$base" "dst host $A_PKT"
	# a build's RUN step
	mkdir -p "$DK/$t.ctx"
	printf 'FROM %s\nRUN nslookup a.example.test >/dev/null 2>&1; pktsend eth0 %s 9997; %s\n' \
		"$IMAGE" "$A_PKT" "$(http a.example.test $t.build)" >"$DK/$t.ctx/Dockerfile"
	DOCKER_BUILDKIT=0 dk_root build --no-cache "$DK/$t.ctx" >"$W/$t.ctlbuild" 2>&1
	a_grep "$t.control.build_sent" "$W/$t.ctlbuild" '^sent [0-9]+$'
	sensor_saw "$t.control.build_sensor" "udp and dst host $A_PKT and dst port 9997"
	base=$(sensor_now "dst host $A_PKT")
	DOCKER_BUILDKIT=0 dk_job build --no-cache "$DK/$t.ctx" >"$W/$t.build" 2>&1
	a_grep "$t.build.sent" "$W/$t.build" '^sent [0-9]+$'
	a_grep "$t.build.request_answered" "$W/$t.build" 'R: HTTP/1\.[01] 200'
	sensor_none_since "$t.build.sensor" "$base" "dst host $A_PKT"
	wait_secs 5 grep -qs 'frames written by an AF_PACKET socket of a target' "$W/daemon.dout"
	a_grep "$t.build.said" "$W/daemon.dout" 'docker: [1-9][0-9]* frames written by an AF_PACKET socket of a target.s cgroup dropped so far'
	# A build on a network of another driver: a macvlan's interface is a
	# device of the host's own (here the sandbox's uplink), no bridge port,
	# no guard. Root's build step on one writes a broadcast frame, on the
	# wire at once (the control: seen); the job's build on it is refused,
	# by name and by id (before: sent and seen); on a bridge network other
	# than docker0 (NET2) the job's build runs, its request answered.
	local mv=egr-e2e-$$-mv mvid
	dk_root network create -d macvlan --subnet 198.18.0.0/24 --gateway 198.18.0.1 \
		--ip-range 198.18.0.240/28 -o parent="$SBX_IF" "$mv" >"$W/$t.mv" 2>&1
	a_val "$t.macvlan.made" "docker network create -d macvlan's status" "$?" 0
	mvid=$(dk_root network inspect -f '{{.Id}}' "$mv" 2>/dev/null)
	mkdir -p "$DK/$t.mvctx" "$DK/$t.brctx"
	printf 'FROM %s\nRUN pktsend eth0 %s 9996 broadcast\n' "$IMAGE" "$A_PKT" >"$DK/$t.mvctx/Dockerfile"
	DOCKER_BUILDKIT=0 dk_root build --no-cache --network "$mv" "$DK/$t.mvctx" >"$W/$t.ctlmv" 2>&1
	a_grep "$t.control.macvlan_sent" "$W/$t.ctlmv" '^sent [0-9]+$'
	sensor_saw "$t.control.macvlan_sensor" "udp and dst host $A_PKT and dst port 9996"
	base=$(sensor_now "dst host $A_PKT")
	DOCKER_BUILDKIT=0 dk_job build --no-cache --network "$mv" "$DK/$t.mvctx" >"$W/$t.mvbuild" 2>&1
	a_grep "$t.macvlan.refused" "$W/$t.mvbuild" "egressctl: docker build --network $mv is refused in a confined job: its driver is macvlan"
	a_nogrep "$t.macvlan.not_sent" "$W/$t.mvbuild" '^sent [0-9]+$'
	DOCKER_BUILDKIT=0 dk_job build --no-cache --network "${mvid:-none}" "$DK/$t.mvctx" >"$W/$t.mvid" 2>&1
	a_grep "$t.macvlan.by_id_refused" "$W/$t.mvid" "egressctl: docker build --network ${mvid:-none} is refused in a confined job: its driver is macvlan"
	sensor_none_since "$t.macvlan.sensor" "$base" "dst host $A_PKT"
	dk_root network rm "$mv" >/dev/null 2>&1
	printf 'FROM %s\nRUN %s\n' "$IMAGE" "$(http a.example.test $t.bridge_net)" >"$DK/$t.brctx/Dockerfile"
	DOCKER_BUILDKIT=0 dk_job build --no-cache --network "$NET2" "$DK/$t.brctx" >"$W/$t.brbuild" 2>&1
	a_grep "$t.bridge_net.answered" "$W/$t.brbuild" 'R: HTTP/1\.[01] 200'
	# The guard races dockerd: a step's port must be guarded before its
	# veth's other end reaches the step. The daemon's loop (which the
	# job's connections keep busy) stopped, its thread held by ptrace: a
	# port enslaved meanwhile is guarded all the same (before, by the loop:
	# not until the loop went on).
	local br=egrpb$$ va=egrpa$$ vb=egrpz$$ g=0
	python3 "$E2E_SRC/clients/tstop.py" "$D_PID" 4 >"$W/$t.tstop" 2>&1 &
	local ts=$!
	wait_secs 5 grep -qs '^stopped' "$W/$t.tstop"
	a_grep "$t.stall.stopped" "$W/$t.tstop" '^stopped$'
	timeout 1 "$EGRESSCTL" status --control "$W/d.ctl" >/dev/null 2>&1
	a_val "$t.stall.loop_stopped" "egressctl status's status with the loop stopped" "$?" 124
	ip -n "$SBX" link add "$br" type bridge && ip -n "$SBX" link add "$va" type veth peer name "$vb" &&
		ip -n "$SBX" link set "$va" master "$br" || fail "$t.stall.port" "cannot make a bridge port"
	for _ in $(seq 20); do
		ip -n "$SBX" -d link show "$va" >/dev/null 2>&1 || break
		tc -n "$SBX" filter show dev "$va" ingress 2>/dev/null | grep -q egr_pktguard && { g=1; break; }
		sleep 0.1
	done
	a_val "$t.stall.port_guarded" "the new port guarded within 2 s with the loop stopped" "$g" 1
	wait "$ts"
	a_grep "$t.stall.released" "$W/$t.tstop" '^released$'
	ip -n "$SBX" link del "$va" 2>/dev/null
	ip -n "$SBX" link del "$br" 2>/dev/null
	"$EGRESSCTL" status --control "$W/d.ctl" >/dev/null 2>&1
	a_val "$t.stall.loop_again" "egressctl status's status after" "$?" 0
}

# ======================================================================
# fetch: what dockerd fetches itself for a classic build: an ADD of a URL,
# the image of a FROM it does not have: dockerd's own cgroup is confined
# by the job's policy. The job's ADD of a denied address and its FROM of
# an image on a denied registry are never tried (before, both were:
# dockerd is not in the job's cgroup; test_control shows the ADD without
# egressctl); its ADD of an allowed name is fetched; dockerd's decisions
# are in the job's log.
# ======================================================================
test_fetch() {
	local t=fetch
	daemon_up || return 0
	mkdir -p "$DK/$t.add" "$DK/$t.from" "$DK/$t.ok"
	printf 'FROM %s\nADD http://%s/%s.add /x\n' "$IMAGE" "$A_ADD" "$t" >"$DK/$t.add/Dockerfile"
	DOCKER_BUILDKIT=0 dk_job build --no-cache "$DK/$t.add" >"$W/$t.add" 2>&1
	a_nogrep "$t.add.not_built" "$W/$t.add" 'Successfully built'
	printf 'FROM %s/egr/x:%s\nRUN true\n' "$A_FROM" "$t" >"$DK/$t.from/Dockerfile"
	DOCKER_BUILDKIT=0 dk_job build --no-cache "$DK/$t.from" >"$W/$t.from" 2>&1
	a_nogrep "$t.from.not_built" "$W/$t.from" 'Successfully built'
	sensor_none "$t.add.sensor" "dst host $A_ADD"
	sensor_none "$t.from.sensor" "dst host $A_FROM"
	a_jlog "$t.add.logged" "$W/d.jlog" decision=deny ip="$(re "$A_ADD")" comm=dockerd
	# an allowed name: dockerd fetches it, through egressctl
	printf 'FROM %s\nADD http://a.example.test/%s.allowed /x\n' "$IMAGE" "$t" >"$DK/$t.ok/Dockerfile"
	DOCKER_BUILDKIT=0 dk_job build --no-cache "$DK/$t.ok" >"$W/$t.ok" 2>&1
	a_grep "$t.allowed.built" "$W/$t.ok" 'Successfully built'
	a_grep "$t.allowed.server_saw" "$WEBLOG" "target=/$t\\.allowed "
	a_jlog "$t.allowed.logged" "$W/d.jlog" decision=allow host=a.example.test comm=dockerd
	# dockerd's networks' subnets are allowed to it: a process in its
	# cgroup, as its userland proxy (docker-proxy) is, reaches a container
	# of root's on its network (a service's, as a runner starts them)
	dk_root run -d --rm --name "egr-e2e-$$-web" --network "$NET2" --ip 198.19.7.77 "$IMAGE" sh -c \
		'while :; do printf "HTTP/1.0 200 OK\r\n\r\nweb\n" | nc -l -p 80; done' >"$W/$t.web" 2>&1
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec curl -sS -m 10 http://198.19.7.77/' \
		"$(dcg)" >"$W/$t.web" 2>&1
	a_grep "$t.network.reached" "$W/$t.web" '^web$'
	a_jlog "$t.network.logged" "$W/d.jlog" decision=allow ip=198\\.19\\.7\\.77 comm=curl
	dk_root rm -f "egr-e2e-$$-web" >/dev/null 2>&1
	# docker's embedded DNS (dockerd's, on a user-defined network) still
	# answers root's containers; what it asks upstream is judged
	dk_root run --rm --network "$NET2" "$IMAGE" sh -c \
		"nslookup a.example.test 127.0.0.11; nslookup fetch-$$.data.test 127.0.0.11" >"$W/$t.dns" 2>&1
	a_grep "$t.embedded_dns.answered" "$W/$t.dns" '203\.0\.113\.10'
	a_grep "$t.embedded_dns.denied" "$W/$t.dns" 'REFUSED|NXDOMAIN|can.t find'
	a_never_asked "$t.embedded_dns.never_upstream" "fetch-$$\\.data\\.test"
	a_nogrep "$t.embedded_dns.no_line_per_answer" "$W/d.jlog" \
		'"reason":"loopback socket of this sandbox".*"comm":"dockerd"'
	# a connection of dockerd's made before the daemon's start (a
	# registry's kept alive from the runner's pulls) is ended at the
	# attach: one in dockerd's cgroup to a denied address echoes before
	# the start, and what it writes after never arrives (kept, it would
	# go on unjudged)
	dstop
	rm -f "$W/$t.go" && mkfifo "$W/$t.go" || return 0
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec bash -c "$1" x "$2" "$3" "$4"' \
		"$(dcg)" 'exec 3<>"/dev/tcp/$1/22" || exit 1; read -r -t 5 b <&3; echo "banner: $b"
echo "before-$3" >&3; read -r -t 5 l <&3; echo "echo: $l"; read -r go <"$2"
echo "kept-$3" >&3 && echo sent; read -r -t 5 l <&3; echo "after: $l"' "$A_KEPT" "$W/$t.go" "$$" \
		>"$W/$t.kept" 2>&1 &
	local kp=$!
	wait_secs 10 grep -qs '^echo: before' "$W/$t.kept"
	a_grep "$t.existing.echoed_before" "$W/$t.kept" "^echo: before-$$"
	dstart "$t" || { kill "$kp" 2>/dev/null; return 0; }
	echo go >"$W/$t.go"
	wait "$kp" 2>/dev/null
	a_nogrep "$t.existing.not_after" "$W/$t.kept" "^after: kept-$$"
	a_nogrep "$t.existing.server_saw_nothing" "$WEBLOG" "kept-$$"
	a_jlog "$t.existing.ended" "$W/d.jlog" event=pre-existing-killed ip="$(re "$A_KEPT")" port=22
}

# ======================================================================
# serve: a job's container serves, as a service a step starts and then
# tests against: a connection from one of this host's addresses is
# answered (root's client on the host, whose source is the network's
# gateway; the job's own shell and another container of the job's,
# through egressctl's proxy once a rule names the server's address), and
# nobody else's; on a network made after the daemon's start too: a
# client outside the host that reaches the container's
# address (the test internet routes the network) gets nothing, its
# SYN-ACK never leaves (nothing at the sensor) and the drop is logged. The
# control: root's server on the same network answers that client. Before,
# the job's server answered nobody (the catch-all dropped its SYN-ACK).
# ======================================================================
test_serve() {
	local t=serve svc=egr-e2e-$$-serve rsvc=egr-e2e-$$-rserve body
	daemon_up || return 0
	body='while :; do printf "HTTP/1.0 200 OK\r\n\r\nserved-%s\n" "$0" | nc -l -p 80; done'
	dk_root run -d --rm --name "$rsvc" --network "$NET2" --ip "$IP_SRV_ROOT" "$IMAGE" sh -c \
		"$body" root >"$W/$t.rrun" 2>&1
	dk_job run -d --rm --name "$svc" --network "$NET2" --ip "$IP_SRV" "$IMAGE" sh -c \
		"$body" job >"$W/$t.run" 2>&1
	wait_secs 20 sh -c "nsenter --net=$NS_SBX curl -sS -m 2 http://$IP_SRV_ROOT/ | grep -q served-root"
	# the control: root's server answers a client outside the host
	in_inet curl -sS -m 5 --interface "$A_SRV_CTL" "http://$IP_SRV_ROOT/" >"$W/$t.ctl" 2>&1
	a_grep "$t.control.answered_outside" "$W/$t.ctl" '^served-root$'
	sensor_saw "$t.control.sensor_saw" "dst host $A_SRV_CTL and src host $IP_SRV_ROOT"
	# root's client on the host: answered (its source: the gateway)
	nsenter --net="$NS_SBX" curl -sS -m 10 "http://$IP_SRV/" >"$W/$t.host" 2>&1
	a_grep "$t.host.answered" "$W/$t.host" '^served-job$'
	# the job's shell and another container of the job's, through the proxy
	if "$EGRESSCTL" allow --control "$W/d.ctl" --cgroup "$(cg_path job)" "$IP_SRV" >"$W/$t.allow" 2>&1; then
		ok "$t.rule_added"
	else
		fail "$t.rule_added" "egressctl allow: $(head -c 300 "$W/$t.allow" | tr '\n' '|')"
	fi
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(cg_path job)" \
		setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups curl -sS -m 10 "http://$IP_SRV/" \
		>"$W/$t.job" 2>&1
	a_grep "$t.job.answered" "$W/$t.job" '^served-job$'
	dk_job run --rm --network "$NET2" "$IMAGE" sh -c "$(http "$IP_SRV" $t.peer)" >"$W/$t.peer" 2>&1
	a_first "$t.container.answered" "$W/$t.peer" '^HTTP/1\.[01] 200'
	# a network made after the daemon's start: its gateway, an address of
	# this host from then on, is answered too (the addresses are watched)
	dk_root network create --subnet "$SRV_LATE_SUBNET" "$SRV_LATE_NET" >"$W/$t.late" 2>&1 &&
		dk_job run -d --rm --name "$svc-late" --network "$SRV_LATE_NET" --ip "$IP_SRV_LATE" \
			"$IMAGE" sh -c "$body" late >>"$W/$t.late" 2>&1
	wait_secs 10 sh -c "nsenter --net=$NS_SBX curl -sS -m 2 http://$IP_SRV_LATE/ | grep -q served-late"
	nsenter --net="$NS_SBX" curl -sS -m 10 "http://$IP_SRV_LATE/" >"$W/$t.host_late" 2>&1
	a_grep "$t.late_network.answered" "$W/$t.host_late" '^served-late$'
	dk_root rm -f "$svc-late" >/dev/null 2>&1
	dk_root network rm "$SRV_LATE_NET" >/dev/null 2>&1
	# a client outside the host: nothing leaves towards it
	in_inet curl -sS -m 5 --interface "$A_SRV_OUT" "http://$IP_SRV/" >"$W/$t.out" 2>&1
	a_nogrep "$t.outside.not_answered" "$W/$t.out" 'served-job'
	sensor_none "$t.outside.sensor" "dst host $A_SRV_OUT"
	a_jlog "$t.outside.logged" "$W/d.jlog" decision=deny ip="$(re "$A_SRV_OUT")" \
		reason="dropped by the catch-all"
	dk_root rm -f "$svc" "$rsvc" >/dev/null 2>&1
}

# ======================================================================
# published: a job's container started with -p: the job reaches it on
# 127.0.0.1:PORT (dockerd's userland proxy) with no rule of its own, the
# port allowed while the container runs and said in the log; gone with
# the container (the log says so, and the job's connect to that port is
# refused again, while root's still reaches it when root's container
# takes the port). Root's container's published port is not the job's:
# refused to the job, reached by root (the control). Before, the job's
# own published port was refused as any loopback port outside the job,
# and even root's published HTTP port was refused once a job was
# confined: dockerd's userland proxy went through egressctl's proxy,
# which judged its request by Host ("localhost:18081", a local address).
# Now dockerd's networks go direct for it; another network a rule allows
# it is still judged request by request (a forged Host refused).
# ======================================================================
test_published() {
	local t=published pub=egr-e2e-$$-pub rpub=egr-e2e-$$-rpub body n
	daemon_up || return 0
	body='while :; do printf "HTTP/1.0 200 OK\r\n\r\nserved-%s\n" "$0" | nc -l -p 80; done'
	dk_job run -d --rm --name "$pub" -p 18080:80 "$IMAGE" sh -c "$body" job >"$W/$t.run" 2>&1
	dk_root run -d --rm --name "$rpub" -p 18081:80 "$IMAGE" sh -c "$body" root >"$W/$t.rrun" 2>&1
	wait_secs 20 sh -c "nsenter --net=$NS_SBX curl -sS -m 2 http://127.0.0.1:18081/ | grep -q served-root"
	a_jlog "$t.said" "$W/d.jlog" event=docker "reason=container [0-9a-f]{12} publishes port 18080: 127\\.0\\.0\\.1:18080 allowed while it runs"
	job_curl "http://127.0.0.1:18080/" >"$W/$t.job" 2>&1
	a_grep "$t.job.answered" "$W/$t.job" '^served-job$'
	job_curl "http://localhost:18080/" >"$W/$t.job_localhost" 2>&1
	a_grep "$t.job.localhost_answered" "$W/$t.job_localhost" '^served-job$'
	# restarted (its cgroup made anew): still the job's
	dk_job restart -t 1 "$pub" >"$W/$t.restart" 2>&1
	sleep 2
	wait_secs 10 sh -c "nsenter --net=$NS_SBX curl -sS -m 2 http://127.0.0.1:18080/ | grep -q served-job"
	job_curl "http://127.0.0.1:18080/" >"$W/$t.job_restarted" 2>&1
	a_grep "$t.restarted.answered" "$W/$t.job_restarted" '^served-job$'
	# root's published port: root reaches it (the control), the job not
	nsenter --net="$NS_SBX" curl -sS -m 10 http://127.0.0.1:18081/ >"$W/$t.root" 2>&1
	a_grep "$t.control.root_answered" "$W/$t.root" '^served-root$'
	# dockerd's networks alone go direct for it: a network a rule of its
	# allows besides is judged request by request (a forged Host refused)
	"$EGRESSCTL" allow --control "$W/d.ctl" --cgroup dockerd 203.0.113.0/24 >"$W/$t.allow" 2>&1
	dcg_curl -H "Host: forged-$$.test" "http://$A_PUB/$t.forged" >"$W/$t.forged" 2>&1
	a_grep "$t.other_net.forged_refused" "$W/$t.forged" 'blocked forged-'
	a_nogrep "$t.other_net.server_saw_nothing" "$WEBLOG" "target=/$t\\.forged "
	dcg_curl "http://$A_PUB/$t.plain" >"$W/$t.plain" 2>&1
	a_grep "$t.other_net.allowed" "$WEBLOG" "target=/$t\\.plain "
	job_curl "http://127.0.0.1:18081/" >"$W/$t.job_root" 2>&1
	a_nogrep "$t.roots.refused" "$W/$t.job_root" 'served-root'
	a_jlog "$t.roots.logged" "$W/d.jlog" decision=deny ip=127\\.0\\.0\\.1 port=18081
	# the container gone: its port no longer the job's (a restart above
	# may have said "gone" once already: one more such line is this one)
	n=$(grep -c 'is gone: 127\.0\.0\.1:18080 no longer allowed' "$W/d.jlog")
	dk_root rm -f "$pub" >/dev/null 2>&1
	wait_secs 5 sh -c '[ "$(grep -c "is gone: 127\.0\.0\.1:18080 no longer allowed" "$1")" -gt "$2" ]' \
		x "$W/d.jlog" "$n"
	a_val "$t.gone.said" "lines saying its port is no longer allowed" \
		"$(grep -c 'is gone: 127\.0\.0\.1:18080 no longer allowed' "$W/d.jlog")" "$((n + 1))"
	dk_root run -d --rm --name "$pub-2" -p 18080:80 "$IMAGE" sh -c "$body" root2 >"$W/$t.run2" 2>&1
	wait_secs 20 sh -c "nsenter --net=$NS_SBX curl -sS -m 2 http://127.0.0.1:18080/ | grep -q served-root2"
	job_curl "http://127.0.0.1:18080/" >"$W/$t.job2" 2>&1
	a_nogrep "$t.gone.refused" "$W/$t.job2" 'served-root2'
	dk_root rm -f "$rpub" "$pub-2" >/dev/null 2>&1
}

# dcg_curl ARGS...: curl in dockerd's cgroup (as its userland proxy runs)
dcg_curl() {
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(dcg)" \
		curl -sS -m 10 "$@"
}

# job_curl ARGS...: curl as the job (its user, its cgroup or JOB_CG, the
# host's network)
job_curl() {
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "${JOB_CG:-$(cg_path job)}" \
		setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups curl -sS -m 10 "$@"
}

# ======================================================================
# services: a CI job's services (GitHub's `services:`) run before the
# job's first step, so before the daemon: root's containers, not the
# job's. One that runs what it is asked (as a database's COPY ... FROM
# PROGRAM does for its superuser) was the job's way out: the job, confined
# by a daemon without --docker-services, had it fetch a denied address
# (the control: seen). With --docker-services network=github_network_*
# the service's cgroup is a target of the job's policy: the job's request
# on the port the service publishes (the rule for 127.0.0.1:PORT is
# added) is still answered (dockerd's userland proxy connects from this
# host's address), the
# denied address gets 403 and nothing reaches the sensor, an allowed name
# is fetched, the decisions name the service's container, its published
# port is allowed on 127.0.0.1 and said so; the target goes when the
# daemon stops. A filter that is no filter, or without --docker, stops the
# start with the reason.
# ======================================================================

# svc_ask CMD: the job (its user, its cgroup) has the service run CMD, on
# the port it publishes on this host (dockerd's userland proxy, as on
# GitHub's runners); what the service wrote back
svc_ask() {
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(cg_path job)" \
		setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups timeout 20 bash -c \
		'exec 3<>/dev/tcp/127.0.0.1/15432 || exit 1; printf "%s; exit\n" "$1" >&3; cat <&3' x "$1"
}

test_services() {
	local t=services svc=egr-e2e-$$-svc cid scg
	have_egr || return 0
	dk_root network create --subnet "$SVC_SUBNET" "$SVC_NET" >"$W/$t.net" 2>&1 &&
		ip -n "$INET" route add "$SVC_SUBNET" via 198.18.0.2 &&
		dk_root run -d --name "$svc" --network "$SVC_NET" --ip "$IP_SVC" -p 15432:80 "$IMAGE" \
			nc -ll -p 80 -e sh >"$W/$t.run" 2>&1 ||
		{ fail "$t.setup" "$(tail -3 "$W/$t.net" "$W/$t.run" | tr '\n' '|')"; return 0; }
	cid=$(head -1 "$W/$t.run")
	# the control: the job, confined without --docker-services
	dstop
	dstart "$t.plain" || return 0
	"$EGRESSCTL" allow --control "$W/d.ctl" --cgroup "$(cg_path job)" 127.0.0.1:15432 \
		>"$W/$t.allow" 2>&1
	svc_ask "wget -q -O- http://$A_SVC_CTL/$t.ctl 2>&1" >"$W/$t.ctl" 2>&1
	a_grep "$t.control.fetched" "$WEBLOG" "target=/$t\\.ctl "
	dstop
	# a filter that is none, and one without --docker: the start refused
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/d2.ctl" --cgroup "$(cg_path job)" \
		--docker "$SOCK" --docker-services "name=x" --allow a.example.test >"$W/$t.bad" 2>&1
	a_grep "$t.bad_filter" "$W/$t.bad" "--docker-services 'name=x': expected network=GLOB"
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/d2.ctl" --cgroup "$(cg_path job)" \
		--docker-services "network=x" --allow a.example.test >"$W/$t.nodocker" 2>&1
	a_grep "$t.needs_docker" "$W/$t.nodocker" "--docker-services needs --docker"
	# with the job's services
	dstart "$t" --docker-services "network=github_network_*" || return 0
	a_grep "$t.said" "$W/$t.dout" "service $svc \\(container ${cid:0:12}.*confined by the command line's policy"
	a_grep "$t.port_allowed" "$W/$t.dout" "service $svc: 127\\.0\\.0\\.1:15432 allowed"
	svc_ask "echo asked-$$; wget -q -O- http://$A_SVC_OUT/$t.denied 2>&1; \
wget -q -O- http://a.example.test/$t.allowed >/dev/null 2>&1 && echo allowed-fetched" >"$W/$t.job" 2>&1
	a_grep "$t.job.answered" "$W/$t.job" "^asked-$$\$"
	a_grep "$t.denied.403" "$W/$t.job" "403"
	a_grep "$t.allowed.fetched" "$W/$t.job" "^allowed-fetched\$"
	a_grep "$t.allowed.server_saw" "$WEBLOG" "target=/$t\\.allowed "
	a_nogrep "$t.denied.server_saw_nothing" "$WEBLOG" "target=/$t\\.denied "
	sensor_none "$t.sensor" "dst host $A_SVC_OUT"
	a_jlog "$t.logged" "$W/d.jlog" decision=deny ip="$(re "$A_SVC_OUT")" container="$cid"
	scg="$(cgroup2_mount)$DPARENT/$cid"
	a_val "$t.attached" "programs on the service's cgroup" \
		"$(bpftool cgroup show "$scg" 2>/dev/null | grep -c egr_)" '[1-9][0-9]*'
	dstop
	a_val "$t.detached" "programs on the service's cgroup once the daemon stopped" \
		"$(bpftool cgroup show "$scg" 2>/dev/null | grep -c egr_)" 0
	dk_root rm -f "$svc" >/dev/null 2>&1
	dk_root network rm "$SVC_NET" >/dev/null 2>&1
	ip -n "$INET" route del "$SVC_SUBNET" via 198.18.0.2 2>/dev/null
}

# ======================================================================
# host: --network host is the host's network namespace (the daemon's):
# the container is under the job's cgroup, confined as the job is. (After
# a reload: what --docker adds to the target's options is the same, so the
# target is kept, its socket too.)
# ======================================================================
test_host() {
	local t=host
	daemon_up || return 0
	"$EGRESSCTL" reload --control "$W/d.ctl" >"$W/$t.reload" 2>&1
	a_val "$t.reloaded" "egressctl reload's status" "$?" 0
	dk_job run --rm --network host "$IMAGE" sh -c "$(http a.example.test $t.allowed) $(http "$A_HOST" $t.denied)" \
		>"$W/$t.out" 2>&1
	a_grep "$t.allowed" "$W/$t.out" '^R: HTTP/1\.[01] 200'
	a_grep "$t.denied.403" "$W/$t.out" '^R: HTTP/1\.[01] 403'
	sensor_none "$t.sensor" "dst host $A_HOST"
}

# ======================================================================
# build: `docker build` (the classic builder): its RUN steps run under the
# job's cgroup, confined as its containers are.
# ======================================================================
test_build() {
	local t=build
	daemon_up || return 0
	cat >"$DK/ctx/Dockerfile" <<EOF
FROM $IMAGE
RUN tail -1 /proc/self/cgroup; $(http a.example.test $t.allowed) $(http "$A_BUILD" $t.denied) wget -q -O /dev/null http://$A_BUILD/$t.wget; echo "wget: \$?"
EOF
	dk_job build --no-cache -t "egr-e2e-$$-built" "$DK/ctx" >"$W/$t.out" 2>&1
	a_grep "$t.under_the_job" "$W/$t.out" "^0::/egressctl/$(re "$(cg_name job)")/[0-9a-f]{64}$"
	a_grep "$t.allowed" "$W/$t.out" '^R: HTTP/1\.[01] 200'
	# (docker build's output may put a colour's escape before a line)
	a_grep "$t.denied.403" "$W/$t.out" 'R: HTTP/1\.[01] 403'
	a_grep "$t.wget.refused" "$W/$t.out" 'wget: server returned error: HTTP/1\.[01] 403'
	a_grep "$t.built" "$W/$t.out" "Successfully built"
	a_nogrep "$t.server_saw_nothing" "$WEBLOG" "target=/$t\\.(denied|wget) "
	sensor_none "$t.sensor" "dst host $A_BUILD"
}

# ======================================================================
# dns127: a job's container on a network of its own (as compose makes
# them) asks docker's embedded DNS (127.0.0.11), which sends what it does
# not know upstream from dockerd (the control shows it): the query goes to
# egressctl's responder like every query to port 53, the name is refused
# and never reaches the upstream server.
# ======================================================================
test_dns127() {
	local t=dns127
	daemon_up || return 0
	dk_job run --rm --network "$NET2" "$IMAGE" nslookup "leak-$$.data.test" 127.0.0.11 \
		>"$W/$t.out" 2>&1
	a_grep "$t.refused" "$W/$t.out" "REFUSED"
	a_never_asked "$t.never_upstream" "leak-$$\\.data\\.test"
}

# ======================================================================
# service: a long-running service container on a network of its own (as
# compose makes them), started detached: each of its attempts is refused
# while it runs, an exec in it is confined too, and `docker logs`, `stop`
# work through egressctl's socket.
# ======================================================================
test_service() {
	local t=service svc=egr-e2e-$$-svc
	daemon_up || return 0
	dk_job run -d --name "$svc" --network "$NET2" "$IMAGE" sh -c \
		"i=0; while :; do i=\$((i + 1)); $(http "$A_SVC" "$t.loop") sleep 1; done" >"$W/$t.run" 2>&1
	for _ in $(seq 60); do
		dk_job logs "$svc" >"$W/$t.logs" 2>&1
		[ "$(grep -c '^R: ' "$W/$t.logs")" -ge 3 ] && break
		sleep 0.5
	done
	a_val "$t.ran" "result lines in its logs" "$(grep -c '^R: ' "$W/$t.logs")" '[3-9]|[1-9][0-9]+'
	a_nogrep "$t.never_reached" "$W/$t.logs" '^R: HTTP/1\.[01] 200'
	a_grep "$t.refused" "$W/$t.logs" '^R: HTTP/1\.[01] 403'
	dk_job exec "$svc" sh -c "$(http a.example.test $t.exec)" >"$W/$t.exec" 2>&1
	a_first "$t.exec.allowed" "$W/$t.exec" '^HTTP/1\.[01] 200'
	dk_job stop -t 1 "$svc" >"$W/$t.stop" 2>&1
	a_grep "$t.stopped" "$W/$t.stop" "^$(re "$svc")$"
	dk_job rm "$svc" >/dev/null 2>&1
	a_nogrep "$t.server_saw_nothing" "$WEBLOG" "target=/$t\\.loop "
	sensor_none "$t.sensor" "dst host $A_SVC"
}

# ======================================================================
# compose: `docker-compose up --abort-on-container-exit` (Debian's v1,
# 1.29) run by the job: compose makes the project's network (a subnet of
# its own) and the service's container through egressctl's socket; the
# container is under the job's cgroup, on that network; the allowed name
# answers (asked of docker's embedded DNS, answered by egressctl's
# responder), the denied address gets 403, a denied name REFUSED and is
# never asked upstream; nothing reaches the sensor; `docker-compose down`
# removes the container and the network. The control ran the same project
# without egressctl: its container was dockerd's and reached its address.
# (No traffic between services: docs/ci.md says why it gets no answer.)
# ======================================================================

# ycmd CMD: CMD as a compose file's JSON string (YAML takes JSON), every
# $ doubled (compose's interpolation)
ycmd() { "$PY" -c 'import json, sys; print(json.dumps(sys.argv[1]))' "${1//\$/\$\$}"; }

# compose_file DENIED TAG: the project's file, its service trying
# a.example.test, DENIED (an address) and a denied name; its command a
# JSON string (YAML takes JSON), every $ doubled (compose's interpolation)
compose_file() {
	local cmd
	cmd="tail -1 /proc/self/cgroup; $(http a.example.test "$2.allowed") $(http "$1" "$2.denied") \
nslookup denied-$2.test 2>&1 | tail -2"
	mkdir -p "$CMP" && chown "$JOBU:$JOBU" "$CMP" || return 1
	cat >"$CMP/docker-compose.yml" <<EOF
services:
  svc:
    image: $IMAGE
    command: ["sh", "-c", $(ycmd "$cmd")]
networks:
  default:
    ipam:
      config:
        - subnet: $CMP_SUBNET
EOF
}

# have_dc TAG: Debian's docker-compose is there (make check installs it
# with docker.io: its absence is a failure, as docker.io's is)
have_dc() {
	[ -x "$DC" ] && return 0
	fail "$1.docker_compose" "no $DC (tools/install-deps.sh --containers)"
	return 1
}

# dc_job ARGS...: the job's docker-compose on the project's file: the job
# user, in the job's cgroup (as dk_job)
dc_job() {
	timeout -k 5 180 nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' \
		"$(cg_path job)" setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups \
		env -i PATH=/usr/bin:/bin HOME="$DK/home" DOCKER_HOST="unix://$SOCK" \
		"$DC" --ansi never -p "$CMP_PROJECT" -f "$CMP/docker-compose.yml" "$@"
}

# compose_up TAG DENIED: the project up (its file for TAG, DENIED), until
# its service exits: TAG.out what compose said, TAG.lines the service's
# lines without compose's "NAME | ", TAG.cid its container's id (the
# container is kept, stopped, until compose_down)
compose_up() {
	compose_file "$2" "$1" || { fail "$1.file" "cannot write $CMP/docker-compose.yml"; return 1; }
	dc_job up --no-color --abort-on-container-exit >"$W/$1.out" 2>&1
	sed -nE 's/^[^ |]+ *\| ?//p' "$W/$1.out" >"$W/$1.lines"
	dk_root inspect -f '{{.Id}}' "${CMP_PROJECT}_svc_1" >"$W/$1.cid" 2>&1
	a_grep "$1.ran" "$W/$1.lines" '^R: '
}

# compose_down TAG: `docker-compose down`, then neither the container
# nor the network is left
compose_down() {
	dc_job down >"$W/$1.down" 2>&1
	dk_root ps -aq --filter "label=com.docker.compose.project=$CMP_PROJECT" >"$W/$1.left" 2>&1
	dk_root network ls -q --filter "name=${CMP_PROJECT}_default" >>"$W/$1.left" 2>&1
	a_val "$1.down" "containers and networks left ($(tail -c 300 "$W/$1.down" | tr '\n' '|'))" \
		"$(wc -l <"$W/$1.left")" 0
	# (the test's own leftovers, if compose could not)
	dk_root rm -f "${CMP_PROJECT}_svc_1" >/dev/null 2>&1
	dk_root network rm "${CMP_PROJECT}_default" >/dev/null 2>&1
}

test_compose() {
	local t=compose cid
	have_dc "$t" && daemon_up || return 0
	compose_up "$t" "$A_CMP"
	cid=$(grep -E '^[0-9a-f]{64}$' "$W/$t.cid")
	a_grep "$t.under_the_job" "$W/$t.lines" "^0::/egressctl/$(re "$(cg_name job)")/${cid:-none}$"
	# (stopped, it has no address left: the network's subnet is compose's)
	{
		dk_root inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "${cid:-none}"
		dk_root network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' "${CMP_PROJECT}_default"
	} >"$W/$t.net" 2>&1
	a_val "$t.on_its_network" "its networks and that one's subnet" "$(tr '\n' ' ' <"$W/$t.net")" \
		"$(re "${CMP_PROJECT}_default  $CMP_SUBNET ")"
	a_first "$t.allowed" "$W/$t.lines" '^HTTP/1\.[01] 200'
	a_grep "$t.allowed.server_saw" "$WEBLOG" "target=/$t\\.allowed "
	a_grep "$t.denied.403" "$W/$t.lines" '^R: HTTP/1\.[01] 403'
	a_nogrep "$t.denied.server_saw_nothing" "$WEBLOG" "target=/$t\\.denied "
	a_grep "$t.dns.refused" "$W/$t.lines" "REFUSED"
	a_never_asked "$t.dns.never_upstream" "denied-$t\\.test"
	a_jlog "$t.logged" "$W/d.jlog" decision=allow host=a.example.test container="${cid:-none}"
	a_jlog "$t.denied_logged" "$W/d.jlog" decision=deny ip="$(re "$A_CMP")" container="${cid:-none}"
	sensor_none "$t.sensor" "dst host $A_CMP"
	compose_down "$t"
}

# ======================================================================
# peers: a compose project of two services, web (a server) and client:
# the client reaches web by its service name, as docker's embedded DNS
# has it, and straight (the same network: no proxy between them), and
# the name under its search domain (dns_search) is NXDOMAIN, not REFUSED
# (musl's resolver would give up at a refusal); the allowed name answers,
# the denied address gets 403, nothing reaches the sensor; web's port,
# published on the project's network (made after the daemon's start), is
# the job's on 127.0.0.1 through dockerd's userland proxy, and the job's
# shell reaches web at its address there. Where this host routes a job's
# container's address out (a host route more specific than docker's),
# neither the job's shell nor dockerd's userland proxy goes there: nothing
# at the sensor, said in the log. Before, the
# client's name lookup was refused (docker's DNS is not asked), a
# connection to web went through egressctl's proxy, which refused its
# address, and so did dockerd's userland proxy's.
# Then the ways out: a job's container on two networks reaches its peer
# on one of them straight; disconnected from it, its packets to that
# address would be routed by this host (a route of the host's, more
# specific than docker's, leads to the test internet: root's container
# reaches the sensor that way, the control), so the peer is taken back
# before dockerd disconnects it: refused, nothing at the sensor. And a
# network whose bridge the job names (com.docker.network.bridge.name,
# which may be a bridge of the host's) gets no peers: its containers reach
# each other only through the proxy (refused here), while root's do.
# ======================================================================

# peer_file DIR: the project's file
peer_file() {
	local web cl
	web='while :; do printf "HTTP/1.0 200 OK\r\n\r\nserved-web\n" | nc -l -p 80; done'
	cl="sleep 2; $(http web peers.byname) nslookup web. 2>&1 | sed 's/^/N: /'; \
nslookup web.corp.test. 2>&1 | sed 's/^/S: /'; $(http a.example.test peers.allowed) $(http "$A_PEER" peers.denied)"
	mkdir -p "$1" && chown "$JOBU:$JOBU" "$1" || return 1
	cat >"$1/docker-compose.yml" <<EOF
services:
  web:
    image: $IMAGE
    command: ["sh", "-c", $(ycmd "$web")]
    stop_grace_period: 1s
    ports: ["18090:80"]
  client:
    image: $IMAGE
    depends_on: [web]
    dns_search: [corp.test]
    command: ["sh", "-c", $(ycmd "$cl")]
networks:
  default:
    ipam:
      config:
        - subnet: $PEER_SUBNET
EOF
}

# peer_dc ARGS...: dc_job on the peers project
peer_dc() { CMP_PROJECT=$PEER_PROJECT CMP=$DK/peers dc_job "$@"; }


test_peers() {
	local t=peers x=egr-e2e-$$-px y=egr-e2e-$$-py body
	have_dc "$t" && daemon_up || return 0
	peer_file "$DK/peers" || { fail "$t.file" "cannot write the project's file"; return 0; }
	# the project up, detached; what client said once it is done
	peer_dc up -d >"$W/$t.out" 2>&1
	dk_job wait "${PEER_PROJECT}_client_1" >>"$W/$t.out" 2>&1
	peer_dc logs --no-color client 2>&1 | sed -nE 's/^[^ |]*client[^ |]* *\| ?//p' >"$W/$t.lines"
	a_first "$t.by_name" "$W/$t.lines" '^HTTP/1\.[01] 200'
	a_grep "$t.name_answered" "$W/$t.lines" "^N: Address:[[:space:]]+$(re "${PEER_SUBNET%.0/24}")\\.[0-9]+$"
	a_grep "$t.search_nxdomain" "$W/$t.lines" "^S: .*web\\.corp\\.test\\.?: NXDOMAIN"
	a_jlog "$t.name_logged" "$W/d.jlog" decision=allow host=web \
		reason="a container of the job's on a docker network the asker is on"
	a_jlog "$t.direct_logged" "$W/d.jlog" decision=allow ip="$(re "${PEER_SUBNET%.0/24}")\\.[0-9]+" \
		port=80 reason="a container of the job's on a docker network both are on"
	a_grep "$t.allowed" "$WEBLOG" "target=/peers\\.allowed "
	a_grep "$t.denied.403" "$W/$t.lines" '^R: HTTP/1\.[01] 403'
	a_nogrep "$t.denied.server_saw_nothing" "$WEBLOG" "target=/peers\\.denied "
	sensor_none "$t.sensor" "dst host $A_PEER"
	# web's port published on the project's network, made after the
	# daemon's start: the job reaches it through dockerd's userland proxy
	job_curl "http://127.0.0.1:18090/" >"$W/$t.published" 2>&1
	a_grep "$t.published.answered" "$W/$t.published" '^served-web$'
	# and the job's shell reaches web at its address on that network
	job_curl "http://$(dk_root inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "${PEER_PROJECT}_web_1")/" \
		>"$W/$t.shell" 2>&1
	a_grep "$t.shell.answered" "$W/$t.shell" '^served-web$'
	peer_dc down >"$W/$t.down" 2>&1
	# disconnected from the network it shares with its peer
	body='while :; do printf "HTTP/1.0 200 OK\r\n\r\nserved-%s\n" "$0" | nc -l -p 80; done'
	dk_job network create --subnet "$PEER_NET_SUBNET" "$PEER_NET" >"$W/$t.net" 2>&1
	dk_job run -d --rm --name "$y" --network "$PEER_NET" --ip "$IP_PEER_Y" -p 18091:80 "$IMAGE" \
		sh -c "$body" y >>"$W/$t.net" 2>&1
	dk_job run -d --rm --name "$x" --network "$PEER_NET" "$IMAGE" sleep 600 >>"$W/$t.net" 2>&1
	dk_job network connect "$NET2" "$x" >>"$W/$t.net" 2>&1
	# y's address is routed to its bridge: the job's shell and its
	# published port reach it straight; then a route of the host's, more
	# specific than docker's, leads it out (below: neither reaches it, the
	# keys checked again when the route came)
	wait_for 10 eval 'job_curl "http://$IP_PEER_Y/" 2>&1 | grep -q served-y'
	job_curl "http://$IP_PEER_Y/" >"$W/$t.unrouted_shell" 2>&1
	a_grep "$t.before_route.shell" "$W/$t.unrouted_shell" '^served-y$'
	job_curl "http://127.0.0.1:18091/" >"$W/$t.unrouted_pub" 2>&1
	a_grep "$t.before_route.published" "$W/$t.unrouted_pub" '^served-y$'
	nsenter --net="$NS_SBX" ip route add "$PEER_ROUTED" via 198.18.0.1 || fail "$t.route" "cannot route $PEER_ROUTED"
	# at once (no network change of the job's between, which would have
	# the keys written anew anyway): neither goes straight out by the
	# route (the sensor, port 80, below; the binary before: it did)
	sleep 0.3
	job_curl "http://$IP_PEER_Y/" >"$W/$t.route_shell" 2>&1
	a_nogrep "$t.route_added.shell" "$W/$t.route_shell" 'served-y'
	job_curl "http://127.0.0.1:18091/" >"$W/$t.route_pub" 2>&1
	a_nogrep "$t.route_added.published" "$W/$t.route_pub" 'served-y'
	dk_root run --rm --network "$NET2" "$IMAGE" nc -w 3 "$IP_PEER_Y" 81 </dev/null >"$W/$t.ctl_route" 2>&1
	sensor_saw "$t.control.routed_out" "dst host $IP_PEER_Y and dst port 81"
	dk_job exec "$x" sh -c "$(http "$IP_PEER_Y" peers.x)" >"$W/$t.x" 2>&1
	a_first "$t.two_networks.reached" "$W/$t.x" '^HTTP/1\.[01] 200'
	dk_job network disconnect "$PEER_NET" "$x" >>"$W/$t.net" 2>&1
	dk_job exec "$x" sh -c "$(http "$IP_PEER_Y" peers.gone) nc -w 3 $IP_PEER_Y 82 </dev/null; echo nc=\$?" \
		>"$W/$t.gone" 2>&1
	a_nogrep "$t.disconnected.not_reached" "$W/$t.gone" 'served-y'
	sensor_none "$t.disconnected.sensor" "dst host $IP_PEER_Y and dst port 82"
	a_jlog "$t.disconnected.logged" "$W/d.jlog" decision=deny ip="$(re "$IP_PEER_Y")"
	# y publishes a port: dockerd's userland proxy would follow the host's
	# route out (the control above), so it does not go straight there
	job_curl "http://127.0.0.1:18091/" >"$W/$t.routed_pub" 2>&1
	a_nogrep "$t.routed_published.not_reached" "$W/$t.routed_pub" 'served-y'
	job_curl "http://$IP_PEER_Y/" >"$W/$t.routed_shell" 2>&1
	a_nogrep "$t.routed_shell.not_reached" "$W/$t.routed_shell" 'served-y'
	sensor_none "$t.routed_published.sensor" "dst host $IP_PEER_Y and dst port 80"
	a_jlog "$t.routed.said" "$W/d.jlog" event=docker \
		"reason=container [0-9a-f]{12}: this host does not route its address on network [0-9a-f]{12} to that network's bridge.*"
	dk_root rm -f "$x" "$y" >/dev/null 2>&1
	dk_root network rm "$PEER_NET" >/dev/null 2>&1
	nsenter --net="$NS_SBX" ip route del "$PEER_ROUTED" 2>/dev/null
	# a bridge the job names: no peers there (root's containers reach
	# each other on it, the control; a job's server answers no container
	# of root's)
	dk_job network create -o "com.docker.network.bridge.name=$PEER_BR" --subnet "$PEER_BR_SUBNET" \
		"$PEER_BR_NET" >"$W/$t.br" 2>&1
	dk_job run -d --rm --name "$y" --network "$PEER_BR_NET" --ip "${PEER_BR_SUBNET%.0/24}.10" \
		"$IMAGE" sh -c "$body" ybr >>"$W/$t.br" 2>&1
	dk_root run -d --rm --name "$y-root" --network "$PEER_BR_NET" --ip "${PEER_BR_SUBNET%.0/24}.11" \
		"$IMAGE" sh -c "$body" ybr-root >>"$W/$t.br" 2>&1
	dk_root run --rm --network "$PEER_BR_NET" "$IMAGE" sh -c "$(http "${PEER_BR_SUBNET%.0/24}.11" peers.brctl)" \
		>"$W/$t.brctl" 2>&1
	a_first "$t.control.named_bridge" "$W/$t.brctl" '^HTTP/1\.[01] 200'
	dk_job run --rm --network "$PEER_BR_NET" "$IMAGE" sh -c "$(http "${PEER_BR_SUBNET%.0/24}.10" peers.br)" \
		>"$W/$t.brjob" 2>&1
	a_first "$t.named_bridge.refused" "$W/$t.brjob" '^HTTP/1\.[01] 403'
	dk_root rm -f "$y" "$y-root" >/dev/null 2>&1
	dk_root network rm "$PEER_BR_NET" >/dev/null 2>&1
}

# ======================================================================
# flags: each flag the control ran is refused, with a message naming it;
# no container of them ran (its address saw nothing since the control).
# ======================================================================
test_flags() {
	local t=flags i f a want base
	daemon_up || return 0
	for i in "${!FLAGS[@]}"; do
		f=${FLAGS[$i]}
		a=203.0.113.$((100 + i))
		want=${f%% *}
		case $f in
		--cap-add*) want="--cap-add ${f#* }" ;;
		--pid*) want="--pid host" ;;
		-v*) want="-v ${f#* }" ;;
		--userns*) want="--userns host" ;;
		--security-opt*) want="--security-opt ${f#* }" ;;
		--mount*) want="--mount type=bind,source=$CG2" ;;
		esac
		base=$(sensor_now "dst host $a")
		# shellcheck disable=SC2086 # the flag's words
		dk_job run --rm $f "$IMAGE" sh -c "${ESCAPE[$i]}$(http "$a" "$t.$i")" >"$W/$t.$i.out" 2>&1
		a_grep "$t.$i.refused" "$W/$t.$i.out" "^docker: Error response from daemon: egressctl: $(re "$want")[ ,].*refused in a confined job"
		a_nogrep "$t.$i.never_ran" "$W/$t.$i.out" '^R: '
		sensor_none_since "$t.$i.sensor" "$base" "dst host $a"
	done
	a_jlog "$t.logged" "$W/d.jlog" event=docker reason="refused POST /v[0-9.]+/containers/create from docker\\[[0-9]+\\]: egressctl: --privileged is refused in a confined job"
}

# ======================================================================
# socket: the job's container given the socket's name (as GitHub's
# container actions are: -v /var/run/docker.sock:/var/run/docker.sock)
# gets egressctl's socket, and its docker is the job's: its containers
# under the job's cgroup, its --privileged refused. (The client and its
# libc are bound read-only from the host: what may be, read-only. Inside,
# the socket keeps its name: the connect_unix hook allows that one, as it
# allows /run/docker.sock and /var/run/docker.sock for --docker
# /run/docker.sock.)
# ======================================================================
test_socket() {
	local t=socket lib
	daemon_up || return 0
	lib=$(dirname "$(realpath /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || echo /lib/x86_64-linux-gnu/x)")
	dk_job run --rm -v "$SOCK:$SOCK" -v "$DOCKER:/d:ro" -v "$lib:/lib/x86_64-linux-gnu:ro" \
		-v /lib64:/lib64:ro -e DOCKER_HOST="unix://$SOCK" "$IMAGE" sh -c \
		"/d run --rm --privileged $IMAGE true; /d run --rm $IMAGE tail -1 /proc/self/cgroup" \
		>"$W/$t.out" 2>&1
	a_grep "$t.inner_refused" "$W/$t.out" "egressctl: --privileged is refused in a confined job"
	a_grep "$t.inner_under_the_job" "$W/$t.out" "^0::/egressctl/$(re "$(cg_name job)")/[0-9a-f]{64}$"
}

# ======================================================================
# registry: what dockerd would reach for the job is judged by its policy:
# a pull, a push, a login to a registry it denies are refused, named, and
# dockerd never tries (the control showed it would); an allowed registry's
# pull goes to dockerd (its error is dockerd's: no registry answers here).
# ======================================================================
test_registry() {
	local t=registry
	daemon_up || return 0
	dk_job pull "$A_REG_PULL/egr/x" >"$W/$t.pull" 2>&1
	a_grep "$t.pull.refused" "$W/$t.pull" "egressctl: docker pull from $(re "$A_REG_PULL") is refused in a confined job: its policy denies $(re "$A_REG_PULL"):443 \(no rule allows it\)"
	dk_job tag "$IMAGE" "$A_REG_PUSH/egr/x" >"$W/$t.tag" 2>&1
	dk_job push "$A_REG_PUSH/egr/x" >"$W/$t.push" 2>&1
	a_grep "$t.push.refused" "$W/$t.push" "egressctl: docker push to $(re "$A_REG_PUSH") is refused"
	dk_job login -u u -p p "$A_REG_LOGIN" >"$W/$t.login" 2>&1
	a_grep "$t.login.refused" "$W/$t.login" "egressctl: docker login to $(re "$A_REG_LOGIN") is refused"
	dk_job pull a.example.test/egr/x >"$W/$t.allowed" 2>&1
	a_nogrep "$t.allowed.passed" "$W/$t.allowed" "egressctl:"
	a_grep "$t.allowed.dockerds_error" "$W/$t.allowed" "Error response from daemon"
	sensor_none "$t.sensor" "dst host $A_REG_PULL or dst host $A_REG_PUSH or dst host $A_REG_LOGIN"
}

# ======================================================================
# foreign: a container root made (on dockerd's own socket) is no job's:
# the job may not start it, exec in it or attach to it.
# ======================================================================
test_foreign() {
	local t=foreign made=egr-e2e-$$-made run=egr-e2e-$$-running
	daemon_up || return 0
	dk_root create --name "$made" "$IMAGE" sh -c "$(http "$A_FOREIGN" $t.start)" >"$W/$t.create" 2>&1
	dk_root run -d --name "$run" "$IMAGE" sleep 300 >"$W/$t.create2" 2>&1
	dk_job start -a "$made" >"$W/$t.start" 2>&1
	a_grep "$t.start_refused" "$W/$t.start" "egressctl: container ($(re "$made")|$(dk_root inspect -f '{{.Id}}' "$made")) is not one of this job's"
	dk_job exec "$run" sh -c "$(http "$A_FOREIGN" $t.exec)" >"$W/$t.exec" 2>&1
	a_grep "$t.exec_refused" "$W/$t.exec" "egressctl: container ($(re "$run")|$(dk_root inspect -f '{{.Id}}' "$run")) is not one of this job's"
	a_nogrep "$t.server_saw_nothing" "$WEBLOG" "target=/$t\\.(start|exec) "
	sensor_none "$t.sensor" "dst host $A_FOREIGN"
	dk_root rm -f "$made" "$run" >/dev/null 2>&1
}

# ======================================================================
# outsider: root's containers, through the same socket (egressctl's, not
# the job's process) and on dockerd's own, are untouched: not under the
# job's cgroup, and they reach what the job may not.
# ======================================================================
test_outsider() {
	local t=outsider
	daemon_up || return 0
	dk_outsider run --rm "$IMAGE" sh -c "tail -1 /proc/self/cgroup; $(http "$A_OUT" $t)" >"$W/$t.out" 2>&1
	a_grep "$t.not_under_the_job" "$W/$t.out" "^0::$(re "$DPARENT")/[0-9a-f]{64}$"
	a_first "$t.reached" "$W/$t.out" '^HTTP/1\.[01] 200'
	sensor_saw "$t.sensor" "dst host $A_OUT and tcp dst port 80"
	dk_root run --rm "$IMAGE" sh -c "$(http "$A_DIRECT" $t.direct)" >"$W/$t.direct" 2>&1
	a_first "$t.direct.reached" "$W/$t.direct" '^HTTP/1\.[01] 200'
	sensor_saw "$t.direct.sensor" "dst host $A_DIRECT and tcp dst port 80"
}

# ======================================================================
# names: the mount covers every name of the socket: the job's docker
# through a symbolic link of its own is judged the same.
# ======================================================================
test_names() {
	local t=names
	daemon_up || return 0
	ln -sf "$SOCK" "$DK/home/link.sock"
	JOB_HOST=unix://$DK/home/link.sock dk_job run --rm --privileged "$IMAGE" true >"$W/$t.out" 2>&1
	a_grep "$t.judged" "$W/$t.out" "egressctl: --privileged is refused in a confined job"
}

# ======================================================================
# buildkit: BuildKit's build steps run in dockerd's cgroup: refused, said.
# ======================================================================
test_buildkit() {
	local t=buildkit
	daemon_up || return 0
	printf 'FROM %s\nRUN true\n' "$IMAGE" >"$DK/ctx/Dockerfile"
	DOCKER_BUILDKIT=1 dk_job build "$DK/ctx" >"$W/$t.out" 2>&1
	a_grep "$t.refused" "$W/$t.out" "egressctl: BuildKit builds are refused in a confined job"
}

# ======================================================================
# mntns: a daemon in a mount namespace of its own (as a unit with
# PrivateTmp= runs) would mount over a name its targets do not see, and
# they would reach dockerd's own socket: it refuses to start, said why,
# and covers nothing (run before any daemon of the suite's).
# ======================================================================
test_mntns() {
	local t=mntns
	have_egr || return 0
	[ -n "$D_PID" ] && return 0
	timeout -k 5 30 nsenter --net="$NS_SBX" unshare --mount --propagation private "$EGRESSCTL" \
		daemon --control "$W/m.ctl" --cgroup "$(cg_path job)" --docker "$SOCK" \
		--log "$W/m.jlog" >"$W/$t.dout" 2>&1 </dev/null
	a_val "$t.exit" "the daemon's status" "$?" 125
	a_grep "$t.said" "$W/$t.dout" "--docker: process [0-9]+ of target .* is in another mount namespace than the daemon"
	expect "$t.not_covered" "$SOCK is covered" sh -c "! awk -v p='$SOCK' '\$5 == p { f = 1 } END { exit !f }' /proc/self/mountinfo"
}

# ======================================================================
# stop: a daemon killed leaves egressctl's socket over dockerd's: the
# job's docker is refused meanwhile (fail closed, nothing leaves); the
# next daemon finds dockerd's socket below and takes it again; after a
# detach and a stop the socket is dockerd's again.
# ======================================================================
# idmaps PID: how many idmapped binds daemon PID has mounted
idmaps() { grep -c "/egressctl-idmap-$1/" /proc/self/mountinfo; }

test_stop() {
	local t=stop d=/tmp/egr-e2e-$$-stop old
	daemon_up || return 0
	# a root container's read-write bind: idmapped, until the daemon goes
	mkdir -p "$d" && chown "$JOBU:$JOBU" "$d"
	dk_job run --rm -v "$d:/x" "$IMAGE" true >"$W/$t.idm" 2>&1
	old=$D_PID
	expect "$t.idmap.made" "no idmapped bind of daemon $old: $(tr '\n' '|' <"$W/$t.idm")" \
		test "$(idmaps "$old")" -ge 1
	kill -KILL "$D_PID"
	wait "$D_PID" 2>/dev/null
	D_PID=
	expect "$t.still_covered" "the killed daemon's mount is gone" covered
	dk_job run --rm "$IMAGE" sh -c "$(http "$A_GAP" $t.gap)" >"$W/$t.gap" 2>&1
	a_grep "$t.gap.refused" "$W/$t.gap" "Cannot connect to the Docker daemon|connection refused"
	sensor_none "$t.gap.sensor" "dst host $A_GAP"
	dstart "$t" || return 0
	a_grep "$t.found_below" "$W/$t.dout" "covered by the socket of an egressctl that did not stop"
	a_eq "$t.idmap.killed_daemons_gone" "the killed daemon's idmapped binds" "$(idmaps "$old")" 0
	dk_job run --rm "$IMAGE" sh -c "$(http "$A_AFTER" $t.after)" >"$W/$t.after" 2>&1
	a_first "$t.after.403" "$W/$t.after" '^HTTP/1\.[01] 403'
	dk_job run --rm -v "$d:/x" "$IMAGE" true >"$W/$t.idm2" 2>&1
	expect "$t.idmap.made_again" "no idmapped bind of daemon $D_PID: $(tr '\n' '|' <"$W/$t.idm2")" \
		test "$(idmaps "$D_PID")" -ge 1
	"$EGRESSCTL" detach --control "$W/d.ctl" --cgroup "$(cg_path job)" >"$W/$t.detach" 2>&1
	a_eq "$t.idmap.job_gone" "the detached job's idmapped binds" "$(idmaps "$D_PID")" 0
	dstop
	expect "$t.uncovered" "$SOCK is still covered: $(grep -F "$SOCK" /proc/self/mountinfo | tr '\n' '|')" \
		sh -c "! awk -v p='$SOCK' '\$5 == p { f = 1 } END { exit !f }' /proc/self/mountinfo"
	dk_job run --rm "$IMAGE" sh -c "tail -1 /proc/self/cgroup" >"$W/$t.back" 2>&1
	a_grep "$t.dockerd_again" "$W/$t.back" "^0::$(re "$DPARENT")/[0-9a-f]{64}$"
	sensor_none "$t.sensor" "dst host $A_AFTER"
}

# ======================================================================
# podman: podman's API service (rootful, `podman system service`) kept
# the same way, for a job of its own: without egressctl the job's
# container reaches a denied address; with it the container is under the
# job's cgroup (podman's libpod-ID), the allowed name answers, the denied
# address gets 403, --privileged is refused; nothing reaches the sensor.
# A second daemon for that job, which takes dockerd's socket and then
# fails (the cgroup is the first's), gives the socket back.
# ======================================================================
pm() {
	CONTAINERS_CONF="$PM/containers.conf" timeout -k 5 120 nsenter --net="$NS_SBX" \
		podman --root "$PM/root" --runroot "$PM/run" --storage-driver vfs "$@"
}

podman_setup() {
	mkdir -p "$PM/networks" "$PM/tmp" || return 1
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
default_subnet = "198.19.8.0/24"
EOF
	tar -C "$DK/rootfs" -c . | pm import - "$PIMAGE" >"$PM/import.out" 2>&1 ||
		{ fail podman.setup "podman import: $(tail -3 "$PM/import.out")"; return 1; }
	# (in a cgroup of its own, as podman.service's: egressctl confines the
	# service's own connections there, as dockerd's)
	mkdir -p "$CGROOT/egr-e2e-$$-podman" || return 1
	CONTAINERS_CONF="$PM/containers.conf" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' \
		"$CGROOT/egr-e2e-$$-podman" nsenter --net="$NS_SBX" podman --root "$PM/root" \
		--runroot "$PM/run" --storage-driver vfs system service --time=0 "unix://$PSOCK" \
		>"$PM/service.log" 2>&1 &
	PIDS+=($!)
	wait_secs 20 sh -c "[ -S '$PSOCK' ] && '$DOCKER' -H 'unix://$PSOCK' version >/dev/null 2>&1" ||
		{ fail podman.setup "podman system service: $(tail -3 "$PM/service.log")"; return 1; }
	chgrp "$JOBU" "$PSOCK" && chmod 0660 "$PSOCK" || return 1
	mkdir -p "$(cg_path pjob)" || return 1
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(cg_path pjob)" \
		setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups sleep 3600 &
	PIDS+=($!)
	wait_for 5 cg_nprocs_ge "$(cg_path pjob)" 1
}

# pdk_job ARGS...: the podman job's docker, on podman's socket
pdk_job() {
	timeout -k 5 120 nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' \
		"$(cg_path pjob)" setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups \
		env -i PATH=/usr/bin:/bin HOME="$DK/home" DOCKER_HOST="unix://$PSOCK" "$DOCKER" "$@"
}

# pdk_curl ARGS...: the podman job's curl on podman's socket
pdk_curl() {
	timeout -k 5 60 nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' \
		"$(cg_path pjob)" setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups \
		curl -sS --unix-socket "$PSOCK" "$@"
}

test_podman() {
	local t=podman
	command -v podman >/dev/null || { note "$t: no podman (tools/install-deps.sh --containers)"; return 0; }
	podman_setup || return 0
	pdk_job run --rm --cgroup-parent "/egr-e2e-$$-pm" "$PIMAGE" sh -c \
		"tail -1 /proc/self/cgroup; $(http "$A_PCTL" $t.ctl)" >"$W/$t.ctl" 2>&1
	a_first "$t.control.reached" "$W/$t.ctl" '^HTTP/1\.[01] 200'
	sensor_saw "$t.control.sensor" "dst host $A_PCTL and tcp dst port 80"
	have_egr || return 0
	nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/p.ctl" --cgroup "$(cg_path pjob)" \
		--docker "$PSOCK" --allow a.example.test --dns-upstream "$INET_DNS" \
		--log "$W/p.jlog" >"$W/$t.dout" 2>&1 </dev/null &
	P_PID=$!
	PIDS+=("$P_PID")
	wait_secs 20 grep -qs "ready:" "$W/$t.dout" ||
		{ fail "$t.daemon_ready" "$(tail -c 600 "$W/$t.dout" | tr '\n' '|')"; return 0; }
	pdk_job run --rm "$PIMAGE" sh -c "tail -1 /proc/self/cgroup; \
$(http a.example.test $t.allowed) $(http "$A_PRUN" $t.denied)" >"$W/$t.out" 2>&1
	a_grep "$t.under_the_job" "$W/$t.out" "^0::/egressctl/$(re "$(cg_name pjob)")/libpod-[0-9a-f]{64}$"
	a_grep "$t.allowed" "$W/$t.out" '^R: HTTP/1\.[01] 200'
	a_grep "$t.denied.403" "$W/$t.out" '^R: HTTP/1\.[01] 403'
	pdk_job run --rm --privileged "$PIMAGE" true >"$W/$t.priv" 2>&1
	a_grep "$t.privileged_refused" "$W/$t.priv" "egressctl: --privileged is refused in a confined job"
	sensor_none "$t.sensor" "dst host $A_PRUN"
	# podman's own API (/libpod/..., what `podman --remote` speaks) beside
	# docker's: a container made there is not judged, so it is refused
	# (before: made in podman's cgroup with the host's network, started,
	# its request seen)
	printf '{"image": "%s", "netns": {"nsmode": "host"}, "command": ["sh", "-c", %s]}' "$PIMAGE" \
		"$(printf '%s' "$(http "$A_PLIB" $t.libpod)" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')" \
		>"$PM/libpod.json"
	pdk_curl -X POST -H 'Content-Type: application/json' --data-binary "@$PM/libpod.json" \
		"http://d/v4.0.0/libpod/containers/create" >"$W/$t.libpod" 2>&1
	a_grep "$t.libpod.refused" "$W/$t.libpod" "podman's own API .* is refused in a confined job"
	local lid
	lid=$(sed -n 's/.*"Id": *"\([0-9a-f]*\)".*/\1/p' "$W/$t.libpod")
	if [ -n "$lid" ]; then
		pdk_curl -X POST "http://d/v4.0.0/libpod/containers/$lid/start" >/dev/null 2>&1
		sleep 3
	fi
	sensor_none "$t.libpod.sensor" "dst host $A_PLIB"
	# a daemon whose start fails after it took a socket gives it back:
	# this one takes dockerd's, then finds the job's cgroup locked
	timeout -k 5 30 nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/b.ctl" \
		--cgroup "$(cg_path pjob)" --docker "$SOCK" --log "$W/b.jlog" >"$W/$t.b.dout" 2>&1 </dev/null
	a_val "$t.second.failed" "the second daemon's status" "$?" 125
	a_grep "$t.second.took_it" "$W/$t.b.dout" "$(re "$SOCK") is egressctl's now"
	expect "$t.second.gave_it_back" "$SOCK is still covered: $(tail -c 300 "$W/$t.b.dout" | tr '\n' '|')" \
		sh -c "! awk -v p='$SOCK' '\$5 == p { f = 1 } END { exit !f }' /proc/self/mountinfo"
	"$EGRESSCTL" detach --control "$W/p.ctl" --cgroup "$(cg_path pjob)" >/dev/null 2>&1
	kill -TERM "$P_PID" 2>/dev/null
	wait "$P_PID" 2>/dev/null
	P_PID=
}

# ======================================================================
# systemd: a dockerd with systemd's cgroup driver (GitHub's hosted
# runners' configuration) and its own systemd: PID 1 of a PID, mount and
# cgroup namespace on a cgroup of the suite's (SD_CG, cgroup2 mounted at
# /sys/fs/cgroup there), no unit but an empty target, no unit file of the
# host's; dockerd a transient service of it, in the sandbox network
# namespace on a bridge of its own. A container's parent must be a slice:
# the CI scripts (contrib/ci/lib) see systemd's driver and where that
# systemd's slices begin, and put the job's processes in the "job" of a
# slice's cgroup, SD_CG/egressctl.slice/egressctl-e2e_PID.slice, the job's
# cgroup. Without egressctl the job's container is systemd's scope in
# system.slice and reaches a denied address; with it the container and a
# classic build's RUN step are the slice's, where the job's programs run:
# the allowed name answers, the denied address gets 403, nothing reaches
# the sensor. dockerd is socket-activated, as on GitHub's hosted runners
# (systemd listens on the socket): the daemon finds dockerd's own process
# and confines its cgroup (its build's ADD of a denied address is never
# tried).
# ======================================================================
# (TERM first: bash says nothing of a background job that TERM ends)
sd_job_down() { [ -n "$SD_JOBPID" ] && kill -TERM "$SD_JOBPID" 2>/dev/null; }

# sd_root ARGS...: root's docker on the systemd dockerd's own socket
sd_root() { timeout -k 5 120 nsenter --net="$NS_SBX" "$DOCKER" -H "unix://$SDROOTSOCK" "$@"; }

sd_setup() {
	mkdir -p "$SD/root" && mkdir -m 0700 "$SD/own" || return 1
	cat >"$SD/dockerd.sh" <<EOF
#!/bin/sh
exec nsenter --net=$SD/net /usr/sbin/dockerd --config-file $DK/daemon.json \\
	--data-root $SD/root --exec-root $SD/exec --pidfile $SD/docker.pid -H fd:// \\
	-b egrsd0 --iptables=false --ip6tables=false --storage-driver vfs \\
	--userland-proxy=false --dns $INET_DNS --exec-opt native.cgroupdriver=systemd \\
	>$SD/dockerd.log 2>&1
EOF
	chmod +x "$SD/dockerd.sh" || return 1
	# (its MAC set: a bridge left to the kernel takes its lowest port's,
	# and changes as containers join, under the ARP entries of the others)
	ip -n "$SBX" link add egrsd0 address 02:00:c6:13:09:01 type bridge &&
		ip -n "$SBX" addr add "$SD_GW/24" dev egrsd0 &&
		ip -n "$SBX" link set egrsd0 up && ip -n "$INET" route add 198.19.9.0/24 via 198.18.0.2 ||
		return 1
	sd_boot || return 1
	# socket-activated, as docker.socket starts docker.service on hosted
	# runners: systemd made and listens on the socket, dockerd gets it
	sd_in systemd-run --quiet --unit=egr-e2e-dockerd -p DefaultDependencies=no -p Delegate=yes \
		--socket-property=ListenStream="$SDSOCK" --socket-property=SocketMode=0660 \
		--socket-property=SocketGroup="$JOBU" --socket-property=DefaultDependencies=no \
		--socket-property=NetworkNamespacePath="$SD/net" \
		"$SD/dockerd.sh" >"$SD/run.out" 2>&1 || { echo "systemd-run: $(tail -3 "$SD/run.out")"; return 1; }
	wait_secs 30 test -S "$SDSOCK" && ln "$SDSOCK" "$SDROOTSOCK" &&
		wait_secs 30 sd_root version >/dev/null 2>&1 && wait_secs 10 test -s "$SD/docker.pid" ||
		{ echo "dockerd (systemd): $(tail -5 "$SD/dockerd.log")"; return 1; }
	sd_root info 2>/dev/null | grep -q 'Cgroup Driver: systemd' || { echo "not systemd's driver"; return 1; }
	tar -C "$DK/rootfs" -c . | sd_root import - "$IMAGE" >"$SD/import.out" 2>&1 ||
		{ echo "docker import: $(tail -3 "$SD/import.out")"; return 1; }
	# the job, where the CI scripts find it, then placed by them
	mkdir -p "$(cg_path sdjob)" || return 1
	nsenter --net="$NS_SBX" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(cg_path sdjob)" \
		setpriv --reuid="$JOBU" --regid="$JOBU" --init-groups sleep 3600 &
	SD_JOBPID=$!
	PIDS+=("$SD_JOBPID")
	wait_for 5 cg_nprocs_ge "$(cg_path sdjob)" 1
}

test_systemd() {
	local t=systemd cid
	[ -x /lib/systemd/systemd ] && command -v systemd-run >/dev/null ||
		{ note "$t: no systemd here: skipped"; return 0; }
	sd_setup >"$W/$t.setup" 2>&1 || { fail "$t.setup" "$(tail -c 600 "$W/$t.setup" | tr '\n' '|')"; return 0; }
	# the CI scripts' placement: dockerd's driver is systemd's, so the job
	# goes into a slice's cgroup below where that systemd's slices begin
	nsenter --net="$NS_SBX" env PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c \
		'. "$0" && s=$(egr_ci_docker_slices "$1") && egr_ci_job_cgroup "$2" "$3" "$s"' \
		"$(dirname "$0")/../../contrib/ci/lib/egressctl-ci.sh" "$SDSOCK" "$SD_JOBPID" "e2e-$$" \
		>"$W/$t.cg" 2>"$W/$t.cg.err"
	a_val "$t.ci.slice" "the CI scripts' job cgroup ($(tr '\n' '|' <"$W/$t.cg.err"))" "$(cat "$W/$t.cg")" \
		"$(re "$SD_CG/egressctl.slice/egressctl-e2e_$$.slice")"
	SD_JOB=$SD_CG/egressctl.slice/egressctl-e2e_$$.slice
	a_val "$t.ci.moved" "the job's cgroup" "$(sed -n 's/^0:://p' "/proc/$SD_JOBPID/cgroup")" \
		"$(re "${SD_JOB#"$CG2"}/job")"
	export JOB_CG=$SD_JOB/job JOB_HOST=unix://$SDSOCK
	dk_job run --rm "$IMAGE" sh -c "$(http "$A_SDCTL" $t.ctl)" >"$W/$t.ctl" 2>&1
	a_first "$t.control.reached" "$W/$t.ctl" '^HTTP/1\.[01] 200'
	sensor_saw "$t.control.sensor" "dst host $A_SDCTL and tcp dst port 80"
	if have_egr; then
		nsenter --net="$NS_SBX" "$EGRESSCTL" daemon --control "$W/s.ctl" --cgroup "$SD_JOB" \
			--docker "$SDSOCK" --allow a.example.test --dns-upstream "$INET_DNS" \
			--log "$W/s.jlog" >"$W/$t.dout" 2>&1 </dev/null &
		S_PID=$!
		PIDS+=("$S_PID")
	fi
	if ! have_egr || ! wait_secs 20 grep -qs "ready:" "$W/$t.dout"; then
		have_egr && fail "$t.daemon_ready" "$(tail -c 600 "$W/$t.dout" | tr '\n' '|')"
		unset JOB_CG JOB_HOST
		return 0
	fi
	dk_job run --cidfile "$DK/home/$t.cid" "$IMAGE" sh -c \
		"$(http a.example.test $t.allowed) $(http "$A_SDRUN" $t.denied)" >"$W/$t.out" 2>&1
	cid=$(cat "$DK/home/$t.cid" 2>/dev/null)
	a_grep "$t.allowed" "$W/$t.out" '^R: HTTP/1\.[01] 200'
	a_grep "$t.denied.403" "$W/$t.out" '^R: HTTP/1\.[01] 403'
	sd_root inspect -f '{{.HostConfig.CgroupParent}}' "${cid:-none}" >"$W/$t.parent" 2>&1
	a_grep "$t.parent_is_the_slice" "$W/$t.parent" "^egressctl-e2e_$$\\.slice\$"
	a_jlog "$t.denied_logged" "$W/s.jlog" decision=deny ip="$(re "$A_SDRUN")" container="${cid:-none}"
	dk_job rm "${cid:-none}" >/dev/null 2>&1
	printf 'FROM %s\nRUN %s\n' "$IMAGE" "$(http "$A_SDBUILD" $t.build)" >"$DK/home/$t.Dockerfile"
	DOCKER_BUILDKIT=0 dk_job build --no-cache -f "$DK/home/$t.Dockerfile" "$DK/ctx" >"$W/$t.build" 2>&1
	a_grep "$t.build.denied.403" "$W/$t.build" 'R: HTTP/1\.[01] 403'
	a_grep "$t.activated.found" "$W/$t.dout" "docker: dockerd \\(pid [0-9]+, $(re "/egr-e2e-$$-sd/system.slice/egr-e2e-dockerd.service")\\)"
	printf 'FROM %s\nADD http://%s/%s.add /x\n' "$IMAGE" "$A_SDBUILD" "$t" >"$DK/home/$t.add.Dockerfile"
	DOCKER_BUILDKIT=0 dk_job build --no-cache -f "$DK/home/$t.add.Dockerfile" "$DK/ctx" >"$W/$t.add" 2>&1
	a_nogrep "$t.activated.add_not_built" "$W/$t.add" 'Successfully built'
	sensor_none "$t.sensor" "dst host $A_SDRUN or dst host $A_SDBUILD"
	# this dockerd has no userland proxy: a port the job's container
	# publishes is nobody's on 127.0.0.1 but a host service's there, which
	# the job must not get by publishing its number
	nsenter --net="$NS_SBX" python3 -m http.server 18085 --bind 127.0.0.1 --directory "$DK/ctx" \
		>"$W/$t.hostsvc" 2>&1 &
	local hs=$!
	PIDS+=("$hs")
	dk_job run -d --rm --name "egr-e2e-$$-sdpub" -p 18085:80 "$IMAGE" sleep 60 >"$W/$t.pub" 2>&1
	A_JLOG_WAIT=5 a_jlog "$t.unproxied.said" "$W/s.jlog" event=docker \
		"reason=container [0-9a-f]{12} publishes port 18085: no userland proxy of dockerd's serves it.*"
	JOB_CG=$SD_JOB/job job_curl http://127.0.0.1:18085/ >"$W/$t.hostsvc_job" 2>&1
	a_nogrep "$t.unproxied.host_service_not_reached" "$W/$t.hostsvc_job" 'Directory listing'
	a_nogrep "$t.unproxied.host_service_saw_nothing" "$W/$t.hostsvc" 'GET /'
	kill "$hs" 2>/dev/null
	sd_root rm -f "egr-e2e-$$-sdpub" >/dev/null 2>&1
	"$EGRESSCTL" detach --control "$W/s.ctl" --cgroup "$SD_JOB" >/dev/null 2>&1
	kill -TERM "$S_PID" 2>/dev/null
	wait "$S_PID" 2>/dev/null
	S_PID=
	unset JOB_CG JOB_HOST
}

suite_main docker.sh docker_setup "ip nsenter unshare setpriv tcpdump ss dnsmasq openssl useradd" "$@"
