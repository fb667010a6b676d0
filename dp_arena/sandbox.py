"""An operating-system sandbox for a contestant's command (bubblewrap, ``bwrap``).

:func:`sandboxed` wraps a command so that it runs

- in its own PID namespace (``/proc`` shows only the sandbox's processes; bubblewrap is the
  namespace's init, and ``--die-with-parent`` kills it with the process that started it: when
  the init ends, the kernel kills every process left in the namespace, a double-forked
  ``setsid`` grandchild included), its own network (loopback only), IPC and UTS namespaces;
- under its own user id: as root, ``setpriv`` drops to ``nobody`` with no capabilities and
  ``no_new_privs`` before the command starts; otherwise in a user namespace of its own (the
  same user id outside: the mount view, not the file permissions, hides the harness's files);
- on a view of the file system made of read-only binds only: the system (``/usr``, ``/etc``,
  the library folders, the CPU topology), the interpreter's installation and environment, the
  script and the protocol helper, and one writable bind, the contestant's private folder
  (``HOME`` and ``TMPDIR`` point into it), besides an empty ``/dev/shm`` of its own (256 MiB;
  ``/tmp`` is an empty folder it cannot write to, so no other memory-backed files). Nothing
  else of the host (home, key file, state folder, tracking store, the checkout) exists in it.

:func:`find_sandbox` says whether this machine can do that (bubblewrap found, and a trial
sandbox runs); :attr:`Sandbox.description` is what ``dp-arena-contestants doctor`` says, and
:attr:`Sandbox.label` (short and stable, for a board) the ``contestant.isolation`` run tag.

Ground floor: imports nothing from the project but its errors.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: ``contestant.isolation``: ``sandbox`` (refuse to run without it) or ``none`` (knowingly).
ISOLATIONS = ("sandbox", "none")
#: The system folders shown read-only (those that exist).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Size of the sandbox's own ``/dev/shm`` (memory that the run's memory limit, which counts
#: processes' resident memory, does not see).
SHM_BYTES = 256 * 2**20
#: The CPU topology (read by thread pools, e.g. torch's and OpenMP's); shown read-only.
CPUS = "/sys/devices/system/cpu"
#: Written on a run whose contestant ran with ``contestant.isolation=none``.
NO_ISOLATION = "none (contestant.isolation=none)"


@dataclass(frozen=True)
class Sandbox:
    """What this machine offers: ``bwrap``'s path ("" if none), the user id contestants run
    as when the harness is root (``None``: a user namespace of the harness's user), and why
    there is no sandbox ("" when there is one)."""

    bwrap: str = ""
    uid: int | None = None
    problem: str = ""

    @property
    def available(self) -> bool:
        return bool(self.bwrap) and not self.problem

    @property
    def label(self) -> str:
        """The run tag ``contestant.isolation``: ``bubblewrap, as nobody`` (the harness is
        root), ``bubblewrap, own user namespace``, or ``no sandbox``."""
        if not self.available:
            return "no sandbox"
        return "bubblewrap, as nobody" if self.uid is not None else \
            "bubblewrap, own user namespace"

    @property
    def description(self) -> str:
        """One line: which isolation a contestant runs under."""
        if not self.available:
            return f"no sandbox ({self.problem})"
        who = f"as uid {self.uid} (nobody)" if self.uid is not None else \
            "in its own user namespace (same user id outside)"
        return (f"bubblewrap: own PID, network, IPC namespaces, {who}, read-only system, "
                "writable private folder only")


def nobody_uid() -> int:
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return 65534


def nobody_gid() -> int:
    try:
        return pwd.getpwnam("nobody").pw_gid
    except KeyError:
        return 65534


def drop_to_nobody() -> list[str]:
    """``setpriv`` to ``nobody`` with no capabilities, groups or new privileges (as root)."""
    return ["setpriv", f"--reuid={nobody_uid()}", f"--regid={nobody_gid()}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def sandboxed(command: list[str], folder: Path, read_only: Iterable[Path],
              sandbox: Sandbox) -> list[str]:
    """``command`` run by bubblewrap (module docstring): ``folder`` writable at its own path,
    ``read_only`` (files or folders) and the system folders read-only, the working directory
    ``folder``."""
    args = [sandbox.bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            "--hostname", "contestant"]
    if sandbox.uid is None:
        args += ["--unshare-user", "--uid", str(nobody_uid()), "--gid", str(nobody_gid())]
    for path in SYSTEM:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
             "--perms", "0555", "--tmpfs", "/tmp",  # not writable: memory outside the limit
             "--ro-bind-try", CPUS, CPUS,  # CPU topology
             "--setenv", "HOME", str(folder / "tmp")]  # caches a library writes under ~
    shown = sorted({str(Path(p)) for p in read_only})
    for parent in parents([*shown, str(folder)]):  # bwrap would make them 0700: root's only
        args += ["--perms", "0755", "--dir", parent]
    for path in shown:
        args += ["--ro-bind", path, path]
    args += ["--bind", str(folder), str(folder), "--chdir", str(folder), "--"]
    return args + (drop_to_nobody() if sandbox.uid is not None else []) + list(command)


def parents(paths: Iterable[str]) -> list[str]:
    """The folders above ``paths`` that the sandbox's own root must hold (not ``/``, ``/tmp``
    or inside a system folder), top first."""
    found = set()
    for path in paths:
        for parent in Path(path).parents:
            if len(parent.parts) > 1 and str(parent) != "/tmp" and \
                    not any(str(parent) == s or str(parent).startswith(s + "/") for s in SYSTEM):
                found.add(str(parent))
    return sorted(found, key=lambda p: (p.count("/"), p))


def interpreter_roots(python: str) -> list[Path]:
    """The folders an interpreter needs: its environment (the folder above ``bin``), the
    installation its executable resolves to and a virtual environment's base (``home`` in
    ``pyvenv.cfg``). A root of ``/`` is never returned (it would show the whole machine)."""
    exe = Path(python)
    roots = {exe.parent.parent, exe.resolve().parent.parent}
    config = exe.parent.parent / "pyvenv.cfg"
    if config.is_file():
        for line in config.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                home = Path(value.strip())
                roots |= {home.parent, home.resolve().parent}
    return sorted(r for r in roots if len(r.parts) > 1 and r.exists())


def owned_by_nobody(folder: Path) -> None:
    """Hand ``folder`` and everything in it to ``nobody`` (as root, before a sandboxed run)."""
    uid, gid = nobody_uid(), nobody_gid()
    for path in (folder, *folder.rglob("*")):
        os.chown(path, uid, gid, follow_symlinks=False)


@functools.cache
def find_sandbox() -> Sandbox:
    """Whether this machine can run a contestant in the sandbox (cached per process): ``bwrap``
    on ``PATH``, ``setpriv`` when root, and a trial sandbox that runs ``true``."""
    bwrap = shutil.which("bwrap") or ""
    if not bwrap:
        return Sandbox(problem="bubblewrap (bwrap) is not installed")
    root = os.geteuid() == 0
    if root and not shutil.which("setpriv"):
        return Sandbox(bwrap, problem="setpriv (util-linux) is not installed")
    sandbox = Sandbox(bwrap, nobody_uid() if root else None)
    true = shutil.which("true") or "/bin/true"
    trial = sandboxed([true], Path("/tmp"), [], sandbox)
    try:
        done = subprocess.run(trial, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Sandbox(bwrap, problem=f"a trial sandbox did not run ({type(exc).__name__})")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return Sandbox(bwrap, problem="a trial sandbox failed: " + (said[-1] if said else
                                                                      f"exit {done.returncode}"))
    return sandbox
