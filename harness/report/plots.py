"""Leaderboard plots: score vs epsilon with confidence bands, and score vs runtime with the
Pareto front (matplotlib, Agg backend)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from harness.report.leaderboard import SETTING, lower_is_better, row_label, varying_columns

#: Rows ranked against each other share these (plus epsilon).

# ----- plots --------------------------------------------------------------------------------
def _figure(width: float, height: float, ncols: int = 1):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _plain(label: str) -> str:
    """A label matplotlib shows as typed (no mathtext from ``$``)."""
    return label.replace("$", r"\$")


def _style(kind: str) -> dict[str, Any]:
    if kind == "reference":
        return {"linestyle": "--", "alpha": 0.6}
    if kind == "non-private":
        return {"linestyle": ":", "alpha": 0.8}
    return {"linestyle": "-", "alpha": 1.0}


def plot_score_vs_epsilon(board: pd.DataFrame, path: Path) -> Path:
    """Mean score per setting against epsilon, with its 95% CI as a band."""
    fig, (ax,) = _figure(7.5, 4.8)
    varying = varying_columns(board, board.attrs.get("metric", "score"))
    for _setting, part in board.dropna(subset=["mean"]).groupby(SETTING, dropna=False):
        part = part.sort_values("epsilon")
        first = part.iloc[0]
        hp, tuning = first["hyperparameters"], first["tuning"]
        label = row_label(first) + ("" if hp == "-" else f" ({hp})") + \
            (f" [{tuning}]" if tuning else "") + \
            "".join(f" {head}={first[col]}" for col, head in varying)
        style = _style(part["kind"].iloc[0])
        line, = ax.plot(part["epsilon"], part["mean"], marker="o", label=_plain(label), **style)
        ci = part["ci95"].fillna(0).to_numpy()
        ax.fill_between(part["epsilon"], part["mean"] - ci, part["mean"] + ci,
                        color=line.get_color(), alpha=0.15 * style["alpha"], linewidth=0)
        ax.errorbar(part["epsilon"], part["mean"], yerr=ci, fmt="none", capsize=3,
                    ecolor=line.get_color(), alpha=0.6 * style["alpha"])
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(board.attrs.get("metric", "score"))
    ax.set_title("score vs epsilon (band: 95% CI over trials)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def pareto_front(points: pd.DataFrame, higher_better: bool) -> pd.DataFrame:
    """Rows not dominated by another (at most as slow and at least as good, one strictly)."""
    pts = points.sort_values(["seconds", "mean"], ascending=[True, not higher_better])
    front, best = [], -math.inf
    for _, r in pts.iterrows():
        score = r["mean"] if higher_better else -r["mean"]
        if score > best:
            front.append(r)
            best = score
    return pd.DataFrame(front)


def plot_pareto(board: pd.DataFrame, path: Path) -> Path:
    """Score against fit seconds per epsilon; the line joins the Pareto-optimal settings."""
    data = board.dropna(subset=["mean"])
    if "seconds" in data:
        data = data.dropna(subset=["seconds"])
    epsilons = sorted(data["epsilon"].unique()) if "seconds" in data else []
    fig, axes = _figure(5.0 * max(len(epsilons), 1), 4.2, max(len(epsilons), 1))
    higher = not lower_is_better(board.attrs.get("metric", "score"))
    for ax, eps in zip(axes, epsilons):
        part = data[data["epsilon"] == eps].copy()
        part["seconds"] = part["seconds"].clip(lower=1e-3)
        for _, r in part.iterrows():
            ax.scatter(r["seconds"], r["mean"], marker="o" if r["kind"] == "dp" else "s",
                       alpha=_style(r["kind"])["alpha"])
            ax.annotate(_plain(r["mechanism"] + ("" if r["hyperparameters"] == "-" else
                                                 f" ({r['hyperparameters']})")),
                        (r["seconds"], r["mean"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        front = pareto_front(part[part["ranked"]] if "ranked" in part
                             else part[part["kind"] == "dp"], higher)
        if len(front):
            ax.step(front["seconds"], front["mean"], where="post", color="k", alpha=0.5,
                    label="Pareto front (private mechanisms)")
            ax.legend(fontsize=7)
        if part["seconds"].max() / part["seconds"].min() > 20:
            ax.set_xscale("log")
        ax.set_xlabel("fit seconds")
        ax.set_ylabel(board.attrs.get("metric", "score"))
        ax.set_title(f"epsilon = {eps:g}")
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


