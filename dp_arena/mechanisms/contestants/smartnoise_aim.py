"""Adapter: smartnoise-synth's AIM; see ``smartnoise_common.py``. Run as
``python smartnoise_aim.py FOLDER`` in the ``smartnoise`` environment."""

from protocol import main
from smartnoise_common import fit_and_write

if __name__ == "__main__":
    main(lambda task: fit_and_write(task, "aim"))
