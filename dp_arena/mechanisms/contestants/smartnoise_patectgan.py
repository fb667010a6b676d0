"""Adapter: smartnoise-synth's PATECTGAN (see ``smartnoise_common.py``, the GANs and MWEM). Run
as ``python smartnoise_patectgan.py FOLDER`` in the ``smartnoise`` environment."""

from protocol import main
from smartnoise_common import fit_and_write_pure_split

if __name__ == "__main__":
    main(lambda task: fit_and_write_pure_split(task, "patectgan"))
