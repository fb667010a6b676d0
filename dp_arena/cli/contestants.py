"""``dp-arena-contestants``: the environments third-party contestants run in.

::

    dp-arena-contestants install opendp        # OpenDP 0.16.0 with its mbi extra (opendp_aim, opendp_mst)
    dp-arena-contestants install smartnoise    # smartnoise-synth 1.0.8 (smartnoise_mst, smartnoise_aim)
    dp-arena-contestants list                  # what is installed, where, with which versions,
                                               # what each contestant claims and its isolation
    dp-arena-contestants doctor                # which isolation contestants run under here

Each environment is a virtual environment (``venv`` of this interpreter) under
:func:`dp_arena.mechanisms.contestants.cache_root` (``$DP_ARENA_CONTESTANTS``, else
``~/.cache/dp-arena/contestants``) with the pinned requirements of
:data:`dp_arena.mechanisms.contestants.ENVS`, installed by the environment's own pip. The manifest (``dp-arena-env.json``: the pins and
``pip freeze``) is written last, so a failed or interrupted install never looks installed (the
next ``install`` starts it afresh).
``install`` on an installed environment says so (``--force`` rebuilds it).

``list`` also shows each shipped contestant's claim markers
(:data:`dp_arena.mechanisms.contestants.claims.SHIPPED`): its guarantee and accountant, what it reads
from the private data outside its budget (``domain``, ``bins``, ``row_count``, or ``none``), and
whether its budget is checked by dp-arena's ledger or declared (passed by the adapter, or the
library's own accounting). The same facts tag every run (``claim.*``). ``list`` and ``doctor``
say which isolation contestants run under on this machine (:mod:`dp_arena.sandbox`); every
contestant run is tagged with it (``contestant.isolation``). ``doctor`` exits non-zero when
there is no sandbox (contestants are then refused unless ``contestant.isolation=none``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import venv
from pathlib import Path

from dp_arena.cli.exits import EXIT_INVALID
from dp_arena.errors import ConfigError
from dp_arena.mechanisms.contestants import (
    ENVS,
    MANIFEST,
    cache_root,
    env_dir,
    env_python,
    manifest,
    platform_problem,
)
from dp_arena.sandbox import find_sandbox
from dp_arena.mechanisms.contestants.claims import SHIPPED

#: The versions of interest shown by ``list`` (the rest of ``pip freeze`` is in the manifest).
KEY_PACKAGES = ("opendp", "mbi", "private-pgm", "smartnoise-synth", "smartnoise-sql", "numpy",
                "pandas", "polars", "jax", "torch")


def build(name: str, force: bool = False, echo=print) -> Path:
    """Build the environment ``name`` (see the module docstring); returns its folder."""
    target = env_dir(name)
    problem = platform_problem(name)
    if problem:
        raise ConfigError(f"cannot build {name}: {problem}",
                          "run dp-arena-contestants from a dp-arena installed with a Python "
                          "in that range (e.g. a Python 3.11 venv)")
    if manifest(name) is not None and not force:
        echo(f"{name}: already installed in {target} (--force rebuilds it)")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    echo(f"{name}: creating a virtual environment in {target}")
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    python = env_python(name)
    echo(f"{name}: installing {' '.join(ENVS[name])} (this can take minutes)")
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    *ENVS[name]], check=True)
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], check=True,
                            capture_output=True, text=True).stdout.split()
    version = subprocess.run([str(python), "-c", "import sys; print(sys.version.split()[0])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (target / MANIFEST).write_text(json.dumps({
        "name": name, "requirements": list(ENVS[name]), "python": version,
        "freeze": freeze, "installed": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=1))
    echo(f"{name}: installed in {target} ({time.monotonic() - started:.0f} s); python: "
         f"{env_python(name)}")
    return target


def listing() -> list[str]:
    """One line per known environment: installed (where, key versions) or how to install."""
    lines = [f"contestant environments in {cache_root()}:"]
    for name, pins in ENVS.items():
        info = manifest(name)
        if info is None:
            lines.append(f"  {name:<11} not installed  (dp-arena-contestants install {name}; "
                         f"pins {' '.join(pins)})")
            continue
        versions = {line.split("==")[0].lower(): line.split("==")[1]
                    for line in info.get("freeze", []) if "==" in line}
        shown = ", ".join(f"{k} {versions[k]}" for k in KEY_PACKAGES if k in versions)
        lines.append(f"  {name:<11} installed {info.get('installed', '?')}  python "
                     f"{info.get('python', '?')}  {shown}  ({env_dir(name)})")
    return lines + [""] + claim_listing() + ["", *isolation_lines()]


def isolation_lines() -> list[str]:
    """Which isolation every contestant (shipped or ``external``) runs under here."""
    found = find_sandbox()
    lines = [f"isolation of every contestant on this machine: {found.description}"]
    if not found.available:
        lines.append("  contestants are refused; fix: apt-get install bubblewrap (or run one "
                     "unsandboxed knowingly: contestant.isolation=none, tagged on its runs)")
    return lines


def claim_listing() -> list[str]:
    """One line per shipped contestant: its environment and its claim markers."""
    lines = ["contestants and what each claims (run tags claim.*):"]
    for name, adapter in SHIPPED.items():
        state = "installed" if manifest(adapter.env) is not None else "not installed"
        lines.append(f"  {name:<15} env {adapter.env} ({state}): {adapter.claim.markers()}")
        if adapter.claim.note:
            lines.append(f"  {'':<15} {adapter.claim.note}")
    lines.append("  external        your script: claim from mechanism.claim (default: "
                 "guarantee undeclared; reads from data: unknown; budget declared)")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dp-arena-contestants",
                                     description="Environments of third-party contestants.")
    sub = parser.add_subparsers(dest="command", required=True)
    install = sub.add_parser("install", help="build a contestant's environment")
    install.add_argument("names", nargs="+", choices=sorted(ENVS))
    install.add_argument("--force", action="store_true", help="rebuild if installed")
    sub.add_parser("list", help="show the installed environments and each contestant's claim")
    sub.add_parser("doctor", help="say which isolation contestants run under on this machine")
    args = parser.parse_args(argv)
    if args.command == "list":
        print("\n".join(listing()))
        return
    if args.command == "doctor":
        print("\n".join(isolation_lines()))
        if not find_sandbox().available:
            sys.exit(EXIT_INVALID)
        return
    for name in args.names:
        try:
            build(name, args.force)
        except subprocess.CalledProcessError as exc:
            print(f"dp-arena-contestants: installing {name} failed (exit code "
                  f"{exc.returncode}); nothing was installed\n  fix: check the network or "
                  "the package index (pip's output above), then run the command again",
                  file=sys.stderr)
            sys.exit(EXIT_INVALID)
        except ConfigError as exc:
            print(f"dp-arena-contestants: {exc}", file=sys.stderr)
            sys.exit(EXIT_INVALID)


if __name__ == "__main__":
    main()
