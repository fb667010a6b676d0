"""Adapter: OpenDP's AIM (``opendp.extras.mbi.AIM``, its defaults unless ``options`` say
otherwise); see ``opendp_common.py``. Run as ``python opendp_aim.py FOLDER`` in the ``opendp``
environment."""

from opendp_common import fit_and_write, public_errors
from protocol import main

if __name__ == "__main__":
    main(lambda task: fit_and_write(task, "AIM"), public_errors())
