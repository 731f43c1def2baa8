#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The known ways a root inside the cgroup could leave it (tests/e2e/sudo.sh).

  rootprobe.py --egr-pid PID --outside PID --dst ADDR [--only NAME,...]

Runs every attempt and prints one JSON line each: {"name": ..., "ok": bool,
"errno": "EPERM"|..., "data": ...}. "ok" means the step that would lead out
worked. Nothing here undoes what an attempt did; each attempt is harmless
where it works (run the control half in a network namespace and a mount
namespace of the test's own): it mounts on a directory of its own, adds
and deletes an nftables table, sends one ICMP echo to ADDR, reads pids.
"""
import ctypes
import errno
import json
import os
import socket
import subprocess
import sys
import tempfile

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"bpf": 321, "finit_module": 313, "init_module": 175, "delete_module": 176,
      "kexec_load": 246, "setns": 308, "unshare": 272, "ptrace": 101, "fsopen": 430,
      "open_tree": 428, "mount_setattr": 442, "pidfd_open": 434, "pidfd_getfd": 438,
      "process_vm_readv": 310, "open_by_handle_at": 304, "move_mount": 429, "fsconfig": 431,
      "fsmount": 432, "fspick": 433, "open_tree_attr": 467}
AT_FDCWD, AT_EMPTY_PATH, OPEN_TREE_CLONE, MOUNT_ATTR_RDONLY = -100, 0x1000, 1, 1
FSCONFIG_CMD_CREATE, MOVE_MOUNT_F_EMPTY_PATH, MNT_DETACH = 6, 4, 2


def mount_attr(set_=0, clr=0):
    """struct mount_attr: attr_set, attr_clr, propagation, userns_fd (u64 each)"""
    return ctypes.create_string_buffer(
        set_.to_bytes(8, "little") + clr.to_bytes(8, "little") + bytes(16), 32)


def close_fd(fd):
    if fd >= 0:
        os.close(fd)


def open_w_at(dirfd, rel):
    """open dirfd/rel for writing and close it unwritten: (ok, errno name)"""
    try:
        os.close(os.open(rel, os.O_WRONLY, dir_fd=dirfd))
        return True, ""
    except OSError as x:
        return False, ename(x.errno)


def new_mount_api(want):
    """The new mount API, each call as the way to a writable core_pattern (or
    to a mount of its own) it would be: a procfs made with fsopen, fsconfig
    and fsmount; /proc picked with fspick; /proc/sys cloned with its
    read-only flag cleared (open_tree_attr, mount_setattr); a clone moved
    onto a directory of its own (move_mount, then unmounted). Every mount
    made here is detached, or unmounted at once."""
    if want("newmount_proc"):
        step, mfd = "fsopen", -1
        fd, e = sys_("fsopen", ctypes.c_char_p(b"proc"), 0)
        if fd >= 0:
            step = "fsconfig"
            r, e = sys_("fsconfig", fd, FSCONFIG_CMD_CREATE, 0, 0, 0)
            if r == 0:
                step = "fsmount"
                mfd, e = sys_("fsmount", fd, 0, 0)
        ok, err = open_w_at(mfd, "sys/kernel/core_pattern") if mfd >= 0 else (False, ename(e))
        out("newmount_proc", ok, err, data="core_pattern" if mfd >= 0 else step)
        close_fd(mfd)
        close_fd(fd)
    if want("fspick"):
        r, e = sys_("fspick", AT_FDCWD, ctypes.c_char_p(b"/proc"), 0)
        out("fspick", r >= 0, ename(e))
        close_fd(r)
    if want("open_tree_attr"):
        r, e = sys_("open_tree_attr", AT_FDCWD, ctypes.c_char_p(b"/proc/sys"), OPEN_TREE_CLONE,
                    mount_attr(clr=MOUNT_ATTR_RDONLY), 32)
        ok, err = open_w_at(r, "kernel/core_pattern") if r >= 0 else (False, ename(e))
        out("open_tree_attr", ok, err)
        close_fd(r)
    if want("mount_setattr"):
        # on a clone of /proc/sys where open_tree works, else on /proc/sys
        # itself (the sandbox's read-only bind)
        fd = sys_("open_tree", AT_FDCWD, ctypes.c_char_p(b"/proc/sys"), OPEN_TREE_CLONE)[0]
        if fd >= 0:
            r, e = sys_("mount_setattr", fd, ctypes.c_char_p(b""), AT_EMPTY_PATH,
                        mount_attr(clr=MOUNT_ATTR_RDONLY), 32)
        else:
            r, e = sys_("mount_setattr", AT_FDCWD, ctypes.c_char_p(b"/proc/sys"), 0,
                        mount_attr(clr=MOUNT_ATTR_RDONLY), 32)
        out("mount_setattr", r == 0, ename(e), data="clone" if fd >= 0 else "/proc/sys")
        close_fd(fd)
    if want("move_mount"):
        src, dst = tempfile.mkdtemp(), tempfile.mkdtemp()
        fd = sys_("open_tree", AT_FDCWD, ctypes.c_char_p(src.encode()), OPEN_TREE_CLONE)[0]
        r, e = sys_("move_mount", fd, ctypes.c_char_p(b""), AT_FDCWD,
                    ctypes.c_char_p(dst.encode()), MOVE_MOUNT_F_EMPTY_PATH)
        out("move_mount", r == 0, ename(e))
        if r == 0:
            libc.umount2(dst.encode(), MNT_DETACH)
        close_fd(fd)
        os.rmdir(src)
        os.rmdir(dst)


def sys_(name, *args):
    r = libc.syscall(NR[name], *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return r, ctypes.get_errno() if r < 0 else 0


def ename(e):
    return errno.errorcode.get(e, str(e)) if e else ""


def out(name, ok, err="", data=""):
    print(json.dumps({"name": name, "ok": bool(ok), "errno": err, "data": data}), flush=True)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    return p.returncode, (p.stdout + p.stderr).strip()[:300]


def main():
    a = sys.argv[1:]
    egr = int(a[a.index("--egr-pid") + 1])
    dst = a[a.index("--dst") + 1]
    outside = int(a[a.index("--outside") + 1])  # a root process outside the sandbox
    only = a[a.index("--only") + 1].split(",") if "--only" in a else None

    def want(n):
        return only is None or n in only

    if want("uid"):
        out("uid", os.geteuid() == 0, data=str(os.geteuid()))
    if want("caps"):
        caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")]
        out("caps", True, data=caps[0] if caps else "")
    if want("mount_cgroup2"):
        d = tempfile.mkdtemp()
        rc, msg = run(["mount", "-t", "cgroup2", "none", d])
        out("mount_cgroup2", rc == 0, data=msg)
        if rc == 0:
            procs = os.path.join(d, "cgroup.procs")
            out("cgroupfs_procs_writable", os.access(procs, os.W_OK), data=procs)
            run(["umount", d])
        try:
            os.rmdir(d)  # (left in /tmp by every run before)
        except OSError:
            pass
    if want("fsopen"):
        r, e = sys_("fsopen", ctypes.c_char_p(b"cgroup2"), 0)
        out("fsopen", r >= 0, ename(e))
    if want("open_tree"):
        r, e = sys_("open_tree", -100, ctypes.c_char_p(b"/"), 1)  # OPEN_TREE_CLONE
        out("open_tree", r >= 0, ename(e))
    new_mount_api(want)
    if want("umount_covers"):
        rc, msg = run(["umount", "/sys/fs/cgroup"])
        out("umount_covers", rc == 0, data=msg)
    for name, pid in (("proc1_root_cgroup", 1), ("proc_outside_root_cgroup", outside)):
        # /proc/1 is the host's init without a PID namespace, ours inside;
        # an outside process is not there at all
        if not want(name):
            continue
        found = []
        for root, dirs, files in os.walk("/proc/%d/root/sys/fs/cgroup" % pid):
            if "cgroup.procs" in files:
                found.append(os.path.join(root, "cgroup.procs"))
                break
        try:
            comm = open("/proc/%d/comm" % pid).read().strip()
        except OSError as x:
            comm = ename(x.errno)
        out(name, bool(found) and os.access(found[0], os.W_OK), data="%d=%s %s" % (pid, comm, found[:1]))
    if want("bpf"):
        attr = ctypes.create_string_buffer(128)
        r, e = sys_("bpf", 11, attr, 128)  # BPF_PROG_GET_NEXT_ID
        out("bpf", r >= 0 or e == errno.ENOENT, ename(e))
    if want("unshare_net"):
        rc, msg = run(["unshare", "-n", "true"])  # in a child: this process stays where it is
        out("unshare_net", rc == 0, data=msg)
    if want("unshare_user"):
        rc, msg = run(["unshare", "-U", "-r", "true"])
        out("unshare_user", rc == 0, data=msg)
    if want("nsenter"):
        rc, msg = run(["nsenter", "-t", str(outside), "-m", "-n", "true"])
        out("nsenter", rc == 0, data=msg)
    if want("setns"):
        # in a child, which exits right after: this process never moves
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                fd = os.open("/proc/%d/ns/net" % outside, os.O_RDONLY)
                r, e = sys_("setns", fd, 0)
            except OSError as x:
                r, e = -1, x.errno
            os.write(wfd, ("%d %d" % (r, e)).encode())
            os._exit(0)
        os.close(wfd)
        r, e = (int(x) for x in (os.read(rfd, 64).decode() or "-1 0").split())
        os.close(rfd)
        os.waitpid(pid, 0)
        out("setns", r == 0, ename(e))
    if want("insmod"):
        fd = os.open("/dev/null", os.O_RDONLY)
        r, e = sys_("finit_module", fd, ctypes.c_char_p(b""), 0)
        os.close(fd)
        # ENOEXEC/EINVAL/EBADMSG: the kernel looked at the module; EPERM: never got there
        out("insmod", e != errno.EPERM, ename(e))
    if want("delete_module"):
        r, e = sys_("delete_module", ctypes.c_char_p(b"egr_no_such_module"), 0)
        out("delete_module", e != errno.EPERM, ename(e))
    if want("kexec"):
        r, e = sys_("kexec_load", 0, 0, 0, 0)
        out("kexec", e != errno.EPERM, ename(e))
    if want("nft"):
        rc, msg = run(["nft", "add", "table", "inet", "egr_escape"])
        out("nft", rc == 0, data=msg)
        if rc == 0:
            run(["nft", "delete", "table", "inet", "egr_escape"])
    if want("ip_link"):
        rc, msg = run(["ip", "link", "add", "egr-esc0", "type", "veth", "peer", "name", "egr-esc1"])
        out("ip_link", rc == 0, data=msg)
        if rc == 0:
            run(["ip", "link", "del", "egr-esc0"])
    if want("raw"):
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", (dst, 0))
            out("raw", True)
        except OSError as x:
            out("raw", False, ename(x.errno))
    if want("packet"):
        try:
            socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            out("packet", True)
        except OSError as x:
            out("packet", False, ename(x.errno))
    if want("kill_egressctl"):
        try:
            os.kill(egr, 0)
            out("kill_egressctl", True, data=str(egr))
        except OSError as x:
            out("kill_egressctl", False, ename(x.errno), str(egr))
    if want("egressctl_mem"):
        try:
            open("/proc/%d/mem" % egr, "rb").close()
            out("egressctl_mem", True)
        except OSError as x:
            out("egressctl_mem", False, ename(x.errno))
    if want("ptrace"):
        p = subprocess.Popen(["sleep", "5"])
        r, e = sys_("ptrace", 16, p.pid, 0, 0)  # PTRACE_ATTACH
        out("ptrace", r == 0, ename(e))
        p.kill()
        p.wait()
    if want("pidfd_getfd"):
        r, e = sys_("pidfd_open", os.getpid(), 0)
        if r >= 0:
            r2, e = sys_("pidfd_getfd", r, 0, 0)
            os.close(r)
            r = r2
        out("pidfd_getfd", r >= 0, ename(e))
    if want("open_by_handle"):
        r, e = sys_("open_by_handle_at", -100, ctypes.create_string_buffer(64), 0)
        out("open_by_handle", e not in (errno.EPERM,), ename(e))


main()
