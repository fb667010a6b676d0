"""The external contestant double (tests/contestant_double.py), a small record-level table, a
fit, the double's probes (printed on its output: ``DP_ARENA_DEBUG=1`` shows it on stderr) and
the skip where no contestant sandbox can run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dp_arena.data.datasets import PROJECT_ROOT, Dataset
from dp_arena.data.schema import Column, RunSpec, Schema
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.sandbox import find_sandbox
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.contestants import ADAPTER_DIR
from dp_arena.mechanisms.external import FOLDER_PREFIX

DOUBLE = str(PROJECT_ROOT / "tests" / "contestant_double.py")
BUDGET = Budget(1.0, 1e-6)


def leftovers(folder: Path, wait: float = 5.0) -> list[str]:
    """Private folders still under ``folder`` after up to ``wait`` s (the guardian is async)."""
    deadline = time.monotonic() + wait
    while True:
        found = sorted(p.name for p in folder.glob(FOLDER_PREFIX + "*"))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def record_data(n: int = 400, public: bool = False, seed: int = 3) -> Dataset:
    rng = np.random.default_rng(seed)  # test data, not a mechanism's noise
    schema = Schema((Column("a", "categorical", values=(0, 1, 2)),
                     Column("b", "categorical", values=("x", "y"), dtype="str"),
                     Column("c", "numeric", min=0, max=100, bins=(10, 50))),
                    (RunSpec(1.0, 1e-6, max_records=5000),))

    def frame(size: int) -> pd.DataFrame:
        return pd.DataFrame({"a": rng.choice(3, size, p=[0.7, 0.2, 0.1]),
                             "b": rng.choice(["x", "y"], size),
                             "c": rng.integers(0, 101, size)})
    return Dataset("rec", schema, frame(n), frame(n) if public else None, unit="record")


def double(mode: str = "ok", **options) -> object:
    return make_mechanism("external", {"script": DOUBLE, "args": [str(ADAPTER_DIR)],
                                       "options": {"mode": mode, **options}})


def fit(mech, data: Dataset, accountant: str = "gdp",
        budget: Budget = BUDGET) -> tuple[pd.DataFrame, Ledger]:
    release = Releaser.for_budget(budget, accountant)
    out = mech.fit_sample(data, budget, release, np.random.default_rng())
    return out, release.ledger


def probe(text: str, kind: str = "PROBE") -> dict:
    """The double's one ``PROBE``/``ENV_PROBE`` line in ``text`` (captured stderr), parsed."""
    [line] = [ln for ln in text.splitlines() if ln.startswith(kind + " ")]
    return json.loads(line.removeprefix(kind + " "))


def sandbox_or_skip() -> None:
    """Skip a test that runs a contestant where no sandbox can run (the reason said); on CI
    (``CI=true``, where ``.ci/run`` installs bubblewrap) fail instead."""
    import pytest

    found = find_sandbox()
    if found.available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run contestants sandboxed: {found.problem}")
    pytest.skip(f"no contestant sandbox on this machine: {found.problem} (apt-get install "
                "bubblewrap)")
