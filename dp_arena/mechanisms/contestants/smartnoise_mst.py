"""Adapter: smartnoise-synth's MST; see ``smartnoise_common.py``. Run as
``python smartnoise_mst.py FOLDER`` in the ``smartnoise`` environment."""

from protocol import main
from smartnoise_common import fit_and_write

if __name__ == "__main__":
    main(lambda task: fit_and_write(task, "mst"))
