"""``dp-arena-audit``: an empirical lower bound on a mechanism's epsilon (Hydra app).

One audit per command (``dp_arena/conf/audit.yaml``, Hydra RUN mode) over the same config groups as
``dp-arena``, plus ``audit.*`` (``dp_arena/conf/audit/default.yaml``)::

    dp-arena-audit dataset=titanic mechanism=independent privacy.epsilon=1
    dp-arena-audit dataset=titanic mechanism=mst privacy.epsilon=4 audit.runs=200

A mechanism defined outside the package is audited by importing the module that registers it
(``plugins``, as for sweeps)::

    # my_pkg/my_mech.py: MECHANISMS["my_mech"] = "my_pkg.my_mech:MyMech"
    # /path/to/conf/mechanism/my_mech.yaml: name: my_mech (plus its settings)
    dp-arena-audit plugins=[my_pkg.my_mech] hydra.searchpath=[file:///path/to/conf] \\
        mechanism=my_mech dataset=titanic privacy.epsilon=1

(``tests/doubles.py`` registers ``test_leaky_independent`` so, and ``tests/test_audit.py``
audits it with ``tests/conf``.)

The last line printed is ``audit: <mechanism> claimed epsilon=<E> empirical lower bound=<L>
(<C>%) runs=<N> verdict=<ok|VIOLATION>``. Exit codes: 0 ok, 3 VIOLATION (L > E), 2 bad input
or a failed run (one message, no traceback; ``DP_ARENA_DEBUG=1`` shows one). Bad input is
refused before any run and leaves no ``audits/`` folder (:func:`remove_run_folder`). See
:mod:`dp_arena.audit` for the method.
"""

from __future__ import annotations

import os
import sys
import textwrap
import traceback
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from dp_arena.audit import config_store  # noqa: F401 - registers the config schemas with Hydra (also in workers)
from dp_arena.cli.compose import refuse_bad_command
from dp_arena.errors import DPArenaError
from dp_arena.resources import config_dir

CONF_DIR = str(config_dir())
EXIT_VIOLATION = 3
EXIT_ERROR = 2


def audit_task(cfg: DictConfig) -> None:
    from dp_arena.audit.driver import run_audit  # imported here so `--help` stays fast

    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    said: list[str] = []  # the audit's first line is said when its runs start

    def echo(line: str) -> None:
        said.append(line)
        print(line, flush=True)

    try:
        result = run_audit(plain, out_dir, echo=echo)
    except DPArenaError as exc:
        if not said:  # refused before any run: the folder Hydra made holds nothing of it
            remove_run_folder(out_dir, Path.cwd())
        print(f"audit {'failed' if said else 'refused'}: {exc}", file=sys.stderr, flush=True)
        debug_trace(exc)
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        print(f"audit failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        debug_trace(exc)
        sys.exit(EXIT_ERROR)
    for line in result.summary_lines():
        print(line, flush=True)
    sys.exit(EXIT_VIOLATION if result.violation else 0)


#: What Hydra writes into a command's folder before the task runs.
HYDRA_FILES = (".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml")


def remove_run_folder(out_dir: Path, stop: Path) -> None:
    """Remove what Hydra wrote for this command (``.hydra/``'s three files, an empty log),
    then each folder left empty, from ``out_dir`` up to ``stop`` (not included): a refused
    audit leaves no ``audits/<date>/<time>/`` behind. Anything else found there stays, and so
    does the folder that holds it."""
    out_dir, stop = out_dir.resolve(), stop.resolve()
    for name in HYDRA_FILES:
        (out_dir / name).unlink(missing_ok=True)
    for log in out_dir.glob("*.log"):
        if log.is_file() and log.stat().st_size == 0:
            log.unlink()
    folders = [out_dir / ".hydra", out_dir, *out_dir.parents]
    for folder in folders:
        if folder == stop or stop not in folder.parents:
            break
        try:
            folder.rmdir()  # only an empty folder
        except OSError:
            if folder != out_dir / ".hydra":
                break


def debug_trace(exc: BaseException) -> None:
    if os.environ.get("DP_ARENA_DEBUG"):
        traceback.print_exception(exc)
        print(getattr(exc, "child_traceback", ""), file=sys.stderr)
    else:
        print("  (set DP_ARENA_DEBUG=1 to see the traceback)", file=sys.stderr)


def shortened(line: str, width: int) -> str:
    """``line`` cut to ``width`` characters (an ellipsis marks a cut)."""
    return line if len(line) <= width else line[:width - 3].rstrip() + "..."


def audit_help(conf_dir: Path) -> str:
    """``dp-arena-audit --help``: what the audit does, its settings (``dp_arena/conf/audit/default.yaml``
    with its comments), the config groups and their options, examples and exit codes (Hydra's
    stock template described Hydra, not the audit; ``--hydra-help`` still shows Hydra's)."""
    groups = sorted(p for p in conf_dir.iterdir() if p.is_dir() and p.name not in ("hydra",))
    options = [textwrap.fill(f"{g.name}: {', '.join(sorted(o.stem for o in g.glob('*.yaml')))}",
                             92, initial_indent="  ", subsequent_indent="    ")
               for g in groups]
    settings = [shortened(f"  audit.{line}", 92) for line in
                (conf_dir / "audit" / "default.yaml").read_text().splitlines()
                if line and not line.startswith((" ", "#"))]
    return "\n".join([
        "dp-arena-audit: an empirical lower bound on a mechanism's epsilon.",
        "",
        "It runs the mechanism many times on two neighbouring datasets (the private data and",
        "the same data with one constructed person, a canary), measures how well a test tells",
        "the two worlds apart from the outputs, and turns the error rates into a lower bound",
        "on epsilon with the stated confidence. A lower bound above the claimed epsilon is a",
        "VIOLATION (the mechanism leaks more than it claims); below it says nothing more than",
        "that this test found no leak. One audit per command; the runs are not a sweep.",
        "",
        "Usage: dp-arena-audit [key=value ...]   (the same config groups as dp-arena)",
        "",
        "Examples:",
        "  dp-arena-audit dataset=titanic mechanism=independent privacy.epsilon=1",
        "  dp-arena-audit dataset=titanic mechanism=mst privacy.epsilon=4 audit.runs=200",
        "  dp-arena-audit plugins=[my_pkg.my_mech] hydra.searchpath=[file:///path/to/conf] \\",
        "      mechanism=my_mech dataset=titanic privacy.epsilon=1",
        "",
        "Audit settings (audit.KEY=VALUE; dp_arena/conf/audit/default.yaml):",
        *settings,
        "",
        "Config groups (group=option):",
        *options,
        "",
        "Output: the last line is 'audit: <mechanism> claimed epsilon=<E> empirical lower",
        "bound=<L> (<C>%) runs=<N> verdict=<ok|VIOLATION>'; the runs are logged to MLflow",
        "(tracking.uri) and the audit's files go to audits/<date>/<time>/.",
        "Exit codes: 0 ok, 3 VIOLATION, 2 bad input or a failed run (one message;",
        "DP_ARENA_DEBUG=1 shows the traceback).",
        "--cfg job shows the composed config; --hydra-help shows Hydra's own help.",
    ])


def main() -> None:
    if any(a in ("--help", "-h") for a in sys.argv[1:]):
        print(audit_help(Path(CONF_DIR)))
        sys.exit(0)
    refuse_bad_command("dp-arena-audit", Path(CONF_DIR), "audit", sys.argv[1:])
    hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="audit")(audit_task)()


if __name__ == "__main__":
    main()
