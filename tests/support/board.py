"""Hand-made runs as ``load_runs`` returns them, and reading Markdown boards back."""

from __future__ import annotations

import math
import re

import pandas as pd


def run(mech: str, eps: float, trial: int, score: float | None, status: str = "FINISHED",
        reference: str = "", tuning: str = "", private: str = "true", hp: str = "-",
        start: int = 0, reason: str = "", key: str | None = None, seconds: float = 1.0,
        **tags: object) -> dict:
    """One run as ``load_runs`` returns it; ``tags`` adds the newer tags (delta, privacy_unit,
    dataset_id, ``metric_key/<name>``, noise, ...) and extra scores."""
    return {**tags, "run_id": f"{mech}-{eps}-{trial}-{start}", "status": status,
            "start_time": start,
            "mechanism": mech, "hyperparameters": hp, "tuning": tuning, "private": private,
            "epsilon": eps, "trial": trial, "reference": reference,
            "run_key": key or f"{mech}|{hp}|{tuning}|{eps}|{trial}", "failure_reason": reason,
            "tuning_chosen": "", "kmarginal/score": score if score is not None else math.nan,
            "seconds": seconds, "peak_memory_mb": 300.0, "epsilon_spent": eps}


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def md_rows(text: str) -> list[list[str]]:
    """The cells (stripped, escapes kept) of every Markdown table row, header rows included."""
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            for line in text.splitlines() if line.startswith("| ")]


def md_header(text: str) -> list[str]:
    """The header cells of the first per-row table (the one starting with ``rank``)."""
    return next(cells for cells in md_rows(text) if cells[0] == "rank")
NEW_TAGS = {"delta": "2.5e-05", "accountant": "basic", "privacy_unit": "user:taxi_id",
            "dataset": "taxi", "dataset_id": "d1", "metric_key/kmarginal": "k2",
            "metrics_key": "m1", "noise": "secret", "private_tables": "false"}
