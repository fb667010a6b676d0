"""Where a board's rows stand on NIST's CRC scale: the archive's published rows beside them, and
"as good as a k% sample" for every row.

- **Archive rows** (:func:`with_archive_rows`): the SDNist k-marginal scores NIST published for
  deidentified samples of the ACS national2019 excerpt (the CRC archive's sample reports,
  ``sdnist_archive.csv`` beside this module, extracted with provenance by
  ``benchmarks/sdnist_archive_rows.py``). A published row joins a board ranked by
  ``sdnist/kmarginal`` on the same columns (``dataset=acs``, the report's feature list): a
  non-DP row in every epsilon's table, a DP row in the table of its epsilon and of its
  measurement share (its epsilon less what its own preprocessing spent, the variant label's
  ``preprocessor-epsilon``). Each is one published sample scored by SDNist's report, with the
  archive's own preprocessing: shown as ``ext``, with no interval, never ranked or tied.
- **Sample equivalent** (:func:`with_sample_equivalent`): NIST's yardstick ("the deidentified
  data resembles a 20% sub-sample"), from the board's own sample rows (``mechanism=subsample_*``,
  several draws each, same data and score): their mean scores, made monotone in the fraction
  (isotonic regression), interpolated linearly in log(fraction); a row's mean maps to a
  fraction, its 95% interval to a range. Outside the samples' scores it reads ``<1%`` /
  ``>50%``.

Both read public facts only: published scores, and the board's own rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd

from dp_arena.report.leaderboard import POOL
from dp_arena.report.record import SAMPLE_FRACTION_TAG

#: The ranking score the archive's rows carry (SDNist's k-marginal, :mod:`dp_arena.metrics.sdnist`).
ARCHIVE_METRIC = "sdnist/kmarginal"
ARCHIVE_FILE = "sdnist_archive.csv"
#: ``kind`` of an archive row (its rank cell reads ``ext``).
EXTERNAL = "external"
#: The board column of the sample equivalent (text).
SAMPLE_COLUMN = "sample_equivalent"
SAMPLE_HEADER = "as good as a k% sample"
EXTERNAL_LEGEND = ("ext: a published row of NIST's CRC archive (one sample, scored by SDNist's "
                   "report, with its own preprocessing and budget split; the CSV's source "
                   "column names the report): shown for scale, never ranked")
SAMPLE_LEGEND = ("the share of the real table whose random samples score as this row does "
                 "(the board's own sample rows, interpolated in log share; the row's 95% CI "
                 "in brackets), NIST's CRC yardstick")


@dataclass(frozen=True)
class ArchiveRow:
    """One published CRC archive sample, as its SDNist report labels and scores it."""

    report: str
    dataset: str            # the dp-arena dataset with exactly its columns ("" if none)
    algorithm: str
    library: str
    feature_set: str
    epsilon: float | None   # None: not differentially private
    variant: str
    sdnist_version: str
    kmarginal: float
    resembles_pct: str      # the report's own "closely resembles a k% sub-sample"
    source: str             # repository@commit:path

    @property
    def preprocessing_epsilon(self) -> float:
        """The epsilon its own preprocessing spent (variant ``preprocessor-epsilon: x``; 0 when
        the report names none)."""
        _head, found, value = self.variant.partition("preprocessor-epsilon:")
        try:
            return float(value.split(",")[0]) if found else 0.0
        except ValueError:
            return 0.0

    def epsilons(self) -> tuple[float, ...]:
        """The epsilons whose table it joins: its epsilon and its measurement share."""
        if self.epsilon is None:
            return ()
        return tuple(sorted({self.epsilon, round(self.epsilon - self.preprocessing_epsilon, 12)}))

    def label(self) -> str:
        eps = f" e{self.epsilon:g}" if self.epsilon is not None else ""
        return f"CRC {self.algorithm}{eps} ({self.library})"

    def mark(self) -> str:
        if self.epsilon is None:
            budget = "not DP"
        elif self.preprocessing_epsilon:
            budget = (f"eps {self.epsilon:g}, {self.preprocessing_epsilon:g} of it on its own "
                      "preprocessing; own delta")
        else:
            budget = f"eps {self.epsilon:g}; own preprocessing and delta"
        return (f"external: one published sample (SDNist {self.sdnist_version}: "
                f"~{self.resembles_pct}% sample); {budget}")


@cache
def archive_rows() -> tuple[ArchiveRow, ...]:
    """Every published row (``sdnist_archive.csv``)."""
    with resources.files("dp_arena.report").joinpath(ARCHIVE_FILE).open() as f:
        table = pd.read_csv(f, dtype=str, keep_default_na=False)
    return tuple(ArchiveRow(
        report=r["report"], dataset=r["dp_arena_dataset"], algorithm=r["algorithm"],
        library=r["library"], feature_set=r["feature_set"],
        epsilon=float(r["epsilon"]) if r["epsilon"] else None, variant=r["variant"],
        sdnist_version=r["sdnist_version"], kmarginal=float(r["kmarginal"]),
        resembles_pct=r["resembles_sample_pct"],
        source=f"{r['repository']}@{r['commit'][:12]}:{r['path']}")
        for r in table.to_dict("records"))


def rows_for(dataset: str, epsilon: float, published: tuple[ArchiveRow, ...]) -> list[ArchiveRow]:
    """The published rows that join ``dataset``'s table at ``epsilon``."""
    return [a for a in published if a.dataset and a.dataset == dataset
            and (a.epsilon is None or any(math.isclose(e, epsilon) for e in a.epsilons()))]


def with_archive_rows(board: pd.DataFrame,
                      published: tuple[ArchiveRow, ...] | None = None) -> pd.DataFrame:
    """``board`` with the published rows of its pools, each placed by its score (see the module
    docstring); unchanged unless the board ranks by :data:`ARCHIVE_METRIC`."""
    if board.empty or board.attrs.get("metric") != ARCHIVE_METRIC or "dataset" not in board:
        return board
    published = archive_rows() if published is None else published
    higher = not board.attrs.get("lower_is_better", False)
    out = board
    pools = board[board["mean"].notna()].groupby(["epsilon", *POOL], sort=False, dropna=False)
    for (epsilon, *_pool), pool in pools:
        first = pool.iloc[0]
        for row in rows_for(str(first["dataset"]), float(epsilon), published):
            out = insert_by_mean(out, archive_board_row(row, first), higher)
    return out


def archive_board_row(row: ArchiveRow, like: pd.Series) -> dict:
    """A board row for ``row`` in the pool of ``like`` (its pool columns, so it is shown in that
    table; no trials, no interval, no spend)."""
    pool = {c: like[c] for c in ("epsilon", *POOL, "dataset") if c in like}
    return {**pool, "rank": pd.NA, "tied": False, "mechanism": row.label(),
            "hyperparameters": row.variant or "-", "tuning": "", "kind": EXTERNAL,
            "marks": row.mark(), "mean": row.kmarginal, "ci95": math.nan, "std": math.nan,
            "n": 1, "failed": 0, "unfinished": 0, "running": 0, "ranked": False,
            "reference": "", "failure_reason": "", "source": row.source}


def insert_by_mean(board: pd.DataFrame, row: dict, higher: bool) -> pd.DataFrame:
    """``board`` with ``row`` after the last row of its pool (epsilon and ``POOL``) whose mean is
    at least as good, else before the pool's first row; ``attrs`` kept."""
    keys = [c for c in ("epsilon", *POOL) if c in row]
    same = board.index[np.logical_and.reduce([
        board[c].eq(row[c]) | (board[c].isna() & pd.isna(row[c])) for c in keys])].tolist()
    better = [i for i in same if pd.notna(board.at[i, "mean"])
              and (board.at[i, "mean"] >= row["mean"] if higher
                   else board.at[i, "mean"] <= row["mean"])]
    at = (board.index.get_loc(better[-1]) + 1) if better else board.index.get_loc(same[0])
    out = pd.concat([board.iloc[:at], pd.DataFrame([row]), board.iloc[at:]], ignore_index=True)
    out["rank"] = out["rank"].astype("Int64")
    out.attrs.update(board.attrs)
    return out


def is_external(frame: pd.DataFrame) -> pd.Series:
    """Which rows are published archive rows."""
    if "kind" not in frame:
        return pd.Series(False, index=frame.index)
    return frame["kind"].eq(EXTERNAL).fillna(False).astype(bool)


# ----- sample equivalent ----------------------------------------------------------------------
@dataclass(frozen=True)
class SampleCurve:
    """Mean score at each sample share (monotone in the share), read backwards."""

    log_shares: tuple[float, ...]   # increasing
    scores: tuple[float, ...]       # the isotonic fit at each share
    higher: bool

    def share(self, score: float) -> float:
        """The share whose samples score ``score`` (0 below the smallest share's score, inf
        above the largest's)."""
        s = np.asarray(self.scores if self.higher else [-x for x in self.scores])
        x = score if self.higher else -score
        if x < s[0]:
            return 0.0
        if x > s[-1]:
            return math.inf
        keep = np.r_[True, np.diff(s) > 0]  # a flat step reads as its first share
        return float(np.exp(np.interp(x, s[keep], np.asarray(self.log_shares)[keep])))


def sample_curve(shares: list[float], means: list[float], higher: bool) -> SampleCurve | None:
    """The isotonic fit of the samples' mean scores over log(share) (``None`` with fewer than
    two distinct shares)."""
    from sklearn.isotonic import IsotonicRegression

    order = np.argsort(shares)
    x = np.log(np.asarray(shares, dtype=float)[order])
    y = np.asarray(means, dtype=float)[order]
    if len(set(x)) < 2:
        return None
    fit = IsotonicRegression(increasing=higher).fit_transform(x, y)
    return SampleCurve(tuple(x), tuple(fit), higher)


def share_text(share: float, lowest: float, highest: float) -> str:
    """``12%``, ``1.5%``; ``<1%`` / ``>50%`` outside the samples."""
    if share <= 0:
        return f"<{pct(lowest)}"
    if math.isinf(share):
        return f">{pct(highest)}"
    return pct(share)


def pct(share: float) -> str:
    value = 100 * share
    return f"{value:.2g}%" if value < 10 else f"{value:.0f}%"


def equivalent_text(curve: SampleCurve, mean: float, ci95: float) -> str:
    """``12% [8%-17%]``: the mean's share, and the 95% interval's when the row has one."""
    lo, hi = math.exp(curve.log_shares[0]), math.exp(curve.log_shares[-1])
    text = share_text(curve.share(mean), lo, hi)
    if not (isinstance(ci95, float) and math.isfinite(ci95)) or ci95 <= 0:
        return text
    ends = sorted(curve.share(v) for v in (mean - ci95, mean + ci95))
    return f"{text} [{share_text(ends[0], lo, hi)}-{share_text(ends[1], lo, hi)}]"


def with_sample_equivalent(board: pd.DataFrame) -> pd.DataFrame:
    """``board`` with :data:`SAMPLE_COLUMN` for every row of a table holding sample rows of at
    least two shares (the sample rows themselves excepted); unchanged when none does."""
    if board.empty or SAMPLE_FRACTION_TAG not in board or "mean" not in board:
        return board
    higher = not board.attrs.get("lower_is_better", False)
    shares = pd.to_numeric(board[SAMPLE_FRACTION_TAG].replace("", np.nan), errors="coerce")
    texts = pd.Series("", index=board.index, dtype=object)
    for _key, part in board.groupby(["epsilon", *[c for c in POOL if c in board]], sort=False,
                                    dropna=False):
        samples = part[shares[part.index].notna() & part["mean"].notna()]
        curve = sample_curve(shares[samples.index].tolist(), samples["mean"].tolist(), higher) \
            if len(samples) else None
        if curve is None:
            continue
        for i in part.index.difference(samples.index):
            if pd.notna(board.at[i, "mean"]):
                texts[i] = equivalent_text(curve, float(board.at[i, "mean"]),
                                           float(board.at[i, "ci95"]))
    if not texts.ne("").any():
        return board
    out = board.assign(**{SAMPLE_COLUMN: texts})
    out.attrs.update(board.attrs)
    return out


def on_crc_scale(board: pd.DataFrame) -> pd.DataFrame:
    """The archive's rows, then every row's sample equivalent."""
    return with_sample_equivalent(with_archive_rows(board))
