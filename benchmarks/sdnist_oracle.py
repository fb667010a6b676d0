"""SDNist's own k-marginal and unique-exact-match on one synthetic CSV, by SDNist's functions in
the order its report's ``Dataset`` applies them (sdnist 2.4, report/dataset/__init__.py):
validate, bin_density, transform, percentile_rank_target / _synthetic, add_bin_for_NA,
KMarginal, unique_exact_matches. Run with a Python that has ``sdnist`` installed (it pins old
pandas, so a throwaway venv); prints one JSON line. The oracle for dp-arena's ``sdnist`` metric
(benchmarks/bench_sdnist_identity.py, tests/test_sdnist_metric.py).

    python sdnist_oracle.py REAL.csv SYNTH.csv NIST_SCHEMA.json DATA_DICTIONARY.json COL,COL,...
"""

import json
import sys

import pandas as pd
import sdnist.report  # noqa: F401  (first: sdnist.metrics imports it back)
from sdnist.metrics.kmarginal import KMarginal
from sdnist.metrics.unique_exact_matches import unique_exact_matches
from sdnist.report.dataset.binning import (add_bin_for_NA, bin_density, percentile_rank_synthetic,
                                           percentile_rank_target)
from sdnist.report.dataset.transform import transform
from sdnist.report.dataset.validate import validate

NUMERIC = ['AGEP', 'POVPIP', 'PINCP', 'PWGTP', 'WGTP']


def main(real_csv, synth_csv, schema_json, dict_json, columns):
    schema = json.load(open(schema_json))['schema']
    ddict = json.load(open(dict_json))
    features = sorted(columns.split(','))
    target = pd.read_csv(real_csv, dtype={n: schema[n]['dtype'] for n in features},
                         usecols=features)
    synth = pd.read_csv(synth_csv)[features]
    c_synth, vlog = validate(synth, ddict, features, None)
    c_target, _ = validate(target, ddict, features, None)
    kept = sorted(c_synth.columns.tolist())
    c_synth, c_target = c_synth[kept], c_target[kept]
    if 'DENSITY' in kept:
        bin_density(c_target, ddict)
        bin_density(c_synth, ddict)
    t_target, t_synth = transform(c_target, schema), transform(c_synth, schema)
    d_target = add_bin_for_NA(percentile_rank_target(c_target, NUMERIC), c_target, NUMERIC)
    d_synth = add_bin_for_NA(percentile_rank_synthetic(c_synth, c_target, d_target, NUMERIC),
                             c_synth, NUMERIC)
    other = [c for c in kept if c not in NUMERIC]
    d_target[other] = t_target[other]
    d_synth[other] = t_synth[other]
    km = KMarginal(d_target, d_synth, ['PUMA'] if 'PUMA' in kept else [])
    score = km.compute_score()
    matched, pct, n_unique, _ = unique_exact_matches(c_target, c_synth)
    out = {'kmarginal': float(score), 'features': kept, 'dropped': sorted(vlog),
           'unique_exact_match_pct': pct, 'unique_matched': int(matched),
           'unique_real': int(n_unique)}
    if 'PUMA' in kept:
        out['kmarginal_puma_min'] = float(km.scores.min())
    print(json.dumps(out))


if __name__ == '__main__':
    main(*sys.argv[1:6])
