"""Adapter: OpenDP's MST (``opendp.extras.mbi.MST``); dp-arena's config sets
``measure_split: 0.5`` while opendp#2789 is open (the default 0.9 fails OpenDP's own budget
check); see ``opendp_common.py``. Run as ``python opendp_mst.py FOLDER`` in the ``opendp``
environment."""

from opendp_common import fit_and_write, public_errors
from protocol import main

if __name__ == "__main__":
    main(lambda task: fit_and_write(task, "MST"), public_errors())
