"""rdqn.replay's public names, loaded with their modules on first use."""

from __future__ import annotations

import pytest

import rdqn.replay
from tests.run_helpers import fresh_python


def test_every_public_name_resolves_to_its_module() -> None:
    for name in rdqn.replay.__all__:
        value = getattr(rdqn.replay, name)
        assert value.__module__.startswith("rdqn.replay."), name
    assert set(rdqn.replay.__all__) <= set(dir(rdqn.replay))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        rdqn.replay.Nothing  # noqa: B018


def test_the_sizes_load_no_kernel() -> None:
    """A server checks a run's memory with `rdqn.replay.sizes` before a worker starts it."""
    script = (
        "import sys\n"
        "from rdqn.replay.sizes import replay_nbytes\n"
        "replay_nbytes(50_000, 4, 'rank')\n"
        "print(sorted(m for m in ('numba', 'scipy', 'torch') if m in sys.modules))\n"
        "from rdqn.replay import ReplayBuffer\n"
        "print('numba' in sys.modules)\n"
    )
    assert fresh_python(script).split("\n")[:2] == ["[]", "True"]
