"""`scripts/compare_purejaxrl.py`: how a run is cut into podracer's dispatches so that both sides make the same updates.

Timing itself needs a PureJaxRL checkout and is not tested here.
"""

import importlib.util
import os

import pytest

from tests.helpers import ROOT

SPEC = importlib.util.spec_from_file_location(
    "compare_purejaxrl", os.path.join(ROOT, "scripts", "compare_purejaxrl.py")
)
compare = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(compare)


@pytest.mark.parametrize(
    "updates, most, expected",
    [
        (976, 61, (61, 976)),  # CleanRL's CartPole: 16 dispatches of 61.
        (38, 4, (2, 38)),  # 2,048 environments, 1e7 steps: PureJaxRL's 38 updates, in pairs.
        (19531, 61, (61, 19520)),  # No divisor near 61: the last partial dispatch is dropped on both sides.
        (3, 4, (3, 3)),
        (0, 4, (4, 0)),  # Fewer steps than one update: the script refuses the run.
    ],
)
def test_dispatches_keep_the_updates_of_both_sides_equal(updates, most, expected):
    assert compare._dispatches(updates, most) == expected
