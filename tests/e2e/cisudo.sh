#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2154 # P_* are assigned by jv (lib.sh) through eval
# End-to-end tests of the GitHub Action's `sudo` input (action.yml,
# contrib/ci/): a job user with passwordless sudo, as a hosted runner's,
# runs the action's main step, then steps, then its post step, with each
# mode:
#   confined  `sudo CMD` (the shim, contrib/ci/github/bin/sudo) runs CMD as
#             root through `egressctl sudo` inside the job's confinement:
#             a download from an allowed host, a denied one, /etc/hosts, a
#             service that outlives the command, -E/-u/-s/-i, and every
#             root escape of sudo.sh tried through it, by every route
#             (sudo -s, su, -i, sh -c, env, chroot, nsenter), refused, and
#             pkexec, which a polkit rule lets the job user run as root
#             before the action (the control: its curl is seen), refused
#             after it (its system bus is out of reach), with
#             nothing at the leak sensor; the kernel's knobs through other
#             mounts of their filesystems, sudo.sh's pseudofs (pfs.sh: a
#             second procfs, binds of /proc and /proc/sys, a second sysfs,
#             tracefs, debugfs, binfmt_misc, securityfs, ...), each shown
#             to work by the job user's plain sudo in a step before the
#             action (the control half: only values read are written
#             back, the port sysctl bumped is the test netns's and put
#             back), then refused through its sudo; plain /usr/bin/sudo
#             refused; no setuid bit, file capability or sudoers file
#             planted
#   disable   no sudo at all until the post step; restored after it, and
#             by the daemon's launcher when the post step never comes
#   allow     (audit mode's default) unchanged: the control halves of the
#             escapes above (the pseudofs ones are confined's, before the
#             action), and the summary's warning
# In every mode the job user cannot read the daemon's control socket,
# stop the daemon, finish early, or change what the post step reports.
#
#   tests/e2e/cisudo.sh build/egressctl    (as root; make e2e does this)
#
# The job user is made here (useradd egrsuPID) with a sudoers file of its
# own, /etc/sudoers.d/egr-e2e-PID (as the runner's), both removed by name
# at exit, as is any /etc/sudoers.d/zz-egressctl-e2e-PID-* a failure left
# (tests/e2e/ghjob.sh: the user and its job, shared with ci.sh's
# github_runner).
# /etc/hosts is a copy bind-mounted in this suite's mount namespace, where
# pfs.sh's mounts are made too (under $W/pfs: unmounted at the end of
# confined, and by lib.sh's e2e_cleanup however the run ends). The job's
# steps run in the test netns (egr-sbx-PID, nsenter in gh_job), never the
# host's; kfprobe.py's --netns refuses to try anything elsewhere. The
# network, names and servers are audit.sh's (audit_net.sh): a.example.test
# 203.0.113.10 (HTTP :80), blocked.test; the leak sensor on the veth.
# pkexec's system bus is a dbus-daemon --system and a polkitd of this
# suite's, on a directory bind-mounted over /run/dbus (made, and removed
# at exit, where the host has none), with a rule for the job user alone on
# a directory bound over /etc/polkit-1/rules.d, both in this suite's mount
# namespace; without pkexec or polkitd (install-deps.sh installs them) the
# route is skipped, saying so.

set -u
. "$(dirname "$0")/lib.sh"
e2e_reexec --mntns "$@"
. "$(dirname "$0")/audit_net.sh"
. "$(dirname "$0")/pfs.sh"
. "$(dirname "$0")/ghjob.sh" # the job user's job: ghjob_user, gh_job, a_rec

REPO=$(cd "$E2E_SRC/../.." && pwd)
JU=egrsu$$		# the job user
GH_DENIED=203.0.113.21	# what the steps' denied requests would reach
RAW_DST=198.51.100.77	# the probes' ICMP echo from inside: never seen
RAW_CTL=198.51.100.78	# ... and from the allow-mode control: seen
PK_CTL=198.51.100.79	# pkexec's curl before the action: seen
PK_DST=198.51.100.80	# ... and after it: never seen
PK_ON=0			# pkexec and a polkitd of ours are there (polkit_start)
PK_RUNDBUS=0		# /run/dbus was made here (removed at exit)
SUDOERS=/etc/sudoers.d/egr-e2e-$$
ESCAPES="mount_cgroup2 fsopen open_tree newmount_proc fspick open_tree_attr mount_setattr move_mount
proc_outside_root_cgroup bpf unshare_net unshare_user nsenter setns insmod delete_module kexec nft
ip_link raw packet kill_egressctl egressctl_mem ptrace pidfd_getfd open_by_handle"
ROUTE_PROBES=uid,mount_cgroup2,bpf,proc_outside_root_cgroup,unshare_net,nft

eval "cisudo_$(declare -f e2e_cleanup)"
e2e_cleanup() {
	ghjob_cleanup
	mountpoint -q /etc/hosts && umount /etc/hosts
	mountpoint -q /run/dbus && umount -l /run/dbus
	[ "$PK_RUNDBUS" = 1 ] && rmdir /run/dbus
	mountpoint -q /etc/polkit-1/rules.d && umount -l /etc/polkit-1/rules.d
	cisudo_e2e_cleanup
}

cisudo_setup() {
	audit_setup || return 1
	# the job user's sudo, as a hosted runner's
	ghjob_user || return 1
	cp /etc/hosts "$W/hosts" && chmod 0644 "$W/hosts" && mount --bind "$W/hosts" /etc/hosts ||
		{ echo "cannot bind-mount a copy of /etc/hosts"; return 1; }
	mkdir -m 0755 "$W/opt" "$W/www" && echo served >"$W/www/index.html"
	# a setuid-root program of the test's own, for the write-over case
	cp /bin/true "$W/suid" && chmod 4755 "$W/suid"
	# a root process outside the job, for the probes' /proc attempts
	sleep 600 &
	OUTSIDE=$!
	PIDS+=("$OUTSIDE")
	polkit_start
}

# polkit_start: a system bus and a polkitd of this suite's (see the top),
# with a rule that lets the job user pkexec anything, as root, without a
# password; PK_ON=1 once polkitd owns its name on that bus
polkit_start() {
	local pkd i
	command -v pkexec >/dev/null || { note "pkexec is not installed: that route is not tried"; return 0; }
	for pkd in /usr/lib/polkit-1/polkitd /usr/libexec/polkitd ''; do [ -x "$pkd" ] && break; done
	[ -n "$pkd" ] && [ -d /etc/polkit-1/rules.d ] ||
		{ note "polkitd is not installed: the pkexec route is not tried"; return 0; }
	mkdir -m 0755 "$W/pk" "$W/pk/dbus" "$W/pk/rules" || return 1
	cat >"$W/pk/rules/10-egr-e2e.rules" <<EOF
polkit.addRule(function(action, subject) {
	if (action.id == "org.freedesktop.policykit.exec" && subject.user == "$JU")
		return polkit.Result.YES;
});
EOF
	chmod 0644 "$W/pk/rules/10-egr-e2e.rules"
	if [ ! -e /run/dbus ]; then
		mkdir -m 0755 /run/dbus && PK_RUNDBUS=1 || return 1
	fi
	mount --bind "$W/pk/dbus" /run/dbus && mount --bind "$W/pk/rules" /etc/polkit-1/rules.d || return 1
	dbus-daemon --system --nofork --nopidfile >"$W/pk/dbus.out" 2>&1 &
	PIDS+=($!)
	for i in $(seq 100); do [ -S /run/dbus/system_bus_socket ] && break; sleep 0.05; done
	"$pkd" --no-debug >"$W/pk/polkitd.out" 2>&1 &
	PIDS+=($!)
	for i in $(seq 100); do
		dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner \
			string:org.freedesktop.PolicyKit1 2>/dev/null | grep -q 'boolean true' && { PK_ON=1; return 0; }
		sleep 0.1
	done
	echo "polkitd did not take its name: $(head -c 300 "$W/pk/polkitd.out" "$W/pk/dbus.out" | tr '\n' '|')"
	return 1
}

tcg() { echo "$CGROOT/egr-e2e-$$-$1"; }

a_escape() { a_refused "$1.$2.refused" "$2"; } # a_escape TAG PROBE (pfs.sh's a_pfs_refused)

# pfs_step KEY OUT: a step's line that runs clients/kfprobe.py on pfs.sh's
# attempts (PFS) as root through the job's `sudo` (/usr/bin/sudo before
# the main step, the shim after it), its JSON lines into $RW/OUT; with
# --netns, only in the test netns, the one whose port sysctl it may bump
pfs_step() {
	printf 'rec %s sh -c %q\n' "$1" \
		"sudo -n $PY $C/kfprobe.py --netns $(stat -L -c %i "$NS_SBX") $(printf '%q ' "${PFS[@]}")>$RW/$2 2>&1"
}

# the state of the action's root, tried as the job user (shell text, for
# every mode): the control socket, the daemon, root's state, an early finish
STATE_TRIES='rec st.ls ls $SDIR
rec st.sock $PY -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(\"connected\")" $SDIR/control
rec st.kill kill -TERM $DPID
rec st.write sh -c "echo pid=1 >>$SDIR/state"
rec st.finish_no_token env EGR_DIR=$RUNNER_TEMP/egressctl STATE_dir=$RUNNER_TEMP/egressctl bash $GITHUB_ACTION_PATH/contrib/ci/github/post.sh
rec st.finish_guess sh -c "echo 00000000000000000000000000000000 | /usr/bin/sudo -n $SDIR/ci finish $RUNNER_TEMP/egressctl"
rec st.detach /usr/bin/sudo -n $SDIR/egressctl detach --control $SDIR/control --all
echo FORGED >$RUNNER_TEMP/egressctl/summary.md
rec st.still_denied curl -s -o /dev/null -m 5 -w %{http_code} --resolve blocked.test:8080:'"$GH_DENIED"' http://blocked.test:8080/early
'

a_state_safe() { # a_state_safe TAG
	local t=$1
	a_rec "$t.state.ls" "$t" st.ls 'rc=[1-9][0-9]* .*Permission denied'
	a_rec "$t.state.socket" "$t" st.sock 'rc=[1-9][0-9]* .*(PermissionError|Permission denied)'
	a_rec "$t.state.kill_daemon" "$t" st.kill 'rc=[1-9][0-9]* .*(not permitted|Operation)'
	a_rec "$t.state.write" "$t" st.write 'rc=[1-9][0-9]* .*Permission denied'
	a_rec "$t.state.finish_without_token" "$t" st.finish_no_token 'rc=[0-9]+ .*only the post step can do'
	a_rec "$t.state.finish_guessed_token" "$t" st.finish_guess 'rc=[1-9][0-9]* '
	a_rec "$t.state.detach" "$t" st.detach 'rc=[1-9][0-9]* .*(not allowed|password is required)'
	a_rec "$t.state.still_confined" "$t" st.still_denied 'rc=0 (000|403)$'
	a_nogrep "$t.state.summary_not_forged" "$W/$t.tmp/egressctl/summary.md" FORGED
	a_grep "$t.state.summary_real" "$W/$t.tmp/egressctl/summary.md" '^### egressctl: '
}

# ======================================================================
# sudo: confined (block mode's default)
# ======================================================================
test_confined() {
	local t=conf dropin n a port hostport knob=/proc/sys/net/ipv4/ip_unprivileged_port_start
	have_egr || return 0
	dropin=/etc/sudoers.d/zz-egressctl-$(cg_name "$t-job")
	# sudo.sh's pseudofs mounts, made before the job (its sudo's mount
	# namespace is a copy of this suite's)
	if ! pfs_mount; then
		fail "$t.pseudofs.setup" "cannot make the second procfs, the binds or the second sysfs under $W/pfs"
		PFS=()
	fi
	port=$(in_sbx cat "$knob")
	hostport=$(cat "$knob")
	echo "rec ctl.sudo sudo -n id -u" >"$W/$t.before"
	if [ "$PK_ON" = 1 ]; then
		echo "rec ctl.pkexec pkexec id -u" >>"$W/$t.before"
		echo "rec ctl.pkexec_curl pkexec curl -s -o /dev/null -m 3 http://$PK_CTL/" >>"$W/$t.before"
	fi
	if [ ${#PFS[@]} -gt 0 ]; then
		{
			pfs_step ctl.pfs conf-pfs-ctl.out
			echo "rec ctl.pfs_port cat $knob"
		} >>"$W/$t.before"
	fi
	{
		cat <<'EOF'
rec shim command -v sudo
rec id sudo id -u
rec cgroup sudo cat /proc/self/cgroup
rec cgroupfs sudo ls -A $CGROOT
rec plain /usr/bin/sudo -n id -u
rec plain_sh /usr/bin/sudo -n /bin/sh -c id
rec plain_u /usr/bin/sudo -n -u nobody $SDIR/sudo -- id
rec pkg sudo curl -s -o $W/opt/pkg.deb -w %{http_code} http://a.example.test/pool/pkg.deb
rec pkg_owner stat -c %u $W/opt/pkg.deb
rec hosts sh -c 'echo "203.0.113.10 svc.test" | sudo tee -a /etc/hosts'
rec hosts_seen getent hosts svc.test
rec svc sudo sh -c "$PY -m http.server 18080 --bind 127.0.0.1 --directory $W/www >/dev/null 2>&1 &"
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18080/ && break; sleep 0.1; done
rec svc_up curl -s http://127.0.0.1:18080/
rec svc_root sh -c "ps -o uid= -p \$(pgrep -f 'http.server 18080' | head -1)"
rec env_e sh -c 'FOO=bar sudo -E sh -c "echo [\$FOO]"'
rec env_keep sh -c 'FOO=bar sudo --preserve-env=FOO sh -c "echo [\$FOO]"'
rec env_reset sh -c 'FOO=bar sudo sh -c "echo [\$FOO]"'
rec env_assign sudo BAR=baz sh -c 'echo [$BAR]'
rec env_home sudo -H sh -c 'echo [$HOME]'
rec user sudo -u nobody id -u
rec unsupported sudo -b true
rec shell_s sh -c 'echo "$PY $C/rootprobe.py --egr-pid 0 --outside $OUTSIDE --dst 198.51.100.77 --only uid,mount_cgroup2,bpf,proc_outside_root_cgroup,unshare_net,nft >$RW/route-s.out 2>&1" | sudo -s'
rec shell_i sudo -i sh -c "$PY $C/rootprobe.py --egr-pid 0 --outside $OUTSIDE --dst 198.51.100.77 --only uid,mount_cgroup2,bpf,proc_outside_root_cgroup,unshare_net,nft >$RW/route-i.out 2>&1"
rec su sudo su -c "$PY $C/rootprobe.py --egr-pid 0 --outside $OUTSIDE --dst 198.51.100.77 --only uid,mount_cgroup2,bpf,proc_outside_root_cgroup,unshare_net,nft >$RW/route-su.out 2>&1"
rec sh_c sudo /bin/sh -c "$PY $C/rootprobe.py --egr-pid 0 --outside $OUTSIDE --dst 198.51.100.77 --only uid,mount_cgroup2,bpf,proc_outside_root_cgroup,unshare_net,nft >$RW/route-sh.out 2>&1"
rec env sudo env sh -c "$PY $C/rootprobe.py --egr-pid 0 --outside $OUTSIDE --dst 198.51.100.77 --only uid,mount_cgroup2,bpf,proc_outside_root_cgroup,unshare_net,nft >$RW/route-env.out 2>&1"
rec chroot sudo chroot / sh -c "$PY $C/rootprobe.py --egr-pid 0 --outside $OUTSIDE --dst 198.51.100.77 --only uid,mount_cgroup2,bpf,proc_outside_root_cgroup,unshare_net,nft >$RW/route-chroot.out 2>&1"
rec nsenter sudo nsenter -t 1 -m -n -p id -u
rec su_direct sh -c 'su -c "id -u" root </dev/null'
rec probe sudo sh -c "$PY $C/rootprobe.py --egr-pid $DPID --outside $OUTSIDE --dst 198.51.100.77 --only uid,mount_cgroup2,fsopen,open_tree,newmount_proc,fspick,open_tree_attr,mount_setattr,move_mount,proc_outside_root_cgroup,bpf,unshare_net,unshare_user,nsenter,setns,insmod,delete_module,kexec,nft,ip_link,raw,packet,kill_egressctl,egressctl_mem,ptrace,pidfd_getfd,open_by_handle,umount_covers,proc1_root_cgroup >$RW/conf-probe.out 2>&1"
rec suid_chmod sudo sh -c "cp /bin/bash $RW/rsh && chmod 4755 $RW/rsh"
rec suid_run sh -c "$RW/rsh -p -c 'id -u'"
rec suid_creat sudo $PY -c "import os; os.close(os.open('$RW/rsh2', os.O_CREAT | os.O_WRONLY, 0o4755))"
rec suid_install sudo install -m 2755 /bin/true $RW/rsh3
rec suid_overwrite sudo sh -c "cat /bin/bash >$W/suid"
rec suid_overwrite_mode stat -c %a $W/suid
rec fcaps sudo $PY -c "import os; os.setxattr('$W/opt/pkg.deb', 'security.capability', bytes.fromhex('0100000200200000000000000000000000000000'))"
rec sudoers sudo sh -c "echo '#$(id -u) ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/zz-egr-e2e-$SUITE-x"
rec sudoers_after /usr/bin/sudo -n id -u
rec in_run_dir sudo ls -A /run/egressctl
rec in_kill sudo kill -TERM $DPID
rec in_state sudo sh -c "echo pid=1 >>$SDIR/state"
EOF
		echo "$STATE_TRIES"
		[ ${#PFS[@]} -gt 0 ] && pfs_step pfs conf-pfs.out
		if [ "$PK_ON" = 1 ]; then
			echo "rec pkexec pkexec id -u"
			echo "rec pkexec_curl pkexec curl -s -o /dev/null -m 3 http://$PK_DST/"
		fi
	} >"$W/$t.steps"
	echo "rec after.sudo /usr/bin/sudo -n id -u" >"$W/$t.after"
	local base
	base=$(sensor_now "ip and src host 198.18.0.2 and not udp and not dst host 203.0.113.10 and not dst host 198.18.0.1 and not dst host $PK_CTL")
	gh_job "$t" "INPUT_MODE=block"
	a_rec "$t.control.sudo_before" "$t" ctl.sudo 'rc=0 0$'
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.said" "$W/$t.worker" "the job user's sudo is confined until the finish"
	a_rec "$t.shim" "$t" shim "rc=0 $(re "$REPO")/contrib/ci/github/bin/sudo"
	a_rec "$t.root" "$t" id 'rc=0 0$'
	a_rec "$t.same_cgroup" "$t" cgroup "rc=0 .*0::/egr-e2e-$$-$t$"
	a_rec "$t.cgroupfs_hidden" "$t" cgroupfs 'rc=0 ?$'
	a_rec "$t.plain_refused" "$t" plain 'rc=1 .*(not allowed|password is required)'
	a_rec "$t.plain_sh_refused" "$t" plain_sh 'rc=1 .*(not allowed|password is required)'
	a_rec "$t.other_user_refused" "$t" plain_u 'rc=1 .*(not allowed|password is required)'
	a_rec "$t.pkg.allowed" "$t" pkg 'rc=0 200'
	a_rec "$t.pkg.root_owned" "$t" pkg_owner 'rc=0 0$'
	a_rec "$t.hosts.written" "$t" hosts 'rc=0 203\.0\.113\.10 svc\.test'
	a_rec "$t.hosts.seen" "$t" hosts_seen 'rc=0 203\.0\.113\.10 +svc\.test'
	a_rec "$t.service.started" "$t" svc 'rc=0 '
	a_rec "$t.service.outlives_sudo" "$t" svc_up 'rc=0 served'
	a_rec "$t.service.as_root" "$t" svc_root 'rc=0 +0$'
	a_rec "$t.env.E" "$t" env_e 'rc=0 \[bar\]'
	a_rec "$t.env.preserve" "$t" env_keep 'rc=0 \[bar\]'
	a_rec "$t.env.reset" "$t" env_reset 'rc=0 \[\]'
	a_rec "$t.env.assign" "$t" env_assign 'rc=0 \[baz\]'
	a_rec "$t.env.H" "$t" env_home 'rc=0 \[/root\]'
	a_rec "$t.user" "$t" user 'rc=0 65534$'
	a_rec "$t.unsupported_said" "$t" unsupported 'rc=1 .*option -b is not supported'
	# every route to a root shell lands inside
	for n in s i su sh env chroot; do
		read_probe "$RW/route-$n.out"
		a_worked "$t.route.$n.is_root" uid
		a_refused "$t.route.$n.mount_cgroup2" mount_cgroup2
		a_refused "$t.route.$n.bpf" bpf
		a_refused "$t.route.$n.proc_outside" proc_outside_root_cgroup
		a_refused "$t.route.$n.unshare_net" unshare_net
		a_refused "$t.route.$n.nft" nft
	done
	a_rec "$t.route.nsenter_refused" "$t" nsenter 'rc=[1-9][0-9]* .*(Operation not permitted|Permission denied)'
	if [ "$(passwd -S root 2>/dev/null | awk '{ print $2 }')" = P ]; then
		note "$t: root has a password here: su is a way to root the job's sudo rule does not cover"
	else
		a_rec "$t.route.su_without_sudo" "$t" su_direct 'rc=[1-9][0-9]* '
	fi
	if [ "$PK_ON" = 1 ]; then
		a_rec "$t.control.pkexec_is_root" "$t" ctl.pkexec 'rc=0 0$'
		sensor_saw "$t.control.pkexec_curl_seen" "tcp and dst host $PK_CTL"
		a_rec "$t.route.pkexec_refused" "$t" pkexec 'rc=[1-9][0-9]* .*authority: Could not connect: Operation not permitted'
		a_rec "$t.route.pkexec_curl_refused" "$t" pkexec_curl 'rc=[1-9][0-9]* '
		sensor_none "$t.route.pkexec_curl_not_seen" "dst host $PK_DST"
	fi
	# the escapes of sudo.sh, through the job's sudo
	read_probe "$RW/conf-probe.out"
	a_worked "$t.escapes.is_root" uid
	for n in $ESCAPES umount_covers proc1_root_cgroup; do a_refused "$t.escapes.$n" "$n"; done
	sensor_none "$t.escapes.raw_not_seen" "dst host $RAW_DST"
	# the kernel's knobs through other mounts: each works by the job's
	# plain sudo before the action (the port sysctl back at once), and is
	# refused through its sudo after
	if [ ${#PFS[@]} -gt 0 ]; then
		a_rec "$t.control.pseudofs.exit" "$t" ctl.pfs 'rc=0 '
		read_probe "$RW/conf-pfs-ctl.out"
		for a in "${PFS[@]}"; do a_worked "$t.control.pseudofs.${a%%=*}" "${a%%=*}"; done
		a_rec "$t.control.pseudofs.port_restored" "$t" ctl.pfs_port "rc=0 $port\$"
		a_rec "$t.pseudofs.exit" "$t" pfs 'rc=0 '
		read_probe "$RW/conf-pfs.out"
		for a in "${PFS[@]}"; do a_pfs_refused "$t.pseudofs" "${a%%=*}"; done
		a_eq "$t.pseudofs.port_unchanged" "the test netns's ip_unprivileged_port_start" "$(in_sbx cat "$knob")" "$port"
		a_eq "$t.pseudofs.host_port_unchanged" "the host's ip_unprivileged_port_start" "$(cat "$knob")" "$hostport"
	fi
	e2e_umount_under "$W/pfs"
	# nothing planted that makes the job user root outside
	a_rec "$t.suid.chmod_refused" "$t" suid_chmod 'rc=1 .*Operation not permitted'
	a_rec "$t.suid.not_root" "$t" suid_run 'rc=[0-9]+ ([1-9][0-9]*|.*No such file)'
	a_rec "$t.suid.creat_refused" "$t" suid_creat 'rc=1 .*PermissionError'
	a_rec "$t.suid.install_refused" "$t" suid_install 'rc=1 .*Operation not permitted'
	a_rec "$t.suid.overwrite_clears" "$t" suid_overwrite_mode 'rc=0 755$'
	a_rec "$t.fcaps_refused" "$t" fcaps 'rc=1 .*PermissionError'
	a_rec "$t.sudoers_refused" "$t" sudoers 'rc=[1-9][0-9]* .*Read-only'
	a_rec "$t.sudoers_unchanged" "$t" sudoers_after 'rc=1 .*(not allowed|password is required)'
	# root inside does not reach the action's state either
	a_rec "$t.inside.run_dir_masked" "$t" in_run_dir 'rc=0 ?$'
	a_rec "$t.inside.kill_daemon" "$t" in_kill 'rc=[1-9][0-9]* .*No such process'
	a_rec "$t.inside.state" "$t" in_state 'rc=[1-9][0-9]* '
	a_state_safe "$t"
	sensor_none_since "$t.nothing_leaked" "$base" "ip and src host 198.18.0.2 and not udp and not dst host 203.0.113.10 and not dst host 198.18.0.1 and not dst host $PK_CTL"
	# the post step: everything back
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	a_rec "$t.restored" "$t" after.sudo 'rc=0 0$'
	expect "$t.dropin_removed" "$dropin is left" test ! -e "$dropin"
	expect "$t.state_removed" "root's state is left" test ! -e "/run/egressctl/ci/$(cg_name "$t-job")"
	a_nogrep "$t.no_allow_warning" "$W/$t.summary.md" 'sudo: allow'
}

# ======================================================================
# sudo: disable; and the sudoers rule goes when the post step never comes
# ======================================================================
test_disable() {
	local t=dis dropin i
	have_egr || return 0
	dropin=/etc/sudoers.d/zz-egressctl-$(cg_name "$t-job")
	echo "rec ctl.sudo sudo -n id -u" >"$W/$t.before"
	{
		echo 'rec shim sudo -n true'
		echo 'rec plain /usr/bin/sudo -n true'
		echo 'rec plain_l /usr/bin/sudo -n -l'
		echo "$STATE_TRIES"
	} >"$W/$t.steps"
	echo "rec after.sudo /usr/bin/sudo -n id -u" >"$W/$t.after"
	gh_job "$t" "INPUT_MODE=block INPUT_SUDO=disable"
	a_rec "$t.control.sudo_before" "$t" ctl.sudo 'rc=0 0$'
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_rec "$t.shim_says" "$t" shim 'rc=1 .*no sudo in this job'
	a_rec "$t.plain_refused" "$t" plain 'rc=1 .*(not allowed|password is required)'
	a_state_safe "$t"
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	a_rec "$t.restored" "$t" after.sudo 'rc=0 0$'
	expect "$t.dropin_removed" "$dropin is left" test ! -e "$dropin"

	# the job ends (its Runner.Worker killed) between the main step and
	# the post step: the daemon's launcher stops it and removes the rule
	t=nopost
	dropin=/etc/sudoers.d/zz-egressctl-$(cg_name "$t-job")
	echo 'rec sudo_gone /usr/bin/sudo -n true; kill -KILL $$' >"$W/$t.steps"
	gh_job "$t" "INPUT_MODE=block INPUT_SUDO=disable" no
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_rec "$t.sudo_gone" "$t" sudo_gone 'rc=1 '
	for i in $(seq 100); do [ -e "$dropin" ] || break; sleep 0.1; done
	expect "$t.dropin_removed" "$dropin is still there 10 s after the job ended" test ! -e "$dropin"
	a_grep "$t.launcher_said" "$W/$t.tmp/egressctl/daemon.out" 'ended without its finish: stopping the daemon'
	su -s /bin/sh -c '/usr/bin/sudo -n id -u' "$JU" >"$W/$t.after.out" 2>&1
	a_grep "$t.restored" "$W/$t.after.out" '^0$'
	n=$(for i in /proc/[0-9]*; do [ "$(readlink "$i/exe" 2>/dev/null)" = "/run/egressctl/ci/$(cg_name "$t-job")/egressctl" ] && echo "${i#/proc/}"; done)
	a_eq "$t.daemon_stopped" "processes of its daemon" "${n:-none}" none
}

# ======================================================================
# sudo: allow (audit mode's default): the control halves
# ======================================================================
test_allow() {
	local t=allow n
	have_egr || return 0
	cat >"$W/$t.steps" <<'EOF'
rec probe sudo -n sh -c "$PY $C/rootprobe.py --egr-pid $OUTSIDE --outside $OUTSIDE --dst 198.51.100.78 --only uid,mount_cgroup2,fsopen,open_tree,newmount_proc,fspick,open_tree_attr,mount_setattr,move_mount,proc_outside_root_cgroup,bpf,unshare_net,unshare_user,nsenter,setns,insmod,delete_module,kexec,nft,ip_link,raw,packet,kill_egressctl,egressctl_mem,ptrace,pidfd_getfd,open_by_handle >$RW/allow-probe.out 2>&1"
rec suid_chmod sudo -n sh -c "cp /bin/bash $RW/ctl-rsh && chmod 4755 $RW/ctl-rsh"
rec suid_run sh -c "$RW/ctl-rsh -p -c 'id -u'"
rec sudoers sudo -n sh -c "echo '# test' >/etc/sudoers.d/zz-egr-e2e-$SUITE-ctl && rm /etc/sudoers.d/zz-egr-e2e-$SUITE-ctl"
EOF
	gh_job "$t" "INPUT_MODE=audit"
	a_grep "$t.main.exit" "$W/$t.step" '^main 0$'
	a_grep "$t.state.sudo_allow" "$W/$t.state" '^sudo=allow$'
	read_probe "$RW/allow-probe.out"
	a_worked "$t.control.is_root" uid
	for n in $ESCAPES; do
		case $n in
		insmod | delete_module | kexec) [[ ${R[$n]:-} == true* ]] && ok "$t.control.$n" ||
			fail "$t.control.$n" "${R[$n]:-missing}" ;;
		*) a_worked "$t.control.$n" "$n" ;;
		esac
	done
	sensor_saw "$t.control.raw_seen" "icmp and dst host $RAW_CTL"
	a_rec "$t.control.suid_planted" "$t" suid_chmod 'rc=0 '
	a_rec "$t.control.suid_gives_root" "$t" suid_run 'rc=0 0$'
	a_rec "$t.control.sudoers_written" "$t" sudoers 'rc=0 '
	a_grep "$t.post.exit" "$W/$t.step" '^post 0$'
	a_grep "$t.summary.warning" "$W/$t.summary.md" 'egressctl warning.*sudo: allow: the job user kept its passwordless sudo'
	a_grep "$t.annotation" "$W/$t.worker" '^::warning title=egressctl sudo: allow::'
}

# `egressctl sudo` itself refuses where nothing confines its cgroup
test_unconfined() {
	local t=uncf
	have_egr || return 0
	"$EGRESSCTL" sudo -- /bin/true >"$W/$t.out" 2>"$W/$t.err"
	a_eq "$t.exit" status "$?" 125
	a_grep "$t.said" "$W/$t.err" '^egressctl: sudo: cgroup .* is not confined by egressctl: CMD would run as root outside confinement \(refused\)$'
}

ALL_TESTS="unconfined confined disable allow"

suite_main cisudo.sh cisudo_setup "ip nsenter setpriv unshare mount tcpdump ss curl dig dnsmasq openssl timeout node sudo visudo useradd userdel chroot dbus-daemon dbus-send" "$@"
