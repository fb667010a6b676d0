"""``dp-arena-prepare``: turn real data exports into a table and schema ``dataset=csv`` reads.

    dp-arena-prepare chicago EXPORT.csv OUT/

reads a City of Chicago "Taxi Trips" export (data portal or BigQuery column names), prepares
it as the NIST Sprint 3 challenge did (:mod:`dp_arena.data.taxi.chicago`: taxi-weeks, shifts,
community areas, coded companies, at most 200 trips per taxi-week, whole-unit integers) and
writes ``OUT/trips.csv``, ``OUT/parameters.json`` and ``OUT/companies.json`` (the company
name -> code map, derived from the private data: keep it with the data), each with mode 0600
(owner only). Then

    dp-arena dataset=csv dataset.path=OUT/trips.csv dataset.schema=OUT/parameters.json

runs a competition on it. Messages give counts only, never a value or a row of the export.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from dp_arena.cli.exits import run_or_explain
from dp_arena.data.taxi.chicago import Prepared, prepare_trips, read_export
from dp_arena.errors import DPArenaError


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="dp-arena-prepare",
        description="Prepare a real data export as a table + parameters.json for dataset=csv.")
    sources = parser.add_subparsers(dest="source", required=True, metavar="SOURCE")
    chicago = sources.add_parser(
        "chicago", help="a City of Chicago 'Taxi Trips' export -> the NIST Sprint 3 schema",
        description="Prepare a City of Chicago 'Taxi Trips' CSV export (data portal or "
                    "BigQuery column names) the way the NIST Sprint 3 challenge did.")
    chicago.add_argument("export", help="the export CSV")
    chicago.add_argument("out", help="output folder (created if missing)")
    return parser.parse_args(argv)


#: Mode of the files written: owner read/write only (the trips and the company map are private
#: data; the schema is written the same way, since its domain was read from the export).
PRIVATE_MODE = 0o600


def write_private(path: Path, write: Callable[[Path], object]) -> None:
    """``write(path)`` into a file created with mode 0600 (whatever the umask), replacing it."""
    path.unlink(missing_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE))
    os.chmod(path, PRIVATE_MODE)
    write(path)


def write_outputs(out: Path, prepared: Prepared) -> dict[str, Path]:
    """Write the table, its schema and the company map into ``out``, each readable by its
    owner only (mode 0600)."""
    paths = {"trips": out / "trips.csv", "schema": out / "parameters.json",
             "companies": out / "companies.json"}
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_private(paths["trips"], lambda p: prepared.trips.to_csv(p, index=False))
        write_private(paths["schema"], prepared.schema.save)
        write_private(paths["companies"],
                      lambda p: p.write_text(json.dumps(prepared.companies, indent=1)))
    except OSError as exc:
        raise DPArenaError(f"cannot write to output folder {out} ({exc.strerror or exc})",
                           "pass an output folder you can write to") from None
    return paths


def run_chicago(args: argparse.Namespace) -> None:
    prepared = prepare_trips(read_export(Path(args.export).expanduser()))
    paths = write_outputs(Path(args.out).expanduser(), prepared)
    trips = prepared.trips
    people = (f", {trips['taxi_id'].nunique():,} taxi-weeks" if prepared.unit == "user"
              else "")
    print(f"prepared {len(trips):,} trips{people}: {prepared.unit}-level privacy unit")
    for note in prepared.notes:
        print(f"note: {note}")
    print(f"wrote {paths['trips']}, {paths['schema']} and {paths['companies']} "
          "(company name -> code; derived from the private data)")
    print(f"run: dp-arena dataset=csv dataset.path={paths['trips']} "
          f"dataset.schema={paths['schema']} dataset.label=chicago")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run_or_explain("dp-arena-prepare", lambda: run_chicago(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
