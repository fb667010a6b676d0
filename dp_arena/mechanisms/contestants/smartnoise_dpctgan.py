"""Adapter: smartnoise-synth's DPCTGAN (see ``smartnoise_common.py``, the GANs and MWEM). Run
as ``python smartnoise_dpctgan.py FOLDER`` in the ``smartnoise`` environment."""

from protocol import main
from smartnoise_common import OverBudget, fit_and_write_pure_split

if __name__ == "__main__":
    main(lambda task: fit_and_write_pure_split(task, "dpctgan"), public_errors=(OverBudget,))
