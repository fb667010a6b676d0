"""Adapter: dpmm's AIM (``dpmm.models.aim.AIMGM``, dpmm 0.1.9) with the task's domain; see
``dpmm_common.py``. Run as ``python dpmm_aim.py FOLDER`` in the ``dpmm`` environment."""

from dpmm_common import fit_and_write
from protocol import main

if __name__ == "__main__":
    main(lambda task: fit_and_write(task, "AIM"))
