"""The suites podracer reaches through stoa (Jumanji, Navix, XLand-MiniGrid): each suite's own steps, episode ends,
specs, action masks and settings, and stoa's spaces as specs (`podracer.envs.spaces.space_to_spec`)."""

import dataclasses
import functools
import subprocess
import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jumanji
import navix
import numpy as np
import pytest
import xminigrid
from dm_env import specs

from podracer.config.errors import ConfigError
from podracer.envs import FIRST, LAST, MID, AutoReset
from podracer.envs.actions import ACTION_MASK
from podracer.envs.spaces import space_to_spec
from podracer.envs.suites import jumanji_env, navix_env, stoa_env, stoa_modules, xminigrid_env
from tests.helpers import HANG_SECONDS

spaces = stoa_modules.stoa_module("spaces")  # stoa's own, imported without the suites these tests do not use.

pytestmark = pytest.mark.slow  # The whole file: see conftest.py.

KEY = jax.random.key(0)
JUMANJI_LAST = int(jumanji.types.StepType.LAST)
XMINIGRID_LAST = int(xminigrid.types.StepType.LAST)


# Each suite's own step from the adapter's state, built without stoa: (observation as a nest, reward, terminated,
# truncated). Jumanji and XLand-MiniGrid say "terminated" with a LAST step type and discount 0.
def _jumanji_step(suite, state, action):
    state, timestep = suite.step(state, action)
    last = timestep.step_type == JUMANJI_LAST
    return timestep.observation._asdict(), timestep.reward, last & (timestep.discount == 0), last


def _navix_step(suite, state, action):
    timestep = suite.step(state, action)
    return timestep.observation, timestep.reward, timestep.is_termination(), timestep.is_truncation()


def _xminigrid_step(suite, state, action):
    suite, params = suite
    timestep = suite.step(params, state, action)
    last = timestep.step_type == XMINIGRID_LAST
    return timestep.observation, timestep.reward, last & (timestep.discount == 0), last


def _suite(task, **kwargs):
    """(the adapter, the suite's environment built by the suite itself, its step as above, its reset's observation)."""
    if task.startswith("Navix"):
        suite = navix.make(task, **kwargs)
        return navix_env.make(task, **kwargs), suite, _navix_step, lambda key: suite.reset(key).observation
    if task.startswith("MiniGrid"):
        suite, params = xminigrid.make(task, **kwargs)
        env = xminigrid_env.make(task, **kwargs)
        return env, (suite, params), _xminigrid_step, lambda key: suite.reset(params, key).observation
    suite = jumanji.make(task, **kwargs)
    return jumanji_env.make(task, **kwargs), suite, _jumanji_step, lambda key: suite.reset(key)[1].observation._asdict()


ROLLOUT_STEPS = 60  # Every rollout's length: the tests of a task and its settings share one compiled program.


@functools.cache
def _compiled_rollout(task, settings):
    """The jitted rollout of `task` with `settings` (sorted (name, value) pairs), from a key over ROLLOUT_STEPS actions."""
    env, suite, suite_step, suite_reset = _suite(task, **dict(settings))

    @jax.jit
    def run(key, actions):
        def step(state, action):
            expected = suite_step(suite, state, action)
            state, timestep = env.step(state, action)
            return state, (timestep, expected)

        state, first = env.reset(key)
        return (first, suite_reset(key)), *jax.lax.scan(step, state, actions)[1]

    return run


def _rollout(task, actions, key=KEY, **kwargs):
    """The adapter's FIRST timestep and its timesteps over `actions` up to its first LAST, each beside the suite's
    own reset and steps from the same key and states: ((first, the suite's first observation), timesteps,
    (observations, rewards, terminated, truncated)). Fewer than ROLLOUT_STEPS actions are padded with 0s, after
    the steps that matter: a rollout that must end does so within `actions`, checked here."""
    padded = np.zeros(ROLLOUT_STEPS, np.int32)
    padded[: len(actions)] = actions
    run = _compiled_rollout(task, tuple(sorted(kwargs.items())))
    first, timesteps, expected = jax.device_get(run(key, jnp.asarray(padded)))
    end = int(np.argmax(timesteps.step_type == LAST)) if (timesteps.step_type == LAST).any() else len(actions) - 1
    assert end < len(actions), f"{task}: the first LAST is after the {len(actions)} actions given"
    return first, *jax.tree.map(lambda x: x[: end + 1], (timesteps, expected))


def _random_actions(count, seed=0):
    return np.random.default_rng(seed).integers(4, size=count)


# MiniGrid's random episode reaches its time limit; its goal, in the termination test, is 11 steps away.
MINIGRID_SETTINGS = {"max_steps": 40}


@pytest.mark.slow  # Compiles four suites' steps: about 10 s on 2 cores.
@pytest.mark.parametrize(
    "task, actions, kwargs",
    [
        ("Snake-v1", _random_actions(ROLLOUT_STEPS), {}),
        ("Game2048-v1", _random_actions(ROLLOUT_STEPS), {}),
        ("Navix-Empty-5x5-v0", _random_actions(ROLLOUT_STEPS), {}),
        ("MiniGrid-Empty-8x8", _random_actions(ROLLOUT_STEPS), MINIGRID_SETTINGS),
    ],
)
def test_timesteps_are_the_suites_own_steps(task, actions, kwargs):
    (first, suite_first), timesteps, (observations, rewards, terminated, truncated) = _rollout(task, actions, **kwargs)
    assert int(first.step_type) == FIRST and float(first.discount) == 1.0
    jax.tree.map(np.testing.assert_array_equal, first.observation, suite_first)
    jax.tree.map(np.testing.assert_array_equal, timesteps.observation, observations)  # Navix's uint8 as float32.
    np.testing.assert_array_equal(timesteps.reward, rewards.astype(np.float32))
    np.testing.assert_array_equal(timesteps.step_type, np.where(terminated | truncated, LAST, MID))
    np.testing.assert_array_equal(timesteps.discount, np.where(terminated, 0.0, 1.0))
    assert timesteps.reward.dtype == np.float32 and timesteps.discount.dtype == np.float32


@pytest.mark.slow  # The programs of test_timesteps_are_the_suites_own_steps, from other actions.
@pytest.mark.parametrize(
    "task, actions, kwargs",
    [
        ("Snake-v1", [0] * 12, {}),  # Up into the wall, from any row of 12.
        ("Navix-Empty-5x5-v0", [2, 2, 1, 2, 2], {}),  # Forward twice, turn clockwise, forward twice: the goal.
        ("MiniGrid-Empty-8x8", [0] * 5 + [1] + [0] * 5, MINIGRID_SETTINGS),  # Forward 5, turn right, forward 5.
    ],
)
def test_termination_is_last_with_discount_zero_and_the_final_observation(task, actions, kwargs):
    _, timesteps, (observations, _, terminated, _) = _rollout(task, actions, **kwargs)
    end = len(timesteps.step_type) - 1
    assert terminated[end] and timesteps.step_type[end] == LAST and timesteps.discount[end] == 0.0
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x[end], y[end]), timesteps.observation, observations)
    if task == "Snake-v1":
        assert timesteps.observation["step_count"][end] == end + 1  # The last step's observation, not a reset's.
    else:
        assert timesteps.reward[end] > 0  # The goal reached.


@pytest.mark.slow  # Compiles a suite's step: 5 to 12 s each on 2 cores.
@pytest.mark.parametrize(
    "task, kwargs",
    [
        ("Snake-v1", {"time_limit": 3}),
        ("Navix-Empty-5x5-v0", {"max_steps": 3}),
        ("MiniGrid-Empty-8x8", {"max_steps": 3}),
    ],
)
def test_time_limit_is_last_with_discount_one(task, kwargs):
    actions = [1] * 3  # The grid worlds turn in place.
    if task == "Snake-v1":  # Right or left along the head's row, away from the nearer wall (12 columns).
        state, _ = jumanji_env.make(task).reset(KEY)
        actions = [1 if state.head_position.col < 6 else 3] * 3
    _, timesteps, (_, _, terminated, truncated) = _rollout(task, actions, **kwargs)
    np.testing.assert_array_equal(timesteps.step_type, [MID, MID, LAST])
    np.testing.assert_array_equal(timesteps.discount, [1.0, 1.0, 1.0])
    # Jumanji's own step calls its time limit a termination (discount 0); the adapter makes it a truncation.
    assert truncated[-1] and terminated[-1] == (task == "Snake-v1") and not terminated[:-1].any()
    spec = _make(_NAMES[task], **kwargs).observation_spec()
    jax.tree.map(lambda spec, x: spec.validate(x[-1]), spec, timesteps.observation)  # Snake's step_count is 3.


TASKS = ["jumanji:Snake-v1", "jumanji:Game2048-v1", "navix:Navix-Empty-5x5-v0", "xminigrid:MiniGrid-Empty-8x8"]
_NAMES = {name.split(":")[1]: name for name in TASKS}
MAKE = {"jumanji": jumanji_env.make, "navix": navix_env.make, "xminigrid": xminigrid_env.make}


def _make(name, **kwargs):
    suite, task = name.split(":")
    return MAKE[suite](task, **kwargs)


@pytest.mark.slow  # Compiles four suites' steps: about 8 s on 2 cores.
@pytest.mark.parametrize("name", TASKS)
def test_specs_describe_what_the_environment_returns_over_episodes(name):
    """Specs read before any step; observations of 300 random steps (through episode ends and resets) fit them."""
    env = _make(name)
    observation_spec, action_spec = env.observation_spec(), env.action_spec()
    assert isinstance(action_spec, specs.DiscreteArray) and action_spec.dtype == np.int32
    auto = AutoReset(env)

    @jax.jit
    def run(key):
        state, first = auto.reset(key)
        actions = jax.random.randint(key, (300,), 0, action_spec.num_values)
        return first, jax.lax.scan(auto.step, state, actions)[1]

    first, timesteps = jax.device_get(run(KEY))
    assert (timesteps.step_type == LAST).any() and (timesteps.step_type == FIRST).any()
    flat_specs = jax.tree.leaves(observation_spec, is_leaf=lambda x: isinstance(x, specs.Array))
    for spec, observed, stepped in zip(
        flat_specs, jax.tree.leaves(first.observation), jax.tree.leaves(timesteps.observation), strict=True
    ):
        spec.validate(observed)
        for observation in stepped:
            spec.validate(observation)


@pytest.mark.slow  # Compiles Game2048's reset and step: about 7 s on 2 cores.
def test_action_masks_are_the_suites_legal_moves():
    env, suite, _, _ = _suite("Game2048-v1")
    assert env.observation_spec()[ACTION_MASK] == specs.BoundedArray((4,), bool, False, True, name=ACTION_MASK)

    @jax.jit
    def masks(key):
        """The adapter's and Jumanji's masks: on reset, and after each move from there."""
        state, timestep = env.reset(key)
        moves = jnp.arange(4, dtype=jnp.int32)
        ours = jax.vmap(lambda a: env.step(state, a)[1].observation[ACTION_MASK])(moves)
        jumanjis = jax.vmap(lambda a: suite.step(state, a)[1].observation.action_mask)(moves)
        return timestep.observation[ACTION_MASK], suite.reset(key)[1].observation.action_mask, ours, jumanjis

    first, jumanji_first, ours, jumanjis = masks(KEY)
    assert first.dtype == jnp.bool_ and first.shape == (4,) and ours.dtype == jnp.bool_
    np.testing.assert_array_equal(first, jumanji_first)
    np.testing.assert_array_equal(ours, jumanjis)
    assert not ours.all()  # Some move is illegal somewhere: the masks say something.


def test_settings_reach_the_suites():
    assert _make("jumanji:Snake-v1", num_rows=6).observation_spec()["grid"].shape == (6, 12, 5)
    assert _make("navix:Navix-Empty-5x5-v0", max_steps=7).stoa_env._env.max_steps == 7
    assert _make("xminigrid:MiniGrid-Empty-8x8", view_size=5).observation_spec().shape == (5, 5, 2)
    assert _make("jumanji:Snake-v1", time_limit=9) == _make("jumanji:Snake-v1", time_limit=9)


@pytest.mark.parametrize(
    "name, kwargs, message",
    [
        ("jumanji:Snake-v1", {"rows": 5}, r"jumanji Snake-v1 has no setting rows: it accepts \['num_cols', 'num_rows'"),
        ("jumanji:Snake-v1", {"time_limit": 0}, "time_limit must be a whole number >= 1, got 0"),
        ("jumanji:Game2048-v1", {"board_size": 4.5}, "board_size must be a whole number >= 1"),
        ("navix:Navix-Empty-5x5-v0", {"height": 6}, r"has no setting height: it accepts \['action_set', 'gamma'"),
        ("navix:Navix-Empty-5x5-v0", {"gamma": "high"}, "gamma must be a number, got 'high'"),
        ("navix:Navix-Empty-5x5-v0", {"random_start": True}, r"does not accept \['random_start'\].*it accepts"),
        ("xminigrid:MiniGrid-Empty-8x8", {"max_step": 5}, r"has no setting max_step: it accepts \[.*'max_steps'"),
        ("xminigrid:MiniGrid-Empty-8x8", {"max_steps": 2.5}, "max_steps must be a whole number >= 1, got 2.5"),
    ],
)
def test_bad_settings_name_what_is_accepted(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        _make(name, **kwargs)


def test_tasks_are_the_suites_registries():
    for module, task in [
        (jumanji_env, "Snake-v1"),
        (navix_env, "Navix-Empty-5x5-v0"),
        (xminigrid_env, "MiniGrid-Empty-8x8"),
    ]:
        assert module.is_task(task) and task in module.task_names() and not module.is_task(task + "x")
    assert sorted(jumanji_env.task_names()) == sorted(jumanji.registered_environments())


def test_multi_agent_jumanji_tasks_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"config.env.name: jumanji LevelBasedForaging-v0 has one reward per agent"):
        jumanji_env.make("LevelBasedForaging-v0")


def test_adapters_are_hashable_values():
    a, b = _make("navix:Navix-Empty-5x5-v0", max_steps=9), _make("navix:Navix-Empty-5x5-v0", max_steps=9)
    assert a == b and hash(a) == hash(b) and a.stoa_env is b.stoa_env and a != _make("navix:Navix-Empty-5x5-v0")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.task = "Navix-Empty-6x6-v0"


def test_states_have_the_same_types_after_reset_and_step():
    env = _make("navix:Navix-Empty-5x5-v0")  # navix builds its running return from a Python float on reset.
    state, _ = jax.eval_shape(env.reset, KEY)
    stepped, _ = jax.eval_shape(env.step, state, jax.ShapeDtypeStruct((), jnp.int32))
    assert jax.tree.structure(state) == jax.tree.structure(stepped)
    assert jax.tree.leaves(state) == jax.tree.leaves(stepped)  # Shapes, dtypes and weak types.


def test_space_conversion():
    to_spec = space_to_spec
    assert to_spec(spaces.DiscreteSpace(4, jnp.int32), "action") == specs.DiscreteArray(4, np.int32, name="action")
    multi = to_spec(spaces.MultiDiscreteSpace([3, 5], jnp.int32), "action")
    assert type(multi) is specs.BoundedArray and (multi.maximum == [2, 4]).all() and multi.dtype == np.int32
    box = to_spec(spaces.BoundedArraySpace((2,), jnp.float32, 0.0, 8.0), "obs")
    assert box == specs.BoundedArray((2,), np.float32, 0.0, 8.0, name="obs")
    like = jax.ShapeDtypeStruct((3,), jnp.float32)  # The observation's dtype wins over the space's.
    assert to_spec(spaces.ArraySpace((3,), jnp.uint8), "x", like=like) == specs.Array((3,), np.float32, name="x")
    nested = to_spec(
        spaces.DictSpace({"b": spaces.ArraySpace((), jnp.float32), "a": spaces.DiscreteSpace(2, jnp.int32)}), "obs"
    )
    assert list(nested) == ["a", "b"] and nested["a"].num_values == 2
    with pytest.raises(NotImplementedError, match="TupleSpace"):
        to_spec(spaces.TupleSpace([spaces.DiscreteSpace(2, jnp.int32)]), "action")


class _Pair(NamedTuple):
    grid: jax.Array
    action_mask: jax.Array


@dataclasses.dataclass
class _Nested:
    pair: _Pair
    count: jax.Array


def test_structured_observations_become_dicts_of_their_fields():
    observation = _Nested(_Pair(jnp.zeros(2), jnp.ones(3, bool)), jnp.int32(1))
    nest = stoa_env.as_nest(observation)
    assert set(nest) == {"pair", "count"} and set(nest["pair"]) == {"grid", ACTION_MASK}
    assert stoa_env.as_nest(jnp.zeros(2)).shape == (2,)


def test_a_stoa_suite_imports_no_other_suite_and_every_adapter_stays_importable():
    """stoa's `__init__` imports every suite it adapts; podracer's adapters import only their own (`stoa_modules`)."""
    program = (
        "import sys\n"
        "from podracer.envs.suites import xminigrid_env\n"
        "print(sorted(m for m in ('brax', 'mujoco', 'mujoco_playground', 'navix', 'jumanji', 'gymnax', 'pgx')"
        " if m in sys.modules))\n"
        "from stoa.env_adapters.navix import NavixToStoa\n"
        "from stoa.env_adapters.brax import BraxToStoa\n"
        "print('navix' in sys.modules, 'brax' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=HANG_SECONDS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "True True"]
