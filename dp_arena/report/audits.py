"""Privacy audits on the leaderboard: the empirical lower bound beside each row.

``dp-arena-audit`` logs each audit as one MLflow run tagged ``kind=audit`` in the experiment
of the audited dataset's runs (:mod:`dp_arena.audit.driver`). Here:

- :func:`load_audits`: the FINISHED audit runs of an experiment, the latest one per
  ``AUDIT_KEY`` (dataset id, mechanism, hyperparameters label, epsilon, delta, accountant);
- :func:`latest_audits`: that de-duplication on a frame (pure);
- :func:`attach_audits`: a board with ``eps_lb`` (float, NaN without an audit) and
  ``audit_verdict`` (``ok`` / ``VIOLATION`` / ``""``) added, matched on the ``AUDIT_KEY``
  columns the board has (pure; delta compared as canonical text, as the board does).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dp_arena.report.leaderboard import delta_text
from dp_arena.report.tracking import client_for

AUDIT_KEY = ["dataset_id", "mechanism", "hyperparameters", "epsilon", "delta", "accountant"]
AUDIT_COLUMNS = [*AUDIT_KEY, "eps_lb", "audit_verdict", "mu_lb", "runs", "canary", "statistic",
                 "audit_view", "start_time", "run_id"]


def audit_row(run: Any) -> dict[str, Any]:
    """One audit run as a row."""
    tags, metrics = run.data.tags, run.data.metrics
    return {"dataset_id": tags.get("dataset_id", ""), "mechanism": tags.get("mechanism", ""),
            "hyperparameters": tags.get("hyperparameters", "-"),
            "epsilon": float(tags.get("epsilon", "nan")), "delta": delta_text(tags.get("delta")),
            "accountant": tags.get("accountant", ""),
            "eps_lb": float(metrics.get("eps_lb", math.nan)),
            "audit_verdict": tags.get("audit_verdict", ""),
            "mu_lb": float(metrics.get("mu_lb", math.nan)),
            "runs": float(metrics.get("runs", math.nan)),
            "canary": tags.get("canary_strategy", ""), "statistic": tags.get("statistic", ""),
            "audit_view": audit_view(tags.get("audit_view", "synthetic"),
                                     tags.get("audit_neighbours", "canary")),
            "start_time": run.info.start_time, "run_id": run.info.run_id}


def audit_view(view: str, neighbours: str) -> str:
    """What an audit read and on which pair, as the board shows it: ``releases, worst_case``."""
    return f"{view}, {neighbours}"


def latest_audits(audits: pd.DataFrame, key: list[str] | None = None) -> pd.DataFrame:
    """The most recent audit per ``key`` (default ``AUDIT_KEY``)."""
    if audits.empty:
        return pd.DataFrame(columns=AUDIT_COLUMNS)
    key = key or AUDIT_KEY
    return (audits.sort_values("start_time", kind="stable")
            .drop_duplicates(key, keep="last").reset_index(drop=True))


def load_audits(experiment: str, tracking_uri: str | None = None) -> pd.DataFrame:
    """The latest finished audit per ``AUDIT_KEY`` in ``experiment`` (empty frame with
    ``AUDIT_COLUMNS`` when there is none or no such experiment)."""
    client = client_for(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return pd.DataFrame(columns=AUDIT_COLUMNS)
    rows, token = [], None
    while True:
        page = client.search_runs([exp.experiment_id],
                                  filter_string="tags.kind = 'audit' and "
                                                "attributes.status = 'FINISHED'",
                                  max_results=1000, page_token=token)
        rows.extend(audit_row(r) for r in page)
        token = page.token
        if not token:
            break
    return latest_audits(pd.DataFrame(rows, columns=AUDIT_COLUMNS))


def attach_audits(board: pd.DataFrame, audits: pd.DataFrame) -> pd.DataFrame:
    """``board`` with ``eps_lb`` and ``audit_verdict`` from ``audits`` (rows without a matching
    audit: NaN and ""). Matches on the ``AUDIT_KEY`` columns ``board`` has; when it lacks some
    (e.g. the overall board has no epsilon), the latest audit over the missing ones is used.
    The board's rows, order, index and ``attrs`` are kept."""
    out = board.copy()
    out.attrs.update(board.attrs)
    key = [c for c in AUDIT_KEY if c in board.columns]
    if audits.empty or not key or board.empty:
        out["eps_lb"] = math.nan
        out["audit_verdict"] = ""
        out["audit_view"] = ""
        return out
    if "audit_view" not in audits:
        audits = audits.assign(audit_view="")
    right = latest_audits(audits, key)[[*key, "eps_lb", "audit_verdict", "audit_view"]].copy()
    left = out[key].copy()
    for frame in (left, right):
        if "delta" in key:
            frame["delta"] = frame["delta"].map(delta_text)
        if "epsilon" in key:
            frame["epsilon"] = pd.to_numeric(frame["epsilon"], errors="coerce").round(12)
        for col in key:
            if col not in ("epsilon",):
                frame[col] = frame[col].astype(str)
    merged = left.merge(right, on=key, how="left", validate="many_to_one")
    out["eps_lb"] = merged["eps_lb"].astype(float).to_numpy()
    out["audit_verdict"] = merged["audit_verdict"].fillna("").astype(str).to_numpy()
    out["audit_view"] = merged["audit_view"].fillna("").astype(str).to_numpy()
    return out
