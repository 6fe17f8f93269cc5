"""`podracer.envs.spaces`: every suite's spaces as dm_env specs, against specs written out by hand.

Gymnasium's classes stand for the spaces with `n` and `low`/`high` (gymnax's,
Craftax's and JaxMARL's have the same attributes), stoa's for those with
`num_values` and `minimum`/`maximum`, multi-discrete and unbounded arrays.
"""

import gymnasium
import jax
import numpy as np
import pytest
from dm_env import specs

from podracer.envs import multi_agent, spaces
from podracer.envs.spaces import space_to_spec
from podracer.envs.suites.stoa_modules import stoa_module

stoa = stoa_module("spaces")
box, discrete = gymnasium.spaces.Box, gymnasium.spaces.Discrete


def assert_same_spec(actual, expected):
    """The same nest of specs: class, name, shape, dtype and bounds (values and form), dict keys in order."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected)
        for key in expected:
            assert_same_spec(actual[key], expected[key])
        return
    assert type(actual) is type(expected) and actual.name == expected.name and actual == expected
    if isinstance(expected, specs.BoundedArray):
        assert np.shape(actual.minimum) == np.shape(expected.minimum)
        assert np.shape(actual.maximum) == np.shape(expected.maximum)


@pytest.mark.parametrize(
    "space, expected",
    [
        (discrete(4), specs.DiscreteArray(4, np.int32, name="x")),  # Gymnasium's int64: actions are int32.
        (stoa.DiscreteSpace(4, np.int32), specs.DiscreteArray(4, np.int32, name="x")),
        (box(-2.0, 2.0, (3,), np.float32), specs.BoundedArray((3,), np.float32, -2.0, 2.0, name="x")),
        (box(0, 255, (2, 2), np.uint8), specs.BoundedArray((2, 2), np.uint8, 0, 255, name="x")),
        (
            box(np.array([0, -1]), np.array([3, 1]), (2,), np.int32),
            specs.BoundedArray((2,), np.int32, np.array([0, -1]), np.array([3, 1]), name="x"),
        ),
        (
            stoa.BoundedArraySpace((2,), np.float32, 0.0, 8.0),
            specs.BoundedArray((2,), np.float32, 0.0, 8.0, name="x"),
        ),
        (
            stoa.MultiDiscreteSpace([3, 5], np.int32),
            specs.BoundedArray((2,), np.int32, 0, np.array([2, 4]), name="x"),
        ),
        (stoa.ArraySpace((3,), np.uint8), specs.Array((3,), np.uint8, name="x")),
    ],
)
def test_a_space_is_its_spec(space, expected):
    assert_same_spec(space_to_spec(space, "x"), expected)


def test_dicts_nest_by_sorted_key_and_name_their_entries():
    space = gymnasium.spaces.Dict(
        {"b": box(-1.0, 1.0, (2,), np.float64), "a": gymnasium.spaces.Dict({"c": discrete(3)})}
    )
    expected = {
        "a": {"c": specs.DiscreteArray(3, np.int32, name="c")},
        "b": specs.BoundedArray((2,), np.float64, -1.0, 1.0, name="b"),
    }
    assert_same_spec(space_to_spec(space, "observation"), expected)
    stoa_space = stoa.DictSpace({"z": stoa.ArraySpace((), np.float32), "y": stoa.DiscreteSpace(2, np.int32)})
    expected = {"y": specs.DiscreteArray(2, np.int32, name="y"), "z": specs.Array((), np.float32, name="z")}
    assert_same_spec(space_to_spec(stoa_space, "observation"), expected)


def test_float32_makes_floating_leaves_float32_and_keeps_the_others():
    space = gymnasium.spaces.Dict({"f": box(-1.0, 1.0, (2,), np.float64), "i": box(0, 9, (2,), np.int64)})
    expected = {
        "f": specs.BoundedArray((2,), np.float32, -1.0, 1.0, name="f"),
        "i": specs.BoundedArray((2,), np.int64, 0, 9, name="i"),
    }
    assert_same_spec(space_to_spec(space, "observation", float32=True), expected)


def test_like_gives_the_shapes_and_dtypes_the_environment_returns():
    floats, ints = jax.ShapeDtypeStruct((), np.float32), jax.ShapeDtypeStruct((), np.int16)
    assert_same_spec(space_to_spec(discrete(4), "x", like=ints), specs.DiscreteArray(4, np.int16, name="x"))
    assert_same_spec(space_to_spec(discrete(4), "x", like=floats), specs.BoundedArray((), np.float32, 0, 3, name="x"))
    board = jax.ShapeDtypeStruct((10, 5), np.float32)  # gymnax's Catch-bsuite declares int32 for float32 boards.
    expected = specs.BoundedArray((10, 5), np.float32, 0.0, 1.0, name="x")
    assert_same_spec(space_to_spec(box(0, 1, (10, 5), np.int32), "x", like=board), expected)
    unbounded = space_to_spec(stoa.ArraySpace((3,), np.uint8), "x", like=jax.ShapeDtypeStruct((3,), np.float32))
    assert_same_spec(unbounded, specs.Array((3,), np.float32, name="x"))
    nested = space_to_spec(gymnasium.spaces.Dict({"a": discrete(2)}), "obs", like={"a": ints})
    assert_same_spec(nested, {"a": specs.DiscreteArray(2, np.int16, name="a")})


@pytest.mark.parametrize(
    "space, message",
    [
        (gymnasium.spaces.Tuple([discrete(2)]), "cannot convert the Tuple space"),
        (stoa.TupleSpace([stoa.DiscreteSpace(2, np.int32)]), "cannot convert the TupleSpace space"),
        (discrete(4, start=1), "its values start at 1, not 0"),
        (gymnasium.spaces.Text(5), "cannot convert the Text space"),
    ],
)
def test_other_spaces_are_refused_naming_them(space, message):
    with pytest.raises(NotImplementedError, match=message):
        space_to_spec(space, "x")


def test_the_host_environments_accept_box_observations_and_two_kinds_of_action():
    assert_same_spec(
        spaces.array_spec(box(0, 1, (2,), np.float64), "o", float32=True),
        specs.BoundedArray((2,), np.float32, 0.0, 1.0, name="o"),
    )
    assert_same_spec(spaces.action_spec(discrete(3)), specs.DiscreteArray(3, np.int32, name="action"))
    expected = specs.BoundedArray((2,), np.float32, -1.0, 1.0, name="action")
    assert_same_spec(spaces.action_spec(box(-1.0, 1.0, (2,), np.float64)), expected)
    for observations in (discrete(3), gymnasium.spaces.Dict({"a": gymnasium.spaces.MultiBinary(2)})):
        with pytest.raises(ValueError, match="Only Box and Dict observation spaces.*FlattenObservation"):
            spaces.array_spec(observations, "o")
    for actions in (box(0, 3, (2,), np.int64), discrete(3, start=1), gymnasium.spaces.MultiBinary(2)):
        with pytest.raises(ValueError, match="Only discrete actions 0..n-1"):
            spaces.action_spec(actions)


def test_alike_agents_actions_stack_on_an_agent_axis():
    ids = multi_agent.stacked_action_spec(space_to_spec(discrete(5), "action"), 3)
    assert_same_spec(ids, specs.BoundedArray((3,), np.int32, 0, 4, name="action"))
    low, high = np.array([-1.0, 0.0], np.float32), np.array([1.0, 2.0], np.float32)
    reals = space_to_spec(box(low, high, (2,), np.float32), "action")
    expected = specs.BoundedArray((3, 2), np.float32, low, high, name="action")
    assert_same_spec(multi_agent.stacked_action_spec(reals, 3), expected)
