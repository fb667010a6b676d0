"""A schema proposal written to disk: ``parameters.json`` with its ``proposal`` block, and the
DP proposal's ledger beside it.

- :func:`write_proposal`: the schema (with where each column came from, its DP spend and what
  it keeps) and, for a DP proposal, ``<stem>.ledger.json``, staged in the target folder and
  moved into place together: both files appear, or neither;
- :func:`column_entry`: one column's line in ``proposal.columns``.

Privacy: the files hold the proposal's schema, which is public (a public sample's), a DP
release (charged to the ledger written beside it) or, for ``source="private"``, exact private
values that the proposal labels "not DP" (and :mod:`dp_arena.data.provenance` remembers, so the
mark survives deleting the block). A from-private column's shares (``keeps``, ``largest``) are
exact private statistics and are never written. Used by ``dp-arena-schema`` and the Python
API (:func:`dp_arena.api.run_competition` with a :class:`~dp_arena.data.propose.Proposal`).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from dp_arena.data.conform import proposal_block
from dp_arena.data.propose import ColumnReport, Proposal
from dp_arena.data.provenance import register_from_private
from dp_arena.data.schema import Schema
from dp_arena.errors import DPArenaError


def column_entry(report: ColumnReport, schema: Schema) -> dict[str, Any]:
    """A column's line in ``proposal.columns``: where it came from, its spend, its codes and
    (public sample or DP proposal only: a from-private schema's shares are exact private
    statistics) the share of values it keeps and its largest code's share."""
    entry: dict[str, Any] = {"from": report.origin}
    if report.origin == "dp":
        entry.update(epsilon=report.epsilon, delta=report.delta)
    if report.name in schema.names:
        entry["codes"] = schema[report.name].present_size
    if report.origin in ("dp", "public"):
        for key, share in (("keeps", report.kept_share), ("largest", report.largest_share)):
            if share is not None:
                entry[key] = round(float(share), 3)
    return entry


def proposal_files(proposal: Proposal, out: Path,
                   holdout: dict[str, Any] | None = None) -> dict[Path, str]:
    """Path -> text of the files :func:`write_proposal` writes (the schema first)."""
    ledger_path = out.with_name(out.stem + ".ledger.json")
    params = proposal.schema.to_parameters()
    params["proposal"] = proposal_block(proposal.source, proposal.spent(),
                                        ledger_path.name if proposal.ledger else None)
    if holdout:
        params["proposal"]["holdout"] = holdout
    if proposal.dropped:
        params["proposal"]["dropped"] = list(proposal.dropped)
    if proposal.columns:  # where each column came from, its DP spend and what it keeps
        params["proposal"]["columns"] = {c.name: column_entry(c, proposal.schema)
                                         for c in proposal.columns}
    files = {out: json.dumps(params, indent=1)}
    if proposal.ledger is not None:
        files[ledger_path] = json.dumps(proposal.ledger, indent=1, default=str)
    return files


def write_proposal(proposal: Proposal, out: Path,
                   holdout: dict[str, Any] | None = None) -> list[Path]:
    """Write the schema (with its ``proposal`` block, and ``holdout``: the split the proposal
    was made on) and, for DP, the ledger, atomically: both files appear, or neither. Returns
    the paths written, the schema first."""
    files = proposal_files(proposal, out, holdout)
    if proposal.source == "private":  # marks that survive deleting the block (before writing)
        register_from_private(proposal.schema)
    staged: list[tuple[Path, Path]] = []
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{path.name}.")
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            staged.append((Path(tmp), path))
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise DPArenaError(f"cannot write {out} ({exc.strerror or exc})",
                           "pass an --out path in a folder you can write to") from None
    return list(files)
