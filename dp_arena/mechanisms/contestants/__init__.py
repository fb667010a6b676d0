"""Third-party contestants: the adapter scripts dp-arena ships and the environments they run in.

An adapter is a thin script run by :mod:`dp_arena.mechanisms.external` *inside a contestant's own
Python environment* (never imported by dp-arena): it reads the task folder the harness wrote
(the protocol is :mod:`dp_arena.mechanisms.contestants.protocol`), calls the library, and writes a
synthetic CSV. The adapters:

- ``opendp_aim.py``, ``opendp_mst.py``: OpenDP's ``opendp.extras.mbi`` AIM and MST
  (environment ``opendp``);
- ``smartnoise_mst.py``, ``smartnoise_aim.py``: smartnoise-synth's MST and AIM (environment
  ``smartnoise``).

Environments (``dp-arena-contestants install NAME``) are virtual environments under
:func:`cache_root` with the pinned versions of :data:`ENVS`; their pins exclude each other and
dp-arena's own (``opendp[mbi]`` pins mbi 1.1; smartnoise-synth needs opendp < 0.15 and
mbi < 2; dp-arena needs mbi >= 2), so each gets its own.

A contestant's process sees only :func:`allowed_environment`: an allow-list
(:data:`KEPT_VARIABLES`: search path, home, locale, time zone, the thread limits of
:data:`THREAD_VARIABLES`) plus what the protocol sets, never the harness's own settings
(``DP_ARENA_*``, ``MLFLOW_*``, the secret file's path, cloud credentials), inside the
operating-system sandbox of :mod:`dp_arena.sandbox`. What each contestant claims (guarantee,
what it reads from the data, whose accounting) is :mod:`.claims`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

#: Environment name -> the pinned requirements ``dp-arena-contestants install`` installs.
ENVS: dict[str, tuple[str, ...]] = {
    # mbi 1.1's synthetic_data needs pandas, which opendp[mbi] does not bring
    "opendp": ("opendp[mbi]==0.16.0", "pandas==2.3.3"),
    # opacus (dpctgan, patectgan) needs torch: pinned to 2.13.0, a CPU build (an unpinned
    # torch resolves to a CUDA build of several GB); opacus 0.14 imports packaging, undeclared
    "smartnoise": ("smartnoise-synth==1.0.8", "torch==2.13.0", "packaging==25.0"),
    # DataSynthesizer 0.1.13 pins nothing: its dependencies pinned as resolved beside numpy 2;
    # opendp for the adapter's noisy row count (datasynthesizer_privbayes.py)
    "datasynthesizer": ("DataSynthesizer==0.1.13", "numpy==2.4.6", "pandas==2.3.3",
                        "scikit-learn==1.9.1", "scipy==1.17.1", "matplotlib==3.11.2",
                        "seaborn==0.13.2", "opendp==0.16.0"),
    # dpmm 0.1.9 pins numpy 1.26.4, pandas 2.1.0, scikit-learn 1.5.0, opendp 0.12.1 and
    # Python >= 3.10, < 3.12 (see PYTHONS); the rest pinned as resolved
    "dpmm": ("dpmm==0.1.9", "scipy==1.17.1", "networkx==2.8.8", "tqdm==4.70.1"),
}
#: Environment name -> the Python versions it builds on, [low, high) as (major, minor) (from
#: the package's ``Requires-Python``); an environment not listed builds on any.
PYTHONS: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {"dpmm": ((3, 10), (3, 12))}


def platform_problem(name: str, version: tuple[int, ...] | None = None) -> str | None:
    """Why the environment ``name`` cannot be built with this interpreter (``version``:
    default ``sys.version_info``), or ``None``: its :data:`PYTHONS` range."""
    import sys

    if name not in PYTHONS:
        return None
    (low, high), got = PYTHONS[name], tuple((version or sys.version_info)[:2])
    if low <= got < high:
        return None
    return (f"the environment {name!r} needs Python >= {low[0]}.{low[1]} and < "
            f"{high[0]}.{high[1]} (its package's Requires-Python); this interpreter is "
            f"{got[0]}.{got[1]}")
#: The file an installed environment holds (its pins and ``pip freeze``); written last.
MANIFEST = "dp-arena-env.json"
ADAPTER_DIR = Path(__file__).resolve().parent
#: The thread-pool limits a run's isolated child sets (:mod:`dp_arena.run.isolation`); a
#: contestant inherits them.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
#: What a contestant's environment keeps from the harness's (:func:`allowed_environment`).
KEPT_VARIABLES = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ",
                  *THREAD_VARIABLES)


def allowed_environment(environ: Mapping[str, str], extra: Mapping[str, str],
                        keep: Iterable[str] = KEPT_VARIABLES) -> dict[str, str]:
    """The variables of ``environ`` named in ``keep``, then ``extra`` (the protocol's own):
    an allow-list, so a setting the harness gains later stays out too."""
    allowed = set(keep)
    return {**{k: v for k, v in environ.items() if k in allowed}, **extra}


def cache_root() -> Path:
    """Where environments live: ``$DP_ARENA_CONTESTANTS``, else
    ``$XDG_CACHE_HOME/dp-arena/contestants`` (default ``~/.cache/dp-arena/contestants``)."""
    explicit = os.environ.get("DP_ARENA_CONTESTANTS")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dp-arena" / "contestants"


def env_dir(name: str) -> Path:
    return cache_root() / name


def env_python(name: str) -> Path:
    return env_dir(name) / "bin" / "python"


def manifest(name: str) -> dict | None:
    """The installed environment's manifest (pins, freeze), or ``None`` if not installed."""
    path = env_dir(name) / MANIFEST
    if not (path.is_file() and env_python(name).exists()):
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def adapter_path(name: str) -> Path:
    """The shipped adapter script ``NAME.py``."""
    return ADAPTER_DIR / f"{name}.py"
