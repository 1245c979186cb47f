"""Running a process as an ordinary user, for the tests of what other processes of the same
user can read (``/proc/PID/environ``): root reads any process, whatever it set.

Not root: the tests' own user, as it is. Root (CI): ``nobody``, through util-linux's
``setpriv``, keeping one capability, ``CAP_DAC_READ_SEARCH``, inherited by what it starts, so
that it reads the interpreter, the checkout and the test's folders wherever they are (a pyenv
under a 0700 ``/root``, ``tmp_path`` under a 0700 folder). That capability passes the file
modes of ``/proc/PID/environ`` too, so what keeps such a process out of another one's
environment is the kernel's ptrace check alone — the one a non-dumpable process changes
(``PR_SET_DUMPABLE``); without ``CAP_SYS_PTRACE`` it cannot pass it. Folders it must write
are given to it with :func:`give_to_user`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.require import missing

NOBODY = 65534


@functools.cache
def _setpriv_prefix() -> tuple[str, ...] | None:
    """``setpriv`` arguments that run a command as ``nobody`` (see the module docstring),
    None when this machine cannot."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = (
        setpriv,
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--inh-caps=-all,+dac_read_search",
        "--ambient-caps=-all,+dac_read_search",
    )
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import os; print(os.geteuid())"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return prefix if probe.returncode == 0 and probe.stdout.strip() == str(NOBODY) else None


def as_user(argv: list[str]) -> list[str]:
    """``argv`` run as an ordinary user (skips, group ``setpriv``, when root cannot become one)."""
    if not sys.platform.startswith("linux"):
        missing("setpriv", "Linux (/proc and prctl)")
    if os.geteuid() != 0:
        return list(argv)
    prefix = _setpriv_prefix()
    if prefix is None:
        missing("setpriv", "util-linux's setpriv able to run a command as nobody (root's tests)")
    return [*prefix, *argv]


def give_to_user(*paths: Path) -> None:
    """Make ``paths`` (and what they hold) the :func:`as_user` user's, when that is ``nobody``."""
    if os.geteuid() != 0:
        return
    for path in paths:
        for root, dirs, files in os.walk(path):
            os.chown(root, NOBODY, NOBODY)
            for name in [*dirs, *files]:
                os.chown(os.path.join(root, name), NOBODY, NOBODY, follow_symlinks=False)
