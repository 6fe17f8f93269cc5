"""The adapter shared by the suites with gymnax's API: spaces of any of them, constructors' own complaints."""

import jax.numpy as jnp
import numpy as np
import pytest
from craftax.environment_base import spaces as craftax_spaces
from gymnax.environments import spaces as gymnax_spaces

from podracer.envs.suites import gymnax_env
from podracer.envs.suites.gymnax_api import space_to_spec


@pytest.mark.parametrize("spaces", [gymnax_spaces, craftax_spaces])  # Craftax keeps its own copy of gymnax's.
def test_spaces_convert_by_their_shape_whichever_suite_defines_them(spaces):
    assert space_to_spec(spaces.Discrete(17), "action") == space_to_spec(gymnax_spaces.Discrete(17), "action")
    box = space_to_spec(spaces.Box(0.0, 1.0, (3, 2), jnp.float32), "observation")
    assert (box.shape, box.dtype, float(box.minimum.max()), float(box.maximum.min())) == ((3, 2), np.float32, 0, 1)


def test_a_constructors_own_complaint_is_a_value_error_naming_the_settings():
    with pytest.raises(ValueError, match=r"gymnax MetaMaze-misc cannot be built with maze_size=10: AssertionError"):
        gymnax_env.make("MetaMaze-misc", maze_size=10)  # MetaMaze asserts an odd size.
    with pytest.raises(ValueError, match=r"cannot be built with map_name='5x5': ValueError: map_name must be"):
        gymnax_env.make("FrozenLake-misc", map_name="5x5")


def test_constructor_arguments_have_their_defaults_types():
    with pytest.raises(ValueError, match=r"gymnax Catch-bsuite's rows must be a whole number, got '6'"):
        gymnax_env.make("Catch-bsuite", rows="6")
    lake = gymnax_env.make("FrozenLake-misc", map_name=None, desc=["SF", "HG"])  # None: a constructor's "not given".
    assert lake.observation_spec().num_values == 4
