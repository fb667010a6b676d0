"""What a sweep needs from its surroundings, checked in the launching process before the
parent run is created, each in seconds, each as one :class:`ConfigError` with the fix.

- :func:`check_launcher`: the launcher the command chose can start jobs here: SLURM
  (``hydra/launcher=slurm``) needs ``sbatch`` on the PATH; Ray (``ray_cluster``) needs Ray
  importable; submitit's launchers need ``hydra_plugins.hydra_submitit_launcher``.
- :func:`check_sweep_folder`: the sweep folder can be created and written (a read-only folder
  used to fail after the parent run started, leaving it RUNNING).
- :func:`check_tracking_server`: the tracking URI's scheme is one MLflow stores runs in
  (``foo://bar`` got MLflow's model-registry message after the sweep folder existed); an
  ``http(s)`` tracking URI answers within a few seconds
  (MLflow's client retries a refused connection for minutes and then prints a long exception).
  Messages name the URI without credentials (:func:`dp_arena.redact.without_credentials`).
- :func:`nothing_runs`: the message for a sweep whose every job is n/a or a duplicate.
"""

from __future__ import annotations

import importlib.util
import shutil
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from dp_arena.errors import ConfigError
from dp_arena.redact import without_credentials
from dp_arena.sweep.records import SweepPlan

#: Seconds the tracking server has to answer the pre-check.
SERVER_TIMEOUT_S = 5.0


def check_launcher(target: str | None) -> None:
    """Refuse a launcher that cannot start jobs on this machine (see the module docstring)."""
    target = target or ""
    if "submitit" in target and importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") \
            is None:
        raise ConfigError("the submitit launcher (hydra/launcher=slurm or slurm_local) is not "
                          "installed", "pip install hydra-submitit-launcher")
    if "SlurmLauncher" in target and shutil.which("sbatch") is None:
        raise ConfigError("hydra/launcher=slurm needs SLURM, but there is no sbatch on this "
                          "machine's PATH",
                          "run on a SLURM login node, or try the same code path here with "
                          "hydra/launcher=slurm_local (or drop hydra/launcher for the default)")
    if "ray_launcher" in target and importlib.util.find_spec("ray") is None:
        raise ConfigError("hydra/launcher=ray_cluster needs Ray, which is not installed",
                          'pip install "dp-arena[ray]" (or drop hydra/launcher for the default)')


def check_sweep_folder(sweep_dir: Path) -> None:
    """The sweep folder can be created and a file written in it (the probe is removed)."""
    probe = sweep_dir / f".write-check-{uuid.uuid4().hex[:8]}"
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot write the sweep folder {sweep_dir} "
                          f"({exc.strerror or type(exc).__name__})",
                          "run from a folder you can write to, or set "
                          "hydra.sweep.dir=/a/writable/folder") from None


#: URI schemes MLflow stores runs in (a database scheme may name its driver: ``+driver``).
TRACKING_SCHEMES = ("file", "sqlite", "postgresql", "mysql", "mssql", "http", "https",
                    "databricks", "databricks-uc", "uc")


def tracking_scheme_problem(uri: str | None) -> str | None:
    """Why MLflow cannot store runs at ``uri`` (an unknown scheme such as ``foo://``), or
    ``None``: a plain path (no scheme, or a one-letter drive) is a folder."""
    if not uri:
        return None
    scheme = urllib.parse.urlsplit(uri).scheme.lower()
    if len(scheme) <= 1 or scheme.split("+")[0] in TRACKING_SCHEMES:
        return None
    return f"tracking.uri {without_credentials(uri)!r}: MLflow cannot store runs at a " \
           f"{scheme}:// address"


def check_tracking_server(uri: str | None, timeout_s: float = SERVER_TIMEOUT_S) -> None:
    """A tracking URI of a scheme MLflow has no store for is refused
    (:func:`tracking_scheme_problem`; MLflow's own message is about its model registry and
    came after the sweep folder existed); an ``http(s)`` tracking URI must answer MLflow's
    health endpoint within ``timeout_s`` (any HTTP answer counts: an authentication error is
    the server answering)."""
    problem = tracking_scheme_problem(uri)
    if problem:
        raise ConfigError(problem, "use sqlite:///path/to/mlflow.db, file:///a/folder or the "
                          "http(s)://host:port of an MLflow server (leave tracking.uri unset "
                          "for the local store mlflow.db)")
    if not uri or not uri.startswith(("http://", "https://")):
        return
    shown = without_credentials(uri)
    try:
        # any answer counts, so the request needs no credentials
        urllib.request.urlopen(f"{shown.rstrip('/')}/health", timeout=timeout_s).close()
    except urllib.error.HTTPError:
        return  # the server is there
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(f"the MLflow tracking server at {shown} does not answer "
                          f"({getattr(reason, 'strerror', None) or type(reason).__name__})",
                          "start it (mlflow server --host ... --port ...) or fix tracking.uri "
                          "(leave it unset for the local store mlflow.db)") from None


def nothing_runs(plan: SweepPlan) -> str | None:
    """Why nothing of a planned sweep can run, or ``None`` when some job runs."""
    if plan.total is None or plan.total > 0:
        return None
    return (f"nothing to run: every one of the sweep's {len(plan.jobs)} jobs is n/a "
            f"({len(plan.of('n/a'))}) or repeats another job\n  fix: choose a mechanism that "
            f"applies to the dataset (the n/a lines above say why each does not)")
