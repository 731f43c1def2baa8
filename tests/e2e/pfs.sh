# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The kernel's knobs through other mounts of their filesystems, for the
# suites that try them as root (sudo.sh's pseudofs, cisudo.sh's confined):
# pfs_mount makes, under $W/pfs in the suite's own mount namespace, a
# second procfs, binds of /proc and /proc/sys, a second sysfs, and
# securityfs, tracefs, debugfs, configfs, binfmt_misc, pstore and efivarfs
# where the kernel has them and lets them be mounted (a `note` says which
# not, and the attempts on them are left out); PFS is then the attempts of
# clients/kfprobe.py on them. Those write back only the value they read
# (core_pattern, tracing_on, binfmt_misc's status) or bump the port sysctl
# of the caller's network namespace (the test netns: never the host's) and
# put it back at once; everything else is opened, never written. The
# suite unmounts $W/pfs with e2e_umount_under at the end of its test, and
# lib.sh's e2e_cleanup unmounts everything under $W when a run ends
# early, before anything there is removed. Sourced after lib.sh, by a
# suite that defines R (its read_probe) and a_escape TAG NAME.

PFS_TYPES="securityfs tracefs debugfs configfs binfmt_misc pstore efivarfs"	# securityfs first: lockdown
PFS=()	# the probe's attempts, NAME=OP:PATH (clients/kfprobe.py)

pfs_mount() {
	local d=$W/pfs t f
	PFS=()
	mkdir -m 0755 "$d" "$d/proc" "$d/procbind" "$d/procsys" "$d/sys" || return 1
	mount -t proc proc "$d/proc" && mount --bind /proc "$d/procbind" &&
		mount --bind /proc/sys "$d/procsys" && mount -t sysfs sysfs "$d/sys" || return 1
	for t in proc procbind; do
		PFS+=("$t.core_pattern=rewrite:$d/$t/sys/kernel/core_pattern"
			"$t.port_start=bump:$d/$t/sys/net/ipv4/ip_unprivileged_port_start"
			"$t.keys=visible:$d/$t/keys")
		[ -e "$d/$t/sysrq-trigger" ] && PFS+=("$t.sysrq=open-w:$d/$t/sysrq-trigger")
	done
	PFS+=("procsys.core_pattern=rewrite:$d/procsys/kernel/core_pattern"
		"procsys.port_start=bump:$d/procsys/net/ipv4/ip_unprivileged_port_start"
		"sysfs.rw=rw-mount:$d/sys" "sysfs.firmware=visible:$d/sys/firmware")
	for f in kernel/mm/transparent_hugepage/enabled module/printk/parameters/time kernel/uevent_helper; do
		[ -e "$d/sys/$f" ] && { PFS+=("sysfs.knob=open-w:$d/sys/$f"); break; }
	done
	for t in $PFS_TYPES; do
		if ! grep -qw "$t" /proc/filesystems; then
			note "pseudofs: this kernel has no $t"
			continue
		fi
		mkdir -m 0755 "$d/$t" || return 1
		if ! mount -t "$t" "$t" "$d/$t" 2>"$W/pfs-$t.err"; then
			note "pseudofs: $t cannot be mounted here: $(head -c 200 "$W/pfs-$t.err" | tr '\n' ' ')"
			continue
		fi
		PFS+=("$t.rw=rw-mount:$d/$t")
		case $t in
		tracefs) PFS+=("tracefs.tracing_on=rewrite:$d/$t/tracing_on" "tracefs.visible=visible:$d/$t") ;;
		debugfs)
			PFS+=("debugfs.visible=visible:$d/$t")
			# kernel lockdown (integrity and up) refuses every debugfs
			# open for writing, root's included: no control possible
			if grep -q '\[none\]' "$d/securityfs/lockdown" 2>/dev/null || [ ! -e "$d/securityfs/lockdown" ]; then
				[ -e "$d/$t/fault_around_bytes" ] && PFS+=("debugfs.knob=open-w:$d/$t/fault_around_bytes")
			else
				note "pseudofs: lockdown is $(grep -o '\[[a-z]*\]' "$d/securityfs/lockdown"): debugfs refuses writes to root too, only its hiding is tested"
			fi
			;;
		binfmt_misc) PFS+=("binfmt_misc.status=status:$d/$t/status" "binfmt_misc.register=open-w:$d/$t/register") ;;
		securityfs) [ -e "$d/$t/lockdown" ] && PFS+=("securityfs.lockdown=open-w:$d/$t/lockdown") ;;
		esac
	done
}

# a_pfs_refused TAG NAME: refused, and where a file was opened for writing
# with EROFS, EACCES or ENOENT (the masks and covers answer with data)
a_pfs_refused() {
	local r=${R[$2]:-missing}
	a_escape "$1" "$2"
	case $2 in
	*.rw | *.visible | *.keys | *.firmware) ;;
	*) [[ $r =~ ^false\ (EROFS|EACCES|ENOENT) ]] && ok "$1.$2.errno" || fail "$1.$2.errno" "$r" ;;
	esac
}
