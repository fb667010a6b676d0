"""Leaderboard: MLflow runs -> ranked tables (Markdown, CSV, HTML) and a score-vs-epsilon plot.

Runs are grouped by (epsilon, mechanism, hyperparameters). Finished runs with the same
content key (``run_key`` tag: same mechanism, settings, data, seed, trial and code) count once
(the latest), so re-running a sweep never inflates ``n``. Each group reports the mean, standard
deviation, 95% confidence interval (Student t) and ``n`` over trials of the ranking metric plus
the means of every other score; groups rank per epsilon. Failed runs are shown as failed rows
with their reason, never as a silent gap.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from .errors import DPArenaError
from .tracking import INF_THRESHOLD, client_for

GROUP = ["epsilon", "mechanism", "hyperparameters"]
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")
LOWER_IS_BETTER_HINTS = ("relative_error", "tvd", "false_", "seconds", "memory")
SHOWN_EXTRAS = ("epsilon_spent", "seconds", "peak_memory_mb", "n_synthetic_rows")


def load_runs(experiment: str, tracking_uri: str | None = None,
              sweep: str | None = None) -> pd.DataFrame:
    """One row per MLflow run of ``experiment`` (optionally only one sweep's runs)."""
    client = client_for(tracking_uri, must_exist=True)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments())
        raise DPArenaError(f"no experiment named {experiment!r} in {client.tracking_uri}",
                           f"use one of {names}" if names else "run dp-arena first")
    filt = f"tags.sweep = '{sweep}'" if sweep else ""
    rows, token = [], None
    while True:
        page = client.search_runs([exp.experiment_id], filter_string=filt, max_results=1000,
                                  page_token=token)
        for r in page:
            tags = r.data.tags
            if "mechanism" not in tags:
                continue
            rows.append({
                "run_id": r.info.run_id, "status": r.info.status,
                "start_time": r.info.start_time,
                "mechanism": tags["mechanism"], "hyperparameters": tags.get("hyperparameters", "-"),
                "epsilon": float(tags.get("epsilon", "nan")), "trial": int(tags.get("trial", 0)),
                "reference": tags.get("reference", ""), "run_key": tags.get("run_key", r.info.run_id),
                "failure_reason": tags.get("failure_reason", ""),
                **{k: (math.inf if v > INF_THRESHOLD else v) for k, v in r.data.metrics.items()},
            })
        token = page.token
        if not token:
            break
    return pd.DataFrame(rows)


def score_columns(runs: pd.DataFrame) -> list[str]:
    return sorted(c for c in runs.columns if "/" in c)


def ranking_metric(runs: pd.DataFrame, metric: str | None = None) -> str:
    cols = score_columns(runs)
    if metric:
        if metric not in cols:
            raise DPArenaError(f"metric {metric!r} was not logged by these runs",
                               f"use one of {cols}")
        return metric
    for preferred in RANKING_PREFERENCE:
        if preferred in cols:
            return preferred
    if not cols:
        raise DPArenaError("these runs logged no scores", "check that the runs finished")
    return cols[0]


def lower_is_better(metric: str) -> bool:
    return any(hint in metric for hint in LOWER_IS_BETTER_HINTS)


def latest_per_key(runs: pd.DataFrame) -> pd.DataFrame:
    """Finished runs, one per content key (the most recent)."""
    done = runs[runs["status"] == "FINISHED"]
    return done.sort_values("start_time").drop_duplicates("run_key", keep="last")


def mean_ci(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, std, half-width of the 95% Student-t interval; NaN for n < 2)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan
    std = float(values.std(ddof=1))
    return mean, std, float(stats.t.ppf(0.975, n - 1) * std / math.sqrt(n))


def build_leaderboard(runs: pd.DataFrame, metric: str | None = None) -> pd.DataFrame:
    """The ranked table: one row per (epsilon, mechanism, hyperparameters) group."""
    if runs.empty:
        raise DPArenaError("no runs to rank", "run dp-arena first")
    done = latest_per_key(runs)
    key = ranking_metric(done if not done.empty else runs, metric)
    rows = []
    for (eps, mech, hp), group in runs.groupby(GROUP, sort=True, dropna=False):
        ok = done[(done["epsilon"] == eps) & (done["mechanism"] == mech)
                  & (done["hyperparameters"] == hp)]
        failed = group[group["status"] != "FINISHED"]
        row = {"epsilon": eps, "mechanism": mech, "hyperparameters": hp,
               "reference": group["reference"].iloc[0], "n": len(ok), "failed": len(failed),
               "failure_reason": "; ".join(sorted(set(failed["failure_reason"].astype(str))))[:300]}
        if len(ok) and key in ok and ok[key].notna().any():
            row["mean"], row["std"], row["ci95"] = mean_ci(ok[key].dropna().to_numpy())
            for col in score_columns(ok) + [c for c in SHOWN_EXTRAS if c in ok]:
                if col != key:
                    row[col] = float(ok[col].mean())
        else:
            row["mean"] = row["std"] = row["ci95"] = math.nan
        rows.append(row)
    board = pd.DataFrame(rows)
    board.attrs["metric"] = key
    ascending = lower_is_better(key)
    board["rank"] = (board.groupby("epsilon")["mean"]
                     .rank(ascending=ascending, method="min").astype("Int64"))
    board = board.sort_values(["epsilon", "rank"], na_position="last").reset_index(drop=True)
    lead = ["epsilon", "rank", "mechanism", "hyperparameters", "mean", "ci95", "std", "n", "failed"]
    rest = [c for c in board.columns if c not in lead]
    out = board[lead + rest]
    out.attrs["metric"] = key
    return out


def shown_scores(board: pd.DataFrame, ranked_by: str) -> list[str]:
    """Columns for the Markdown table: the parts of the ranking score (for the challenge:
    its three components), then every other metric family's headline score."""
    from metrics import METRICS, metric_class

    family = ranked_by.split("/")[0]
    parts = [c for c in board.columns if c.startswith(f"{family}/") and c != ranked_by
             and family == "challenge"]
    headlines = []
    for name in METRICS:
        col = f"{name}/{metric_class(name).headline}" if name != family else None
        if col and col in board.columns:
            headlines.append(col)
    return parts + headlines


def _fmt(x: object, digits: int = 1) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return ""
        if math.isinf(x):
            return "inf"
        return f"{x:.{digits}f}"
    return str(x)


def _label(row: pd.Series) -> str:
    notes = {"ceiling": " (non-private ceiling)", "public": " (public data only)",
             "floor": " (floor)"}
    return f"{row['mechanism']}{notes.get(row['reference'], '')}"


def render_markdown(board: pd.DataFrame, title: str = "Leaderboard") -> str:
    """A Markdown section per epsilon, ranked by the board's metric."""
    key = board.attrs.get("metric", "score")
    direction = "lower is better" if lower_is_better(key) else "higher is better"
    extras = shown_scores(board, key)
    lines = [f"## {title}", f"ranked by `{key}` ({direction}); mean ± 95% CI over n trials", ""]
    for eps, part in board.groupby("epsilon", sort=True):
        lines += [f"### epsilon = {eps:g}", ""]
        header = ["rank", "mechanism", "hyperparameters", key, "± CI", "n", *extras,
                  "eps spent", "seconds", "status"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for _, r in part.iterrows():
            status = "ok" if not r["failed"] else (
                f"FAILED ({r['failed']}): {r['failure_reason'][:80]}" if r["n"] == 0
                else f"{r['failed']} failed")
            cells = [_fmt(r["rank"]) if pd.notna(r["rank"]) else "-", _label(r),
                     r["hyperparameters"], _fmt(r["mean"]), _fmt(r["ci95"]), str(r["n"]),
                     *[_fmt(r.get(c, math.nan), 3) for c in extras],
                     _fmt(r.get("epsilon_spent", math.nan), 3), _fmt(r.get("seconds", math.nan)),
                     status]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def render_html(board: pd.DataFrame, title: str, plot_name: str | None) -> str:
    table = board.to_html(index=False, na_rep="", float_format=lambda x: f"{x:.3f}",
                          classes="board", border=0)
    img = f'<p><img src="{html.escape(plot_name)}" alt="score vs epsilon"></p>' if plot_name else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2em}table.board{border-collapse:collapse}"
            "table.board td,table.board th{padding:4px 8px;border-bottom:1px solid #ddd}"
            "</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>ranked by <code>{html.escape(board.attrs.get('metric', ''))}"
            f"</code></p>{table}{img}</body></html>")


def plot_score_vs_epsilon(board: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    for (mech, hp), part in board.dropna(subset=["mean"]).groupby(["mechanism", "hyperparameters"]):
        part = part.sort_values("epsilon")
        label = _label(part.iloc[0]) + ("" if hp == "-" else f" ({hp})")
        is_reference = bool(part["reference"].iloc[0])
        ax.errorbar(part["epsilon"], part["mean"], yerr=part["ci95"].fillna(0), marker="o",
                    capsize=3, label=label, linestyle="--" if is_reference else "-",
                    alpha=0.6 if is_reference else 1.0)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(board.attrs.get("metric", "score"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def write_outputs(board: pd.DataFrame, runs: pd.DataFrame, out_dir: Path | str,
                  title: str = "dp-arena leaderboard") -> list[Path]:
    """leaderboard.md/.csv/.html and score_vs_epsilon.png in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = plot_score_vs_epsilon(board, out / "score_vs_epsilon.png")
    paths = [out / "leaderboard.md", out / "leaderboard.csv", out / "leaderboard.html", png]
    paths[0].write_text(render_markdown(board, title))
    board.to_csv(paths[1], index=False)
    paths[2].write_text(render_html(board, title, png.name))
    return paths
