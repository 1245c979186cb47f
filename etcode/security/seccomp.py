"""The seccomp filter bubblewrap installs in the sandbox (``bwrap --seccomp FD``): a
classic BPF program that makes ``socket(AF_UNIX, …)`` fail with ``EPERM``, so a sandboxed
command cannot connect to a host service (the Docker socket, the D-Bus session bus, an SSH
agent) whatever the file system shows; ``io_uring_setup`` fails too (its requests bypass
seccomp). ``socketpair`` stays allowed: an unnamed pair reaches nothing outside, and node
and Python's multiprocessing need it. Syscalls of another ABI (i386, x32) kill the process:
their socket call numbers differ and would slip past the check. The filter is written as
sandbox-runtime's (Claude Code) is; libseccomp's bindings are not on PyPI."""

from __future__ import annotations

import errno
import os
import platform
import struct
from functools import lru_cache

# BPF opcodes (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_KILL_PROCESS = 0x80000000
_X32_BIT = 0x40000000
_AF_UNIX = 1
_IO_URING_SETUP = 425  # the same number on x86_64 and aarch64
# struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6] (little-endian machines here).
_NR, _ARCH, _ARG0 = 0, 4, 16
#: machine → (AUDIT_ARCH_*, socket's syscall number)
ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}


def unsupported_machine() -> str | None:
    """This machine's name when the filter is not written for it (None: it is)."""
    machine = platform.machine()
    return None if machine in ARCHES else machine


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@lru_cache(maxsize=2)
def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """The filter's ``struct sock_filter`` array for this machine (None: not supported)."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, socket_nr = arch
    refuse = _ERRNO | errno.EPERM
    program = [
        _insn(_LD_W_ABS, _ARCH),
        _insn(_JEQ_K, audit_arch, 0, 8),  # another ABI → kill
        _insn(_LD_W_ABS, _NR),
        _insn(_JGE_K, _X32_BIT, 6, 0),  # x32 syscall numbers → kill
        _insn(_JEQ_K, _IO_URING_SETUP, 4, 0),  # → EPERM
        _insn(_JEQ_K, socket_nr, 0, 2),  # not socket → allow
        _insn(_LD_W_ABS, _ARG0),  # the domain (an int: the low word)
        _insn(_JEQ_K, _AF_UNIX, 1, 0),  # AF_UNIX → EPERM
        _insn(_RET_K, _ALLOW),
        _insn(_RET_K, refuse),
        _insn(_RET_K, _KILL_PROCESS),
    ]
    return b"".join(program)


def filter_fd() -> int | None:
    """A readable file descriptor holding the filter, at offset 0 (for ``--seccomp``;
    the caller closes it once bwrap has started). None on an unsupported machine."""
    program = unix_socket_filter()
    if program is None:
        return None
    fd = os.memfd_create("etcode-seccomp", os.MFD_CLOEXEC)  # pass_fds makes it inherited
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
