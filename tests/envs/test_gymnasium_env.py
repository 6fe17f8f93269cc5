"""Gymnasium host environments: dm_env semantics in both autoreset modes, seeding, specs, misuse, the registry.

The environments (`gymnasium_envs`) are registered here, in the test module,
as a user registers their own: the workers only ever see the `EnvSpec`.
"""

import gymnasium
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer.config.errors import ConfigError
from podracer.envs import FIRST, LAST, MID, HostEnvironment
from podracer.envs.host_suites.gymnasium_env import GymnasiumEnvironment, is_task, make
from tests.envs.gymnasium_envs import TERMINAL_ACTION, Counter, DictCounter, DiscreteObservation

LIMIT = 4  # Counter's time limit (a TimeLimit wrapper: truncation).
COUNTER = "PodracerCounter-v0"
gymnasium.register(COUNTER, entry_point=Counter, max_episode_steps=LIMIT)
gymnasium.register("PodracerContinuous-v0", entry_point=Counter, kwargs={"continuous": True}, max_episode_steps=LIMIT)
gymnasium.register("PodracerDict-v0", entry_point=DictCounter, max_episode_steps=LIMIT)
gymnasium.register("PodracerDiscreteObservation-v0", entry_point=DiscreteObservation)
gymnasium.register("PodracerByString-v0", entry_point="tests.envs.gymnasium_envs:Counter", max_episode_steps=LIMIT)

# Worker failures are also reported by Gymnasium's logger, as warnings.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:gymnasium.vector.async_vector_env")


def _expected(actions: np.ndarray) -> tuple[np.ndarray, ...]:
    """podracer's semantics for Counter, written out independently: step types, rewards, discounts, [steps, sum]."""
    step_type, reward, discount = (
        np.zeros((len(actions) + 1, actions.shape[1]), dtype) for dtype in (int, float, float)
    )
    count = np.zeros((len(actions) + 1, actions.shape[1], 2))
    step_type[0], discount[0] = FIRST, 1
    for b in range(actions.shape[1]):
        steps = total = 0
        for t, action in enumerate(actions[:, b], 1):
            if step_type[t - 1, b] == LAST:  # The action is ignored: a new episode starts.
                steps = total = 0
                step_type[t, b], discount[t, b] = FIRST, 1
            else:
                steps, total = steps + 1, total + action
                terminated = action == TERMINAL_ACTION
                step_type[t, b] = LAST if terminated or steps == LIMIT else MID
                reward[t, b], discount[t, b] = 10 * steps + action, 0.0 if terminated else 1.0
            count[t, b] = steps, total
    return step_type, reward, discount, count


def _run(env, actions):
    timesteps = [env.reset()]
    timesteps += [env.step(action) for action in actions]
    return [np.stack([getattr(t, field) for t in timesteps]) for field in ("step_type", "reward", "discount")] + [
        np.stack([t.observation for t in timesteps])
    ]


# Env 0 runs into the time limit; env 1 terminates at step 2 and again; env 2 terminates on the last allowed step
# (terminated and truncated: discount 0). Terminal actions on FIRST steps must be ignored.
ACTIONS = np.array(
    [[1, 1, 1], [1, 2, 1], [1, 2, 1], [1, 1, 2], [2, 2, 2], [1, 2, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1], [2, 1, 2]]
)


def test_timesteps_follow_podracer_semantics_in_both_autoreset_modes():
    """Including the seeded start values: both modes reset each environment at the same points."""
    streams = {}
    for autoreset_mode in ("next_step", "same_step"):
        with GymnasiumEnvironment(COUNTER, 3, seed=0, autoreset_mode=autoreset_mode) as env:
            assert isinstance(env, HostEnvironment) and env.num_envs == 3 and env.frames_per_step == 1
            assert env.autoreset_mode.name.lower() == autoreset_mode
            streams[autoreset_mode] = _run(env, ACTIONS)
    step_type, reward, discount, observation = streams["next_step"]
    expected_type, expected_reward, expected_discount, expected_count = _expected(ACTIONS)
    np.testing.assert_array_equal(step_type, expected_type)
    np.testing.assert_array_equal(reward, expected_reward)
    np.testing.assert_array_equal(discount, expected_discount)
    np.testing.assert_array_equal(observation[..., :2], expected_count)  # LAST holds the final observation.
    assert step_type.dtype == np.int32 and reward.dtype == np.float32 and discount.dtype == np.float32
    assert observation.dtype == np.float32
    for a, b in zip(streams["next_step"], streams["same_step"], strict=True):
        np.testing.assert_array_equal(a, b)
    start = observation[..., 2]
    assert start[6, 1] != start[0, 1] and start[6, 1] == start[8, 1]  # A new episode draws a new start.
    # Spot checks of the expectation itself: truncation bootstraps, termination at the limit does not.
    np.testing.assert_array_equal(expected_type[:7, 0], [FIRST, MID, MID, MID, LAST, FIRST, MID])
    assert expected_discount[4, 0] == 1 and expected_discount[2, 1] == 0 and expected_discount[4, 2] == 0


def test_environment_i_is_seeded_seed_plus_i_once():
    with GymnasiumEnvironment(COUNTER, 2, seed=0) as pair, GymnasiumEnvironment(COUNTER, 1, seed=1) as single:
        first = pair.reset().observation[:, 2]
        assert first[1] == single.reset().observation[0, 2] and first[0] != first[1]
        again = pair.reset().observation[:, 2]  # A later reset continues the random stream instead of repeating it.
        assert not np.array_equal(first, again)


def test_specs_and_continuous_actions():
    with GymnasiumEnvironment("PodracerContinuous-v0", 2, seed=0) as env:
        observation_spec, action_spec = env.observation_spec(), env.action_spec()
        assert isinstance(observation_spec, specs.BoundedArray) and observation_spec.dtype == np.float32
        assert observation_spec.shape == (3,) and observation_spec.minimum == -1e6 and observation_spec.maximum == 1e6
        assert isinstance(action_spec, specs.BoundedArray) and not isinstance(action_spec, specs.DiscreteArray)
        assert action_spec.shape == (2,) and action_spec.dtype == np.float32
        assert action_spec.minimum == -1 and action_spec.maximum == 1
        observation_spec.validate(env.reset().observation[0])
        timestep = env.step(np.array([[0.5, 0.25], [-1.0, 0.0]]))  # float64 is fine: sent as the Box's float32.
        np.testing.assert_array_equal(timestep.reward, [10.75, 9.0])
        np.testing.assert_array_equal(timestep.observation[:, 1], [0.75, -1.0])
    with GymnasiumEnvironment(COUNTER, 1, seed=0) as env:
        assert env.action_spec() == specs.DiscreteArray(3, dtype=np.int32, name="action")


def test_dict_observations():
    """In same_step mode, where the final observation comes from the info and is written into the batch."""
    with GymnasiumEnvironment("PodracerDict-v0", 2, seed=0, autoreset_mode="same_step") as env:
        spec = env.observation_spec()
        assert set(spec) == {"count", "start"} and spec["count"].shape == (2,) and spec["start"].maximum == 1000
        env.reset()
        env.step(np.array([1, 1]))
        last = env.step(np.array([2, 1]))  # Env 0 terminates: LAST with its final observation.
        first = env.step(np.array([1, 1]))
    np.testing.assert_array_equal(last.step_type, [LAST, MID])
    np.testing.assert_array_equal(last.observation["count"], [[2, 3], [2, 2]])
    np.testing.assert_array_equal(first.step_type, [FIRST, MID])
    np.testing.assert_array_equal(first.observation["count"], [[0, 0], [3, 3]])


def test_bad_actions_raise_value_errors_and_misuse_runtime_errors():
    env = GymnasiumEnvironment(COUNTER, 2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, np.int64))
    env.reset()
    for action in (np.zeros(3, np.int64), np.array([0, 3]), np.array([-1, 0]), np.array([0.0, 1.0]), np.zeros((2, 1))):
        with pytest.raises(ValueError, match="(?i)actions"):
            env.step(action)
    assert env.step(np.array([0, 1], np.int32)).step_type.shape == (2,)  # Still usable.
    processes = env._pool.vec.processes
    env.close()
    env.close()  # Closing twice is harmless.
    assert not any(p.is_alive() for p in processes)
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()
    with GymnasiumEnvironment("PodracerContinuous-v0", 2, seed=0) as env:
        env.reset()
        for action in (np.zeros((2, 2), np.int64), np.zeros((2, 3)), np.zeros(2), np.array([[0.0, np.nan], [0, 0]])):
            with pytest.raises(ValueError, match="(?i)actions"):
                env.step(action)


def test_bad_options_raise_value_errors():
    with pytest.raises(ValueError, match=r"Unknown Gymnasium id 'PodracerCountr-v0'.*PodracerCounter-v0"):
        GymnasiumEnvironment("PodracerCountr-v0", 1, seed=0)
    with pytest.raises(ValueError, match="'disabled' cannot"):
        GymnasiumEnvironment(COUNTER, 1, seed=0, autoreset_mode="disabled")
    with pytest.raises(ValueError, match="forking a process with threads"):
        GymnasiumEnvironment(COUNTER, 1, seed=0, context="fork")
    with pytest.raises(ValueError, match="step_timeout_seconds"):
        GymnasiumEnvironment(COUNTER, 1, seed=0, step_timeout_seconds=0)
    with pytest.raises(ValueError, match="num_envs"):
        GymnasiumEnvironment(COUNTER, 0, seed=0)
    with pytest.raises(
        ValueError, match="environment 'PodracerCounter-v0' could not be made.*unexpected keyword argument 'colour'"
    ):
        GymnasiumEnvironment(COUNTER, 1, seed=0, colour="red")
    with pytest.raises(ValueError, match="Only Box and Dict observation spaces"):
        GymnasiumEnvironment("PodracerDiscreteObservation-v0", 1, seed=0)


def test_gymnasium_kwargs_and_string_entry_points_reach_the_workers():
    with make("PodracerByString-v0", 2, 0, max_episode_steps=2, autoreset_mode="same_step") as env:
        step_type, *_ = _run(env, np.ones((4, 2), np.int64))
    np.testing.assert_array_equal(step_type[:, 0], [FIRST, MID, LAST, FIRST, MID])


def test_a_real_gymnasium_environment():
    with make("CartPole-v1", 2, 0) as env:
        assert env.observation_spec().shape == (4,) and env.action_spec().num_values == 2
        step_type, reward, discount, observation = _run(env, np.ones((30, 2), np.int64))  # The pole falls.
    assert (step_type == LAST).any(axis=0).all() and (discount[step_type == LAST] == 0).all()
    assert observation.dtype == np.float32 and ((step_type[1:] == FIRST) == (step_type[:-1] == LAST)).all()


def test_the_registry_names_gymnasium_environments():
    with podracer.envs.host_factory(f"gymnasium:{COUNTER}")(2, 0) as env:
        assert isinstance(env, GymnasiumEnvironment) and env.reset().observation.shape == (2, 3)
    podracer.envs.check(f"gymnasium:tests.envs.gymnasium_envs:{COUNTER}", host=True)  # module:EnvId imports module.
    assert is_task(COUNTER) and not is_task("Nope-v0") and not is_task("no_such_module_anywhere:Counter-v0")
    with pytest.raises(ConfigError, match="gymnasium has no environment 'Nope-v0'"):
        podracer.envs.check("gymnasium:Nope-v0", host=True)
    with pytest.raises(ConfigError, match="did you mean gymnasium:CartPole-v1"):
        podracer.envs.check("gymnasium:CartPole", host=True)
