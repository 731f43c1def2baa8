#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of `run --allow-sudo`: a real sudo (Debian's package)
# works inside a confined job, and the root it makes stays inside: every
# known way out (clients/rootprobe.py) is first shown to work as root
# without egressctl (the control half, in the test's own network and mount
# namespaces), then run as root inside the sandbox, through sudo and as
# --user root, and refused; the leak sensor sees nothing of it. Also CMD's
# PID namespace (--allow-sudo): its pid 1, signals, --timeout, exit statuses.
#
#   sudo tests/e2e/sudo.sh build/egressctl   (make e2e does this)
#
# sudo's configuration is a sudoers file of the suite's own, bind-mounted
# over /etc/sudoers in the suite's private mount namespace (unshare below):
# the host's file is never edited. Topology as run.sh (tests/e2e/lib.sh):
# CMD in netns egr-sbx-PID, the leak sensor on the veth to egr-inet-PID.

set -u
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"
. "$(dirname "$0")/pfs.sh"

ALL_TESTS="nosudo sudo caps escapes root_user pidns pseudofs"
U=65534
# every way out rootprobe.py tries; the control half leaves umount_covers
# out (it would unmount the suite's own cgroup2)
ESCAPES="mount_cgroup2 fsopen open_tree newmount_proc fspick open_tree_attr mount_setattr move_mount
proc_outside_root_cgroup bpf unshare_net unshare_user nsenter setns insmod delete_module kexec nft
ip_link raw packet kill_egressctl egressctl_mem ptrace pidfd_getfd open_by_handle"
RAW_DST=198.51.100.77	# the raw socket's ICMP echo: the sensor must never see it from CMD
RAW_CTL=198.51.100.78	# ... and sees it from the control half

sudo_setup() {
	e2e_base_setup || return 1
	if ! e2e_private_mntns; then
		echo "not in a private mount namespace: /etc/sudoers left alone"
		return 1
	fi
	printf 'Defaults !use_pty, !lecture, env_reset\nroot ALL=(ALL:ALL) ALL\nnobody ALL=(ALL:ALL) NOPASSWD: ALL\n' \
		>"$W/sudoers"
	chown root:root "$W/sudoers" && chmod 0440 "$W/sudoers"
	mount --bind "$W/sudoers" /etc/sudoers || { echo "cannot bind-mount sudoers"; return 1; }
	sensor_start || return 1
	# a root process outside the sandbox whose /proc entries the probe tries
	sleep 600 &
	OUTSIDE=$!
	PIDS+=("$OUTSIDE")
	return 0
}


# a_escape TAG NAME: the attempt NAME was refused in TAG's run
a_escape() {
	local r=${R[$2]:-missing}
	case $r in
	false*) ok "$1.$2.refused" ;;
	missing) fail "$1.$2.refused" "no result (probe output: $(tail -c 300 "$W/$1.out" | tr '\n' '|') stderr: $(tail -c 300 "$W/$1.err" | tr '\n' '|'))" ;;
	*) fail "$1.$2.refused" "ESCAPE: it worked inside the sandbox: $r" ;;
	esac
}

only() { local IFS=,; echo "$*"; }

# 1. without --allow-sudo: no_new_privs, sudo says so (the problem solved)
test_nosudo() {
	egr nosudo --user $U -- sudo -n id -u
	a_rc nosudo.fails 1 nosudo
	a_grep nosudo.says "$W/nosudo.err" "no new privileges"
}

# 2. with it: sudo itself works, and what it runs is root
test_sudo() {
	egr sudo --user $U --allow-sudo -- sudo -n id -u
	a_rc sudo.works 0 sudo
	a_grep sudo.id_0 "$W/sudo.out" '^0$'
	egr sudo-env --user $U --allow-sudo -- sh -c 'id -u; sudo -n sh -c "id -u; id -g"'
	a_grep sudo.cmd_uid "$W/sudo-env.out" "^$U\$"
	a_eq sudo.root_gid out "$(tail -1 "$W/sudo-env.out")" 0
}

# 3. the capabilities sudo's programs get: the file ones, none of the way-out ones
test_caps() {
	local eff bit name
	egr caps --user $U --allow-sudo -- sudo -n sh -c 'grep -E "^Cap(Eff|Bnd)" /proc/self/status'
	eff=$(awk '/^CapEff/ { print $2 }' "$W/caps.out")
	if [ -z "$eff" ]; then fail caps.read "no CapEff: $(head -c 300 "$W/caps.err")"; return; fi
	for bit in chown:0 dac_override:1 fowner:3 setuid:7 setgid:6; do
		name=${bit%%:*}
		a_eq "caps.has_$name" bit $(((16#$eff >> ${bit#*:}) & 1)) 1
	done
	for bit in dac_read_search:2 net_admin:12 net_raw:13 sys_module:16 sys_rawio:17 sys_ptrace:19 \
		sys_admin:21 sys_boot:22 mknod:27 mac_admin:33 perfmon:38 bpf:39; do
		name=${bit%%:*}
		a_eq "caps.no_$name" bit $(((16#$eff >> ${bit#*:}) & 1)) 0
	done
}

# 4. every known way out, as root: control (root, no egressctl, the sbx
#    netns, this suite's mount namespace), then through sudo in a confined
#    job; the sensor sees the control's ICMP echo and none of the job's
test_escapes() {
	local n base
	# shellcheck disable=SC2046
	timeout 60 nsenter --net="$NS_SBX" "$PY" "$C/rootprobe.py" --egr-pid "$OUTSIDE" --outside "$OUTSIDE" \
		--dst "$RAW_CTL" --only $(only $ESCAPES) >"$W/escape-ctl.out" 2>"$W/escape-ctl.err"
	read_probe "$W/escape-ctl.out"
	for n in $ESCAPES; do
		case $n in
		insmod | delete_module | kexec) # this kernel has no modules (ENOSYS): still past any filter
			[[ ${R[$n]:-} == "true ENOSYS"* || ${R[$n]:-} == true* ]] && ok "escapes.control.$n" ||
				fail "escapes.control.$n" "${R[$n]:-missing}" ;;
		*) [[ ${R[$n]:-} == true* ]] && ok "escapes.control.$n" ||
			fail "escapes.control.$n" "the attempt does not work unconfined either: ${R[$n]:-missing}" ;;
		esac
	done
	sensor_saw escapes.control.raw_seen "icmp and dst host $RAW_CTL"
	base=$(sensor_now "ip and src host 198.18.0.2 and not udp")
	# confined, through sudo; then the attempts on egressctl itself, whose
	# pid (in the host's PID namespace) the job reads from a file
	egr_bg escapes --user $U --allow-sudo -- sudo -n "$PY" "$C/rootprobe.py" --egr-pid 0 \
		--outside "$OUTSIDE" --dst "$RAW_DST" --only "$(only uid $ESCAPES umount_covers proc1_root_cgroup)"
	egr_join 60
	egr_bg escapes2 --user $U --allow-sudo -- sh -c "sleep 0.3; exec sudo -n $PY $C/rootprobe.py --egr-pid \$(cat $W/egr.pid) --outside $OUTSIDE --dst $RAW_DST --only kill_egressctl,egressctl_mem"
	echo "$EGR_PID" >"$W/egr.pid"
	chmod 0644 "$W/egr.pid"
	egr_join 60
	read_probe "$W/escapes.out"
	[[ ${R[uid]:-} == true* ]] && ok escapes.is_root || fail escapes.is_root "the probe did not run as root: ${R[uid]:-missing} ($(head -c 300 "$W/escapes.err"))"
	for n in $ESCAPES umount_covers proc1_root_cgroup; do
		[ "$n" = kill_egressctl ] || [ "$n" = egressctl_mem ] || a_escape escapes "$n"
	done
	# no CAP_NET_RAW: the kernel refuses the raw socket before the hooks would
	[[ ${R[raw]:-} == "false EPERM"* ]] && ok escapes.raw_eperm || fail escapes.raw_eperm "${R[raw]:-missing}"
	read_probe "$W/escapes2.out"
	a_escape escapes2 kill_egressctl
	a_escape escapes2 egressctl_mem
	sensor_none escapes.raw_not_seen "dst host $RAW_DST"
	sensor_none_since escapes.nothing_from_cmd "$base" "ip and src host 198.18.0.2 and not udp"
}

# 5. --user root --allow-sudo: root itself, its programs with the same caps
test_root_user() {
	local n
	EGR_TIMEOUT=60 egr rootu --user root --allow-sudo -- "$PY" "$C/rootprobe.py" --egr-pid 1 \
		--outside "$OUTSIDE" --dst "$RAW_DST" --only "$(only uid $ESCAPES umount_covers)"
	read_probe "$W/rootu.out"
	[[ ${R[uid]:-} == true* ]] && ok root_user.is_root || fail root_user.is_root "${R[uid]:-missing}"
	for n in $ESCAPES umount_covers; do
		[ "$n" = kill_egressctl ] && continue # pid 1 here is the namespace's own
		a_escape root_user "$n"
	done
	sensor_none root_user.raw_not_seen "dst host $RAW_DST"
}

# 6. the PID namespace of --allow-sudo: CMD sees only its own processes, is
#    not pid 1 itself (a pid 1 reaps and forwards), and signals, --timeout
#    and exit statuses work as without it
test_pidns() {
	egr pidns --user $U --allow-sudo -- sh -c 'echo "self $$"; echo "pid1 $(cat /proc/1/comm)"; ls /proc | grep -c "^[0-9]"'
	a_grep pidns.not_pid1 "$W/pidns.out" '^self 2$'
	a_grep pidns.pid1_ours "$W/pidns.out" '^pid1 egressctl'
	a_eq pidns.only_ours procs "$(tail -1 "$W/pidns.out")" 4 # pid 1, sh, ls, grep
	egr pidns-exit --user $U --allow-sudo -- sh -c 'exit 7'
	a_rc pidns.exit_status 7 pidns-exit
	egr pidns-sig --user $U --allow-sudo -- sh -c 'kill -USR1 $$'
	a_rc pidns.signal_status 138 pidns-sig
	egr pidns-timeout --user $U --allow-sudo --timeout 1 -- sleep 30
	a_rc pidns.timeout 124 pidns-timeout
	egr pidns-killafter --user $U --allow-sudo --timeout 1 --kill-after 1 -- sh -c 'trap "" TERM; sleep 30'
	a_rc pidns.kill_after 137 pidns-killafter
	# egressctl's TERM reaches CMD through its pid 1
	egr_bg pidns-fwd --user $U --allow-sudo -- sh -c 'trap "echo got-term; exit 3" TERM; echo trapped; sleep 30 & wait'
	# CMD's trap is set (a fixed sleep was too short on a loaded machine:
	# the TERM reached egressctl before it ran CMD, and ended it)
	wait_secs 20 grep -q '^trapped$' "$W/pidns-fwd.out"
	kill -TERM "$EGR_PID"
	egr_join 10
	a_rc pidns.forwarded 3 pidns-fwd
	a_grep pidns.forwarded_seen "$W/pidns-fwd.out" '^got-term$'
	# an orphan is reaped, and CMD's end takes the rest of its namespace with it
	egr pidns-orphan --user $U --allow-sudo -- sh -c '(sleep 0.2 &) ; sleep 0.5; ps -o stat= -e 2>/dev/null | grep -c Z || true'
	a_eq pidns.reaped zombies "$(tail -1 "$W/pidns-orphan.out")" 0
}

# 7. Regression: the kernel's knobs through another mount of their
#    filesystem. Only /proc/... and /sys/... themselves were read-only in
#    CMD's mount namespace: where a second procfs, a bind of /proc or of
#    /proc/sys, or a second sysfs existed (a chroot's /proc, a build root's
#    /sys, a container's own procfs), a --user root CMD, and root through
#    sudo under --allow-sudo, opened core_pattern for writing through it (a
#    pipe there runs a program as real root outside every cgroup) and wrote
#    net.ipv4.ip_unprivileged_port_start; tracefs, debugfs, binfmt_misc and
#    securityfs mounts were as open. Each mount is made here (pfs.sh's
#    pfs_mount, shared with cisudo.sh), under $W/pfs in the suite's own
#    mount namespace, and goes at the end. The control writes back only the
#    value it read (core_pattern, tracing_on, binfmt_misc's status) or
#    bumps the port sysctl of the test netns and puts it back at once;
#    everything else is opened, never written.

# pfs_confined TAG RUN-OPTIONS... -- [sudo -n]: the probe in a confined run
pfs_confined() {
	local tag=$1 a
	shift
	EGR_TIMEOUT=60 egr "$tag" "$@" "$PY" "$C/kfprobe.py" "${PFS[@]}"
	a_rc "$tag.exit" 0 "$tag"
	read_probe "$W/$tag.out"
	for a in "${PFS[@]}"; do a_pfs_refused "$tag" "${a%%=*}"; done
}

test_pseudofs() {
	local a port knob=/proc/sys/net/ipv4/ip_unprivileged_port_start
	if ! pfs_mount; then
		fail pseudofs.setup "cannot make the second procfs, the binds or the second sysfs under $W/pfs"
		e2e_umount_under "$W/pfs"
		return
	fi
	port=$(in_sbx cat "$knob")
	# control: root without egressctl, in the test netns and this suite's
	# mount namespace: every attempt works
	timeout 60 nsenter --net="$NS_SBX" "$PY" "$C/kfprobe.py" "${PFS[@]}" >"$W/pfs-ctl.out" 2>"$W/pfs-ctl.err"
	read_probe "$W/pfs-ctl.out"
	for a in "${PFS[@]}"; do
		a=${a%%=*}
		[[ ${R[$a]:-} == true* ]] && ok "pseudofs.control.$a" ||
			fail "pseudofs.control.$a" "the attempt does not work unconfined either: ${R[$a]:-missing}"
	done
	a_eq pseudofs.control.port_restored ip_unprivileged_port_start "$(in_sbx cat "$knob")" "$port"
	have_egr || { e2e_umount_under "$W/pfs"; return 0; }

	pfs_confined pseudofs-root --user root --
	pfs_confined pseudofs-sudo --user $U --allow-sudo -- sudo -n
	pfs_confined pseudofs-rootsudo --user root --allow-sudo --
	pfs_confined pseudofs-nobody --user $U --
	a_eq pseudofs.port_unchanged ip_unprivileged_port_start "$(in_sbx cat "$knob")" "$port"
	e2e_umount_under "$W/pfs"
}

suite_main sudo.sh sudo_setup "ip nsenter setpriv unshare mount tcpdump sudo nft timeout" "$@"
