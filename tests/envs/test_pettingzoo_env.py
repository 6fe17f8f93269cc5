"""`pettingzoo:MODULE` batches PettingZoo's parallel environments under podracer's multi-agent contract.

The reference is PettingZoo itself: MPE2's simple_spread, made with the same
seeds and stepped with the same actions, resetting after each episode, must
give every observation, state, reward and flag the batch gives, stacked in
agent order. A tiny environment of the tests (`pettingzoo_envs.Leavers`) has
what MPE lacks: agents that leave one by one, action masks, no `state()`.
Both are checked with the environments in worker processes (`vectorization_mode`
"async", the default) and in this thread ("sync").
"""

import numpy as np
import pytest

from podracer.config.errors import ConfigError
from podracer.envs import env_registry, multi_agent
from podracer.envs.actions import ACTION_MASK, GLOBAL_STATE
from podracer.envs.multi_agent import LOCAL
from podracer.envs.timestep import FIRST, LAST, MID
from tests.envs.pettingzoo_envs import LEAVE

pettingzoo_env = pytest.importorskip("podracer.envs.host_suites.pettingzoo_env")
simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3")

SPREAD = "mpe2.simple_spread_v3"
LEAVERS = "tests.envs.pettingzoo_envs"
LIMIT = 4  # max_cycles: episodes of 4 steps, so 10 steps see two ends and their resets.


def reference_steps(num_envs: int, seed: int, actions: np.ndarray) -> list[list[tuple]]:
    """PettingZoo's own simple_spread, environment i seeded `seed + i`, reset after every episode's end:
    per environment, per step, `(first, observations, state, rewards, terminations, truncations)`."""
    steps = []
    for index in range(num_envs):
        env = simple_spread_v3.parallel_env(max_cycles=LIMIT)
        observations, _ = env.reset(seed=seed + index)
        own = [(True, observations, env.state(), {}, {}, {})]
        for action in actions[:, index]:
            if not env.agents:
                observations, _ = env.reset()
                own.append((True, observations, env.state(), {}, {}, {}))
                continue
            observations, rewards, terminations, truncations, _ = env.step(dict(zip(env.agents, action, strict=True)))
            own.append((False, observations, env.state(), rewards, terminations, truncations))
        steps.append(own)
    return steps


@pytest.mark.parametrize("vectorization_mode", ["async", "sync"])
def test_the_batch_steps_as_pettingzoos_own_environments_with_the_same_seeds_and_actions(vectorization_mode):
    """In worker processes ("async") and in this thread ("sync") alike."""
    num_envs, seed, steps = 3, 7, 10
    actions = np.random.default_rng(0).integers(0, 5, (steps, num_envs, 3)).astype(np.int32)
    make = env_registry.host_factory(f"pettingzoo:{SPREAD}")
    with make(num_envs, seed, max_cycles=LIMIT, vectorization_mode=vectorization_mode) as env:
        timesteps = [env.reset()] + [env.step(action) for action in actions]
        agents = env.agents
    for index, own in enumerate(reference_steps(num_envs, seed, actions)):
        for t, (first, observations, state, rewards, terminations, truncations) in enumerate(own):
            timestep = timesteps[t]
            np.testing.assert_array_equal(timestep.observation[LOCAL][index], [observations[a] for a in agents])
            np.testing.assert_array_equal(timestep.observation[GLOBAL_STATE][index], state)
            ended = bool(truncations) and all(truncations.values())
            assert timestep.step_type[index] == (FIRST if first else LAST if ended else MID), (index, t)
            np.testing.assert_allclose(timestep.reward[index], [rewards.get(a, 0.0) for a in agents], rtol=1e-6)
            assert not any(terminations.values())  # MPE's only end is its time limit: discounts stay 1.
            np.testing.assert_array_equal(timestep.discount[index], 1.0)
    step_types = np.stack([t.step_type for t in timesteps])
    assert (step_types[[LIMIT, 2 * LIMIT + 1]] == LAST).all() and (
        step_types[[LIMIT + 1, 2 * LIMIT + 2]] == FIRST
    ).all()


def test_specs_are_read_without_stepping_and_describe_the_timesteps():
    with pettingzoo_env.make(SPREAD, 2, 0) as env:
        spec, action_spec = env.observation_spec(), env.action_spec()
        assert env.num_agents == 3 and env.has_global_state() and multi_agent.agent_axis(env) == (3,)
        assert spec[LOCAL].shape == (3, 18) and spec[GLOBAL_STATE].shape == (54,) and ACTION_MASK not in spec
        assert action_spec.shape == (3,) and action_spec.maximum == 4
        timestep = env.reset()
    for key, leaf_spec in spec.items():
        assert timestep.observation[key].shape == (2, *leaf_spec.shape)
        assert timestep.observation[key].dtype == leaf_spec.dtype
    assert timestep.reward.shape == timestep.discount.shape == (2, 3) and timestep.step_type.shape == (2,)


@pytest.mark.parametrize("vectorization_mode", ["async", "sync"])
def test_agents_leave_one_by_one_and_the_time_limit_truncates_those_left(vectorization_mode):
    """In environment 0 agent 0 leaves (discount 0 from then on, reward 0, its last observation kept, its actions
    no longer sent: `Leavers` asserts it) and agent 1 plays on to the time limit: LAST with discount 1 for it,
    then FIRST. In environment 1 both leave: the episode terminated, discounts 0."""
    actions = np.array(
        [[[1, 1], [1, 1]], [[LEAVE, 1], [LEAVE, LEAVE]], [[0, 1], [0, 0]], [[0, 1], [1, 1]], [[1, 1]] * 2]
    )
    with pettingzoo_env.make(LEAVERS, 2, 0, limit=LIMIT, vectorization_mode=vectorization_mode) as env:
        assert env.observation_spec()[GLOBAL_STATE].shape == (4,)  # No state(): the agents' observations.
        first = env.reset()
        timesteps = [env.step(action) for action in actions]
    np.testing.assert_array_equal(first.observation[ACTION_MASK], [[[True, True, False]] * 2] * 2)
    np.testing.assert_array_equal(timesteps[0].observation[ACTION_MASK], np.ones((2, 2, 3), bool))
    step_types = np.stack([t.step_type for t in timesteps])
    np.testing.assert_array_equal(step_types.T, [[MID, MID, MID, LAST, FIRST], [MID, LAST, FIRST, MID, MID]])
    discounts = np.stack([t.discount for t in timesteps], axis=1)
    np.testing.assert_array_equal(discounts[0], [[1, 1], [0, 1], [0, 1], [0, 1], [1, 1]])
    np.testing.assert_array_equal(discounts[1], [[1, 1], [0, 0], [1, 1], [1, 1], [1, 1]])
    rewards = np.stack([t.reward for t in timesteps], axis=1)
    np.testing.assert_array_equal(rewards[0], [[11, 11], [22, 21], [0, 31], [0, 41], [0, 0]])
    np.testing.assert_array_equal(rewards[1], [[11, 11], [22, 22], [0, 0], [11, 11], [21, 21]])
    local = np.stack([t.observation[LOCAL][0] for t in timesteps])
    np.testing.assert_array_equal(local[:, 0], [[1, 1], [2, 3], [2, 3], [2, 3], [0, 0]])
    np.testing.assert_array_equal(local[:, 1], [[1, 1], [2, 2], [3, 3], [4, 4], [0, 0]])  # [4, 4]: the real last.
    for t in timesteps:
        np.testing.assert_array_equal(t.observation[GLOBAL_STATE], t.observation[LOCAL].reshape(2, 4))


def test_agents_that_differ_and_unknown_names_are_config_errors_on_env_name():
    with pytest.raises(ConfigError, match="observe or act differently") as error:
        pettingzoo_env.make("mpe2.simple_speaker_listener_v4", 1, 0)
    assert error.value.field == "env.name"
    with pytest.raises(ConfigError, match="did you mean pettingzoo:mpe2.simple_spread_v3") as error:
        env_registry.check("pettingzoo:mpe2.simple_sprad_v3", host=True)
    assert error.value.field == "env.name"
    with pytest.raises(ConfigError, match="run under sebulba"):
        env_registry.check(f"pettingzoo:{SPREAD}", host=False)
    assert pettingzoo_env.is_task(LEAVERS) and not pettingzoo_env.is_task("no_such_module.anywhere")
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"), pettingzoo_env.make(LEAVERS, 2, 0) as env:
        env.reset()
        env.step(np.zeros((2, 2, 1), np.int32))
