"""The local secret key (dp_arena/privacy/secret.py): a key file others may read is refused,
with the fix."""

from __future__ import annotations

import os

import pytest

from dp_arena.errors import DPArenaError
from dp_arena.privacy.secret import local_secret


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_secret_key_others_may_read_is_refused_with_the_fix(tmp_path, mode):
    key = tmp_path / "secret.key"
    key.write_bytes(os.urandom(32))
    key.chmod(mode)
    with pytest.raises(DPArenaError) as err:
        local_secret(key)
    assert "group or others" in str(err.value) and f"chmod 600 {key}" in str(err.value)
    key.chmod(0o600)
    assert local_secret(key) == key.read_bytes()
