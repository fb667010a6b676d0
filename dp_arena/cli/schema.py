"""``dp-arena-schema``: propose an editable ``parameters.json`` for a raw CSV.

    dp-arena-schema DATA.csv --out parameters.json --public PUBLIC.csv     # from a public sample (free)
    dp-arena-schema DATA.csv --out parameters.json --epsilon 0.1 [--delta 1e-6]   # DP proposal
    dp-arena-schema DATA.csv --out parameters.json --from-private         # exact, labelled not DP
    ... --hint 'fare={kind: numeric, min: 0, max: 200}' --hints hints.yaml --weight company=2
    ... --holdout-fraction 0.2 [--split-seed 0]   # propose from the training rows only

One of the three sources is required (:mod:`dp_arena.data.propose`); without one the command is
refused with one message naming them. A DP proposal writes its ledger beside the schema
(``parameters.ledger.json``); runs using the schema report that spend. Nothing is written
unless the whole proposal succeeds. Then

    dp-arena dataset=csv dataset.path=DATA.csv dataset.schema=parameters.json

runs a competition on it. The report names columns and counts, never a private value.

``--holdout-fraction F --split-seed S`` (default for ``--epsilon`` and ``--from-private``: 0.2,
the share a run holds out by default) splits DATA as a run with ``dataset.holdout_fraction=F
dataset.split_seed=S`` does (:func:`dp_arena.data.holdout.holdout_mask`, on the raw file's rows,
by ``--id-column`` when given) and proposes from the training rows only; the schema's
``proposal`` block records ``"holdout": {"fraction": F, "split_seed": S, "unit": ...}``, and a
run that holds out otherwise is refused (:func:`dp_arena.data.datasets.check_proposal_holdout`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dp_arena.cli.exits import ExplainingParser, run_or_explain
from dp_arena.data.csv_format import delimiter_name, encoding_label, separator
from dp_arena.data.datasets import read_csv_file
from dp_arena.data.hints import merged, parse_flow, parse_weight, read_hints_file
from dp_arena.data.holdout import (
    checked_fraction,
    checked_seed,
    holdout_record,
    split_holdout,
)
from dp_arena.data.own_table import DEFAULT_HOLDOUT
from dp_arena.data.proposal_file import write_proposal
from dp_arena.data.propose import ProposalSettings, propose
from dp_arena.errors import ConfigError, DPArenaError

NO_SOURCE = ("a schema proposal needs a source, and reading the private file is never silent",
             ("pass one of: --public FILE (a public sample: free), --epsilon E [--delta D] (a DP "
             "proposal, charged to a ledger written beside the schema), or --from-private "
             "(exact values from the private file: labelled 'schema from private data (not DP)' "
             "on every run and board row)"))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ExplainingParser(prog="dp-arena-schema",
                                description="Propose a parameters.json for a raw CSV.")
    p.add_argument("data", help="the private CSV the schema is for")
    p.add_argument("--out", required=True, help="the parameters.json to write")
    p.add_argument("--public", metavar="FILE", help="propose from this public sample (free)")
    p.add_argument("--epsilon", type=float, help="propose from DATA under this epsilon")
    p.add_argument("--delta", type=float, default=1e-6,
                   help="delta of the DP proposal's thresholds (default 1e-6)")
    p.add_argument("--from-private", action="store_true",
                   help="read values and ranges exactly from DATA (not DP; labelled)")
    p.add_argument("--bins", type=int, default=10, help="quantile bins per numeric column")
    p.add_argument("--max-categories", type=int, default=100)
    p.add_argument("--id-column", help="the person id column (user-level privacy)")
    p.add_argument("--max-rows-per-person", type=int, default=1,
                   help="rows kept per person with --id-column (the contribution bound)")
    p.add_argument("--columns", help="comma-separated columns to describe (default: all)")
    p.add_argument("--drop", help="comma-separated columns to leave out")
    p.add_argument("--hint", action="append", default=[], metavar="COLUMN={...}",
                   help="a public fact about a column, free of budget, as a YAML mapping, e.g. "
                        "'fare={kind: numeric, min: 0, max: 200}' (repeatable; keys: kind, "
                        "format, resolution, min, max, values, bins, allow_missing, weight)")
    p.add_argument("--hints", metavar="FILE.yaml",
                   help="a YAML file of hints: {column: {kind: ..., ...}}")
    p.add_argument("--memory-limit-mb", type=float, default=None,
                   help="refuse, before reading it whole, a CSV whose loaded size is estimated "
                        "above this many MB")
    p.add_argument("--weight", action="append", default=[], metavar="COLUMN=W",
                   help="a column's weight in the DP budget split (default 1 each)")
    p.add_argument("--holdout-fraction", type=float, default=None, metavar="F",
                   help="propose from the training rows only: hold out this share of the "
                        "persons as runs with dataset.holdout_fraction=F do (default 0.2 for "
                        "--epsilon and --from-private, as runs hold out by default; 0: none)")
    p.add_argument("--split-seed", type=int, default=0, metavar="S",
                   help="the holdout's seed, as dataset.split_seed=S (default 0)")
    p.add_argument("--sep", default="comma", metavar="SEP",
                   help="the CSVs' delimiter: comma (default), tab, semicolon or pipe")
    p.add_argument("--encoding", default="utf-8",
                   help="the CSVs' text encoding (default utf-8; cp1252 or latin-1 for a "
                        "Windows export)")
    return p.parse_args(argv)


def settings_of(args: argparse.Namespace) -> ProposalSettings:
    chosen = [s for s, on in (("public", args.public is not None),
                              ("dp", args.epsilon is not None),
                              ("private", args.from_private)) if on]
    if not chosen:
        raise ConfigError(*NO_SOURCE)
    if len(chosen) > 1:
        raise ConfigError(f"choose one source, not {len(chosen)} ({', '.join(chosen)})",
                          NO_SOURCE[1])
    return ProposalSettings(chosen[0], epsilon=args.epsilon, delta=args.delta,  # type: ignore[arg-type]
                            bins=args.bins, max_categories=args.max_categories,
                            id_column=args.id_column,
                            max_rows_per_person=args.max_rows_per_person,
                            hints=hints_of_args(args))


def hints_of_args(args: argparse.Namespace) -> dict[str, Any]:
    """``--hints FILE``, then each ``--hint``, then each ``--weight`` (later ones win)."""
    parts = [read_hints_file(args.hints)] if args.hints else []
    parts += [parse_flow(text) for text in args.hint]
    parts += [parse_weight(text) for text in args.weight]
    return merged(*parts)


def selected(df: pd.DataFrame, args: argparse.Namespace, what: str,
             sample: bool = False) -> pd.DataFrame:
    """The table's chosen columns (names only in messages); a public ``sample`` need not
    have the columns dropped from DATA."""
    keep = [c.strip() for c in args.columns.split(",")] if args.columns else None
    drop = [c.strip() for c in args.drop.split(",")] if args.drop else []
    if sample:
        drop = [c for c in drop if c in df.columns]
    unknown = [c for c in (keep or []) + drop if c not in df.columns]
    if unknown:
        raise ConfigError(f"{what}: columns {unknown} not in its header",
                          f"use names from: {[str(c) for c in df.columns][:30]}")
    return (df[keep] if keep else df).drop(columns=drop)


def repeated_names(path: Path, sep: str = ",") -> list[str]:
    """The names that occur more than once in ``path``'s header row (a CSV reader would rename
    the second ``a`` to ``a.1`` and the proposal would carry both); [] when unreadable (the
    reader then says why)."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            header = [name.strip() for name in next(csv.reader(handle, delimiter=sep), [])]
    except (OSError, csv.Error):
        return []
    return sorted({name for name in header if header.count(name) > 1})


def refuse_repeated_names(path: Path, what: str, sep: str = ",") -> None:
    """A header that names a column twice is refused (column names are the schema's, not
    private values)."""
    repeated = repeated_names(path, sep)
    if repeated:
        raise DPArenaError(f"{what}: {path} names a column more than once in its header: "
                           f"{', '.join(map(repr, repeated))}",
                           "give every column its own name in the header row")


def run(args: argparse.Namespace) -> None:
    settings = settings_of(args)
    data = Path(args.data).expanduser()
    if not data.is_file():
        raise DPArenaError(f"data file not found: {data}", "pass the path of the CSV")
    limit = getattr(args, "memory_limit_mb", None)  # --memory-limit-mb, when the parser has it
    if limit:
        from dp_arena.run.preflight import check_file_fits

        check_file_fits("DATA", data, limit, setting="--memory-limit-mb")
        if args.public:
            check_file_fits("--public", Path(args.public).expanduser(), limit,
                            setting="--memory-limit-mb")
    given = getattr(args, "holdout_fraction", None)
    default = DEFAULT_HOLDOUT if settings.source in ("dp", "private") else 0.0
    fraction = checked_fraction(default if given is None else given, "--holdout-fraction")
    seed = checked_seed(getattr(args, "split_seed", 0), "--split-seed")
    form = (separator(args.sep, "--sep"), args.encoding, ("--sep", "--encoding"))
    refuse_repeated_names(data, "DATA", form[0])
    if args.public:
        refuse_repeated_names(Path(args.public).expanduser(), "--public", form[0])
    whole = read_csv_file(data, "DATA", *form)
    fraction = fraction if len(whole) else 0.0  # a file without rows: propose() says so
    raw, _ = split_holdout(whole, fraction, seed, args.id_column)
    private = selected(raw, args, "DATA")  # the training rows: held-out ones are dropped here
    if settings.source == "public":
        public = Path(args.public).expanduser()
        if not public.is_file():
            raise DPArenaError(f"--public: file not found: {public}",
                               "pass the path of a public sample CSV")
        sample = selected(read_csv_file(public, "--public", *form), args, "--public",
                          sample=True)
        missing = [str(c) for c in private.columns if c not in sample.columns]
        if missing:
            raise ConfigError(f"--public: the sample lacks columns {missing} of DATA",
                              "use a public sample with the same header, or --drop them")
        from dp_arena.data.overlap import refuse_overlap

        refuse_overlap(sample[list(private.columns)], private, "the --public sample", "DATA",
                       "pass a sample of another population or period (or a part of the data "
                       "set apart and never used as private), or propose from DATA itself: "
                       "--epsilon E (a DP proposal) or --from-private (labelled not DP)")
        proposal = propose(sample[list(private.columns)], settings)
    else:
        proposal = propose(private, settings)
    holdout = holdout_record(fraction, seed, args.id_column) if fraction else None
    written = write_proposal(proposal, Path(args.out).expanduser(), holdout)
    eps, delta = proposal.spent()
    cost = {"public": "from the public sample (no privacy cost)",
            "dp": f"DP proposal: spent epsilon={eps:.6g}, delta={delta:.3g} (ledger: "
                  f"{written[-1]})",
            "private": "from the private file (not DP): runs using it are marked"}
    print(f"proposed {len(proposal.schema.attributes)} column(s) {cost[proposal.source]}")
    for line in proposal.report:
        print(f"  {line}")
    print(f"wrote {', '.join(map(str, written))} (edit freely)")
    # a proposal read from DATA records its split, which the run takes by default
    split = (f" dataset.holdout_fraction={fraction:g} dataset.split_seed={seed}"
             if fraction and (given is not None or seed) else "")
    read_as = form_settings(form[0], args.encoding)
    split += "".join(f" dataset.{key}={value}" for key, value in read_as.items())
    print(f"run: dp-arena dataset=csv dataset.path={data} dataset.schema={written[0]}{split}")


def form_settings(sep: str, encoding: str) -> dict[str, str]:
    """The ``dataset.sep`` / ``dataset.encoding`` a sweep needs to read the file as this
    command read it (none for a comma-separated UTF-8 file)."""
    settings = {"sep": delimiter_name(sep)} if sep != "," else {}
    if encoding_label(encoding) != "UTF-8":
        settings["encoding"] = encoding
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run_or_explain("dp-arena-schema", lambda: run(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
