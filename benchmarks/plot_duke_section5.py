"""The Duke report's section 5 (``../shared/seeds/004_*.txt``): its worked example, the inverse,
and its Figures 1 and 2 as PNG files (public settings only, no data).

    .venv/bin/python benchmarks/plot_duke_section5.py [--out DIR]

Prints the exact 0.90 interval of the worked example (p_i0 = 0.25, lambda = 0.4, n_B = 1000),
the smallest n_B for a 0.05-wide interval and for one inside [0.22, 0.27], then writes
``duke_figure_1.png`` and ``duke_figure_2.png`` into ``DIR`` (default: the current folder).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dp_arena.mechanisms.rdt.leaf_size import (
    figure_1,
    figure_2,
    report_interval,
    report_min_n_B,
    report_min_n_B_within,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    lo, hi = report_interval(1000, 0.25, 0.4, 0.90)
    print(f"worked example: p_i0 0.25, lambda 0.4, n_B 1000: 0.90 interval [{lo:.4f}, {hi:.4f}] "
          f"(the report: 'within [0.22, 0.27]')")
    print(f"smallest n_B for a 0.05-wide interval: {report_min_n_B(0.05, 0.90, 0.25, 0.4)}; "
          f"for one inside [0.22, 0.27]: {report_min_n_B_within(0.22, 0.27, 0.90, 0.25, 0.4)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, fig in (("duke_figure_1.png", figure_1()), ("duke_figure_2.png", figure_2())):
        fig.savefig(out / name, dpi=110)
        print(f"wrote {out / name}")


if __name__ == "__main__":
    main()
