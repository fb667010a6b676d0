"""Extract the published SDNist scores of NIST's sample reports on the ACS national2019 excerpt
into ``dp_arena/report/sdnist_archive.csv`` (the board's archive rows, :mod:`dp_arena.report.archive`).

Reads a git checkout of usnistgov/SDNist (its ``sample-reports/acs_excerpt_reports/*/ui.json``,
the reports NIST publishes beside SDNist; each one deidentified sample of the CRC archive) at a
named commit, so every row carries its provenance: repository, commit and path.

    python benchmarks/sdnist_archive_rows.py --sdnist-git /path/to/SDNist/.git --ref v2.5.0

Writes nothing else and reads no private data: the reports are public.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import re
import subprocess
from pathlib import Path

REPORTS = "sample-reports/acs_excerpt_reports"
OUT = Path(__file__).resolve().parents[1] / "dp_arena" / "report" / "sdnist_archive.csv"
COLUMNS = ("report", "dp_arena_dataset", "algorithm", "library", "feature_set", "features", "target", "epsilon",
           "variant", "privacy_category", "team", "sdnist_version", "report_created",
           "deid_data_id", "kmarginal", "resembles_sample_pct", "subsample_scores",
           "repository", "commit", "path")


def git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True,
                          text=True).stdout


def labels_of(ui: dict) -> dict[str, str]:
    return {lab["Label Name"]: str(lab.get("Label Value", ""))
            for lab in ui["data_description"]["synthetic"][0]["labels"]}


def kmarginal_section(ui: dict) -> tuple[float, str, str]:
    """(the deidentified table's k-marginal score, the k% it resembles, the subsample table as
    'k%=score;...')."""
    texts = [a.get("data") for part in ui["utility"] for group in part["attachments"].values()
             for a in group]
    score = next(float(m.group(1)) for t in texts if isinstance(t, str)
                 for m in [re.search(r"K-Marginal Score: ([0-9.]+)", t)] if m)
    pct = next(m.group(1) for t in texts if isinstance(t, str)
               for m in [re.search(r"a ([0-9]+)% sub-sample", t)] if m)
    table = next(t for t in texts if isinstance(t, (list, str)) and "Sub-Sample Size" in str(t))
    rows = ast.literal_eval(table) if isinstance(table, str) else table
    subs = ";".join(f"{r['Sub-Sample Size']}={r['Sub-Sample K-Marginal Score']}" for r in rows)
    return score, pct, subs


def dataset_of(features: set[str]) -> str:
    """The ``dataset=acs`` feature set holding exactly ``features`` (``acs_<set>``, the name its
    runs carry), or "" when none does (NIST's custom sets)."""
    from dp_arena.data.acs import FEATURE_SETS

    return next((f"acs_{name}" for name, cols in FEATURE_SETS.items() if set(cols) == features),
                "")


def archive_rows(gitdir: str, ref: str) -> list[dict[str, str]]:
    commit = git(gitdir, "rev-parse", ref).strip()
    folders = git(gitdir, "ls-tree", "-d", "--name-only", commit, REPORTS + "/").split()
    rows = []
    for folder in sorted(folders):
        path = f"{folder}/ui.json"
        ui = json.loads(git(gitdir, "show", f"{commit}:{path}"))
        lab = labels_of(ui)
        score, pct, subs = kmarginal_section(ui)
        target = ui["data_description"]["target"][0]["data"]
        features = lab.get("Features List", "")
        names = {f.strip() for f in features.split(",") if f.strip()}
        rows.append({
            "report": folder.rsplit("/", 1)[-1], "dp_arena_dataset": dataset_of(names),
            "algorithm": lab.get("Algorithm Name", ""),
            "library": lab.get("Library Name", ""), "feature_set": lab.get("Feature Set Name", ""),
            "features": ";".join(f.strip() for f in features.split(",") if f.strip()),
            "target": next(d["Value"] for d in target if d["Property"] == "Filename"),
            "epsilon": lab.get("Epsilon", ""), "variant": lab.get("Variant Label", ""),
            "privacy_category": lab.get("Privacy Category", ""), "team": lab.get("Team", ""),
            "sdnist_version": str(ui.get("version", "")), "report_created": ui.get("Created on", ""),
            "deid_data_id": lab.get("Deid Data Id", ""), "kmarginal": f"{score:g}",
            "resembles_sample_pct": pct, "subsample_scores": subs,
            "repository": "usnistgov/SDNist", "commit": commit, "path": path})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdnist-git", required=True, help="SDNist's git directory")
    parser.add_argument("--ref", default="v2.5.0", help="tag or commit (default v2.5.0)")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    rows = archive_rows(args.sdnist_git, args.ref)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    for r in rows:
        print(f"{r['report']:48s} {r['algorithm']:14s} eps={r['epsilon'] or '-':4s} "
              f"{r['feature_set'][:22]:22s} k-marginal {r['kmarginal']:>5s} ~{r['resembles_sample_pct']}%")
    print(f"{len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
