# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# A systemd of the test's own (sourced by docker.sh and daemon.sh): PID 1
# of a PID, mount and cgroup namespace whose cgroup2 root is a cgroup of
# the test's, SD_CG, as systemd sees the host's root on a real machine
# (unified, as on GitHub's images); its files in SD. Its units run in the
# host's network namespace unless they say otherwise: the test's own
# (NS_SBX) is bound at $SD/net for NetworkNamespacePath=. Nothing of it
# is registered with the host's systemd, if there is one.
#
#   SD=DIR SD_CG=CGROUP sd_boot      its namespaces' PID 1 up (systemctl
#                                    is-system-running says "running")
#   sd_in CMD...                     CMD in its mount and PID namespaces
#   sd_down                          everything in SD_CG killed, SD_CG
#                                    removed; its cgroups' ids in
#                                    $W/cgids (e2e_cleanup removes their
#                                    pins)

# sd_in ARGS...: a command in that systemd's mount and PID namespaces
sd_in() { nsenter -t "$(head -1 "$SD_CG/init.scope/cgroup.procs" 2>/dev/null)" -m -p "$@"; }
sd_running() { [ "$(sd_in systemctl is-system-running 2>/dev/null)" = running ]; }

sd_boot() {
	mkdir -p "$SD" && touch "$SD/net" && mkdir "$SD_CG" || return 1
	cat >"$SD/init.sh" <<EOF
#!/bin/sh
set -e
mount --make-rprivate /
mount --bind $NS_SBX $SD/net
mount -t proc proc /proc
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/system
printf '[Unit]\nDefaultDependencies=no\n' >/run/systemd/system/egr.target
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for d in /etc/systemd/system /lib/systemd/system /lib/systemd/system-generators; do
	mount -t tmpfs tmpfs \$d
done
export container=egr-e2e
exec /lib/systemd/systemd --system --unit=egr.target --log-target=null
EOF
	chmod +x "$SD/init.sh" || return 1
	# (not a job of the suite's shell: sd_down ends it by its cgroup)
	(sh -c 'echo $$ >"$0/cgroup.procs" && exec unshare --cgroup --pid --mount --fork --kill-child "$1"' \
		"$SD_CG" "$SD/init.sh" >"$SD/init.out" 2>&1 &)
	wait_secs 20 sd_running || { echo "systemd did not come up: $(tail -3 "$SD/init.out")"; return 1; }
}

sd_down() {
	[ -d "$SD_CG" ] || return 0
	find "$SD_CG" -type d -exec stat -c '%i %n' {} + >>"$W/cgids" 2>/dev/null
	echo 1 >"$SD_CG/cgroup.kill" 2>/dev/null
	wait_secs 10 grep -qs '^populated 0$' "$SD_CG/cgroup.events"
	find "$SD_CG" -depth -type d -exec rmdir {} \; 2>/dev/null
}
