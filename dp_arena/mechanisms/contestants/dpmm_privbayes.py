"""Adapter: dpmm's PrivBayes (``dpmm.models.priv_bayes.PrivBayesGM``, dpmm 0.1.9) with the task's
domain; see ``dpmm_common.py``. Run as ``python dpmm_privbayes.py FOLDER`` in the ``dpmm``
environment."""

from dpmm_common import fit_and_write
from protocol import main

if __name__ == "__main__":
    main(lambda task: fit_and_write(task, "PrivBayes"))
