"""Leaderboard plots (matplotlib, Agg backend): score vs epsilon with confidence bands,
score vs runtime with the Pareto front, one panel per epsilon, and (when runs logged it)
machine-learning efficacy vs epsilon, one panel per dataset, with the train-on-real reference
as a dashed horizontal line (``utility_vs_epsilon_figure``).

Readable at a glance, whatever the board holds:

- **one colour per mechanism** in every panel of both plots (``mechanism_colours``: the
  board's mechanisms sorted by name onto a qualitative palette, tab10 or tab20), settings of one
  mechanism told apart by their marker;
- **bounded labels and figures**: a setting's label is cut to ``MAX_LABEL`` characters
  (``short_label``; the full text is in the tables), legends go outside the axes in at most
  ``MAX_LEGEND_COLUMNS`` columns, Pareto panels wrap after ``MAX_PANELS_PER_ROW``;
- **no overlapping point labels**: Pareto points carry a short number (the same number for a
  setting in every panel) placed by a greedy search over candidate offsets
  (``place_labels``), and the legend says which setting each number is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.report.leaderboard import (
    MARK_DECLARED,
    SETTING,
    board_ranks_lower,
    is_not_applicable,
    row_label,
    varying_columns,
)
from dp_arena.report.scores import ML_REAL, ML_SCORE, metric_value

#: Longest setting label shown in a plot (the tables have the full text).
MAX_LABEL = 42
#: Legend rows per column before another column is started, and the most columns.
LEGEND_ROWS, MAX_LEGEND_COLUMNS = 28, 3
MAX_PANELS_PER_ROW = 3
DPI = 110
#: Markers telling apart the settings of one mechanism.
MARKERS = "os^DvPX<>p*h"
#: Candidate offsets (points) of a Pareto point's number, tried in order.
LABEL_OFFSETS = ((4, 3), (4, -11), (-12, 3), (-12, -11), (4, 13), (-12, 13), (4, -21),
                 (-12, -21), (14, -4), (-22, -4), (4, 23), (-12, 23))


# ----- pure helpers -------------------------------------------------------------------------
def short_label(text: str, width: int = MAX_LABEL) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def plain(label: str) -> str:
    """A label matplotlib shows as typed (no mathtext from ``$``)."""
    return label.replace("$", r"\$")


def mechanism_colours(mechanisms: Iterable[str]) -> dict[str, tuple[float, float, float, float]]:
    """One RGBA colour per distinct mechanism: sorted by name onto tab10 (up to 10), else
    tab20 with its ten dark shades first (repeating after 20). The same mechanisms give the
    same colours in every plot."""
    from matplotlib import colormaps

    names = sorted({str(m) for m in mechanisms})
    if len(names) <= 10:
        palette = [colormaps["tab10"](i) for i in range(10)]
    else:
        tab20 = colormaps["tab20"]
        palette = [tab20(i) for i in range(0, 20, 2)] + [tab20(i) for i in range(1, 20, 2)]
    return {name: tuple(float(c) for c in palette[i % len(palette)])  # type: ignore[misc]
            for i, name in enumerate(names)}


def plotted_mechanisms(board: pd.DataFrame) -> list[str]:
    """The mechanisms with a score (the ones the plots show; failed and n/a rows are not)."""
    return sorted(set(board[~is_not_applicable(board)].dropna(subset=["mean"])["mechanism"]
                      .astype(str)))


def setting_label(row: pd.Series | dict, varying: list[tuple[str, str]]) -> str:
    """A setting's short legend text: mechanism, hyperparameters, tuning, varying columns."""
    hp, tuning = str(row["hyperparameters"]), str(row["tuning"] or "")
    settings = "" if hp == "-" else (hp if hp.startswith("[") and "," not in hp else f" ({hp})")
    text = (row_label(row) + settings + (f" [{tuning}]" if tuning else "")
            + "".join(f" {head}={row[col]}" for col, head in varying))
    return short_label(text) + (DECLARED_NOTE if is_declared(row) else "")


#: What a plot's legend adds to an external contestant's setting (the tables say it in full).
DECLARED_NOTE = " (budget declared)"


def is_declared(row: pd.Series | dict) -> bool:
    """The row's budget was declared by an external contestant, not checked by the ledger."""
    return MARK_DECLARED in str(row.get("marks") or "")


def settings_table(board: pd.DataFrame) -> pd.DataFrame:
    """One row per setting (``SETTING``) with a score: its number (1, 2, ... by mechanism then
    label), mechanism, label and marker (per mechanism, in turn)."""
    scored = board[~is_not_applicable(board)].dropna(subset=["mean"])
    varying = varying_columns(scored, board.attrs.get("metric", "score")) if len(scored) else []
    firsts = scored.drop_duplicates(SETTING)
    rows = [{"key": setting_key(r), "mechanism": str(r["mechanism"]),
             "kind": r["kind"], "label": setting_label(r, varying)} for _, r in firsts.iterrows()]
    table = pd.DataFrame(rows, columns=["key", "mechanism", "kind", "label"])
    table = table.sort_values(["mechanism", "label"], kind="stable").reset_index(drop=True)
    table["number"] = np.arange(1, len(table) + 1)
    table["marker"] = [MARKERS[i % len(MARKERS)] for i in table.groupby("mechanism").cumcount()]
    return table


def setting_key(row: pd.Series | dict) -> tuple[str, ...]:
    """The setting of a board row as text (NaN-safe, so it can be compared and hashed)."""
    return tuple(str(row[c]) for c in SETTING)


def _overlaps(box: tuple[float, float, float, float],
              others: list[tuple[float, float, float, float]]) -> int:
    x0, y0, x1, y1 = box
    return sum(not (x1 <= a0 or a1 <= x0 or y1 <= b0 or b1 <= y0) for a0, b0, a1, b1 in others)


def place_labels(points: np.ndarray, sizes: list[tuple[float, float]],
                 offsets: tuple[tuple[float, float], ...] = LABEL_OFFSETS,
                 point_radius: float = 3.0) -> list[tuple[float, float]]:
    """Greedy label placement: for each point (pixel coordinates, y up) and its label's
    (width, height), the first offset in ``offsets`` whose box overlaps no label placed so far
    and no point; if none is free, the offset with the fewest overlaps."""
    dots = [(x - point_radius, y - point_radius, x + point_radius, y + point_radius)
            for x, y in np.asarray(points, dtype=float).reshape(-1, 2)]
    placed: list[tuple[float, float, float, float]] = []
    chosen = []
    for (x, y), (w, h) in zip(np.asarray(points, dtype=float).reshape(-1, 2), sizes):
        boxes = [(x + dx, y + dy, x + dx + w, y + dy + h) for dx, dy in offsets]
        costs = [_overlaps(b, placed) * 10 + _overlaps(b, dots) for b in boxes]
        best = int(np.argmin(costs))
        placed.append(boxes[best])
        chosen.append(offsets[best])
    return chosen


# ----- figures ------------------------------------------------------------------------------
def _figure(width: float, height: float, nrows: int = 1, ncols: int = 1):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(nrows, ncols, i + 1) for i in range(nrows * ncols)]
    return fig, axes


def _style(kind: str) -> dict[str, Any]:
    if kind == "reference":
        return {"linestyle": "--", "alpha": 0.6}
    if kind == "non-private":
        return {"linestyle": ":", "alpha": 0.8}
    return {"linestyle": "-", "alpha": 1.0}


def legend_columns(entries: int) -> int:
    return max(1, min(MAX_LEGEND_COLUMNS, math.ceil(entries / LEGEND_ROWS)))


def score_vs_epsilon_figure(board: pd.DataFrame):
    """Mean score per setting against epsilon, its 95% CI as a band; colour = mechanism."""
    fig, (ax,) = _figure(7.5, 4.8)
    settings = settings_table(board)
    colours = mechanism_colours(plotted_mechanisms(board))
    data = board[~is_not_applicable(board)].dropna(subset=["mean"])
    bands = False
    for s in settings.itertuples():
        part = data[[setting_key(r) == s.key for _, r in data.iterrows()]]
        part = part.sort_values("epsilon")
        style, colour = _style(s.kind), colours[s.mechanism]
        ax.plot(part["epsilon"], part["mean"], marker=s.marker, color=colour,
                label=plain(s.label), gid=s.mechanism, **style)
        ci = part["ci95"].astype(float)
        bands |= bool(ci.notna().any())
        ci = ci.fillna(0).to_numpy()
        ax.fill_between(part["epsilon"], part["mean"] - ci, part["mean"] + ci, color=colour,
                        alpha=0.15 * style["alpha"], linewidth=0)
        ax.errorbar(part["epsilon"], part["mean"], yerr=ci, fmt="none", capsize=3,
                    ecolor=colour, alpha=0.6 * style["alpha"])
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(board.attrs.get("metric", "score"))
    ax.set_title("score vs epsilon " + ("(band: 95% CI over trials)" if bands
                                        else "(one trial per setting: no CI band)"))
    ax.grid(alpha=0.3)
    if len(settings):
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                  ncol=legend_columns(len(settings)))
    return fig


def plot_score_vs_epsilon(board: pd.DataFrame, path: Path) -> Path:
    score_vs_epsilon_figure(board).savefig(path, dpi=DPI, bbox_inches="tight")
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


def _number_points(ax, part: pd.DataFrame) -> None:
    """Write each point's setting number beside it, avoiding other numbers and points."""
    xy = ax.transData.transform(part[["seconds", "mean"]].to_numpy(dtype=float))
    scale = DPI / 72.0
    sizes = [(scale * 4.6 * len(str(n)) + 2, scale * 8.0) for n in part["number"]]
    offsets = place_labels(xy / scale, [(w / scale, h / scale) for w, h in sizes])
    for (_, r), (dx, dy) in zip(part.iterrows(), offsets):
        ax.annotate(str(r["number"]), (r["seconds"], r["mean"]), xytext=(dx, dy),
                    textcoords="offset points", fontsize=7, color=r["colour"],
                    fontweight="bold", annotation_clip=False)


def pareto_figure(board: pd.DataFrame):
    """Score against fit seconds, a panel per epsilon; points numbered by setting (legend on
    the right), the step line joins the Pareto-optimal ranked settings."""
    from matplotlib.lines import Line2D

    data = board[~is_not_applicable(board)].dropna(subset=["mean"])
    data = data.dropna(subset=["seconds"]) if "seconds" in data else data.iloc[0:0]
    epsilons = sorted(data["epsilon"].unique())
    ncols = max(1, min(len(epsilons), MAX_PANELS_PER_ROW))
    nrows = max(1, math.ceil(len(epsilons) / ncols))
    fig, axes = _figure(4.6 * ncols, 3.8 * nrows, nrows, ncols)
    settings = settings_table(board)
    colours = mechanism_colours(plotted_mechanisms(board))
    number = {s.key: s for s in settings.itertuples()}
    higher = not board_ranks_lower(board)
    front_drawn, panels = False, []
    for ax, eps in zip(axes, epsilons):
        part = data[data["epsilon"] == eps].copy()
        part["seconds"] = part["seconds"].clip(lower=1e-3)
        keys = [setting_key(r) for _, r in part.iterrows()]
        part["number"] = [number[k].number for k in keys]
        part["colour"] = [colours[m] for m in part["mechanism"]]
        for (_, r), k in zip(part.iterrows(), keys):
            ax.scatter(r["seconds"], r["mean"], marker=number[k].marker, color=r["colour"],
                       alpha=_style(r["kind"])["alpha"], s=28, gid=str(r["mechanism"]),
                       edgecolors="k" if r["kind"] != "dp" else "none", linewidths=0.6)
        front = pareto_front(part[part["ranked"].astype(bool)] if "ranked" in part
                             else part[part["kind"] == "dp"], higher)
        if len(front):
            ax.step(front["seconds"], front["mean"], where="post", color="k", alpha=0.5)
            ax.scatter(front["seconds"], front["mean"], s=110, facecolors="none",
                       edgecolors="k", linewidths=0.8, alpha=0.6)
            front_drawn = True
        if part["seconds"].max() / part["seconds"].min() > 20:
            ax.set_xscale("log")
        ax.margins(0.12)
        ax.set_xlabel("fit seconds")
        ax.set_ylabel(board.attrs.get("metric", "score"))
        ax.set_title(f"epsilon = {eps:g}")
        ax.grid(alpha=0.3)
        panels.append((ax, part))
    for ax in axes[len(epsilons):]:
        ax.set_visible(False)
    handles = [Line2D([], [], linestyle="none", marker=s.marker, color=colours[s.mechanism],
                      label=plain(f"{s.number}  {s.label}")) for s in settings.itertuples()]
    if front_drawn:
        handles.append(Line2D([], [], color="k", alpha=0.5, marker="o", markersize=9,
                              markerfacecolor="none", label="Pareto front (ranked rows)"))
    if handles:
        fig.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                   ncol=legend_columns(len(handles)), title="setting", title_fontsize=7)
    fig.tight_layout()
    for ax, part in panels:  # after the layout, so pixel positions are final
        _number_points(ax, part)
    return fig


def plot_pareto(board: pd.DataFrame, path: Path) -> Path:
    pareto_figure(board).savefig(path, dpi=DPI, bbox_inches="tight")
    return path


def utility_vs_epsilon_figure(board: pd.DataFrame):
    """``ml_efficacy/score`` per setting against epsilon with 95% CI bars, one panel per
    dataset; the train-on-real reference (``ml_efficacy/real_score``, mean over the dataset's
    rows) as a black dash-dot line labelled in the panel; colour = mechanism, as in the other
    plots, and one legend entry per setting (its label without the dataset, which the panel
    names)."""
    from matplotlib.lines import Line2D

    key = board.attrs.get("metric", "score")
    data = board[~is_not_applicable(board)].copy()
    data["_y"] = [metric_value(r, ML_SCORE, key) for _, r in data.iterrows()]
    data["_ci"] = [metric_value(r, ML_SCORE, key, ci=True) for _, r in data.iterrows()]
    data["_real"] = [metric_value(r, ML_REAL, key) for _, r in data.iterrows()]
    data = data[data["_y"].notna()]
    varying = [(c, h) for c, h in (varying_columns(data, key) if len(data) else [])
               if c not in ("dataset", "dataset_id", "privacy_unit", "metric_setting")]
    data["_label"] = [setting_label(r, varying) for _, r in data.iterrows()]
    lines = (data[["_label", "mechanism", "kind"]].drop_duplicates("_label")
             .sort_values(["mechanism", "_label"]).reset_index(drop=True))
    lines["marker"] = [MARKERS[i % len(MARKERS)] for i in lines.groupby("mechanism").cumcount()]
    colours = mechanism_colours(lines["mechanism"])
    by = "dataset" if "dataset" in data else None
    datasets = sorted(data[by].astype(str).unique()) if by else [""]
    ncols = max(1, min(len(datasets), MAX_PANELS_PER_ROW))
    nrows = max(1, math.ceil(len(datasets) / ncols))
    fig, axes = _figure(5.2 * ncols, 4.0 * nrows, nrows, ncols)
    for ax, name in zip(axes, datasets):
        panel = data[data[by].astype(str) == name] if by else data
        for line in lines.itertuples():
            part = panel[panel["_label"] == line._1].sort_values("epsilon")
            if part.empty:
                continue
            style = _style(line.kind)
            ax.errorbar(part["epsilon"], part["_y"], yerr=part["_ci"].fillna(0).to_numpy(),
                        marker=line.marker, color=colours[line.mechanism], capsize=3,
                        gid=line.mechanism, **style)
        real = panel["_real"].dropna()
        if len(real):
            ax.axhline(float(real.mean()), color="k", linestyle="-.", linewidth=1.4,
                       gid="train_on_real")
            ax.annotate("train on real", (0.5, float(real.mean())), ha="center", va="bottom",
                        xycoords=("axes fraction", "data"), fontsize=7)
            low, high = ax.get_ylim()
            pad = 0.06 * (max(high, float(real.mean())) - min(low, float(real.mean())))
            ax.set_ylim(min(low, float(real.mean()) - pad), max(high, float(real.mean()) + pad))
        epsilons = sorted(panel["epsilon"].unique())
        ax.set_xscale("log")
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.minorticks_off()
        ax.margins(x=0.1)
        ax.set_xlabel("epsilon")
        ax.set_ylabel(ML_SCORE)
        ax.set_title(plain(f"dataset {name}" if name else ML_SCORE))
        ax.grid(alpha=0.3)
    for ax in axes[len(datasets):]:
        ax.set_visible(False)
    handles = [Line2D([], [], marker=line.marker, color=colours[line.mechanism],
                      label=plain(line._1), **_style(line.kind)) for line in lines.itertuples()]
    if data["_real"].notna().any():
        handles.append(Line2D([], [], color="k", linestyle="-.",
                              label="train on real, test on real (non-private reference)"))
    if handles:
        fig.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                   ncol=legend_columns(len(handles)))
    fig.suptitle("ML efficacy (train on synthetic, test on held-out real) vs epsilon\n"
                 "bars: 95% CI over trials", fontsize=9)
    fig.tight_layout()
    return fig


def plot_utility_vs_epsilon(board: pd.DataFrame, path: Path) -> Path:
    utility_vs_epsilon_figure(board).savefig(path, dpi=DPI, bbox_inches="tight")
    return path
