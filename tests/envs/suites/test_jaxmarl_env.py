"""`jaxmarl:TASK` keeps podracer's multi-agent contract and takes JaxMARL's own steps, one for one.

The reference is JaxMARL itself: the same keys drive its `reset` and
`step_env` (with the key split the adapter makes), and every observation,
reward, `done` and legal-action mask of an episode and a half must come out
of the adapter, stacked in JaxMARL's agent order (per team, where the agents
are of different kinds).
"""

import functools
import subprocess
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.config.errors import ConfigError
from podracer.envs import env_registry, multi_agent
from podracer.envs.actions import ACTION_MASK, GLOBAL_STATE
from podracer.envs.timestep import FIRST, LAST, MID
from tests.helpers import HANG_SECONDS

jaxmarl_env = pytest.importorskip("podracer.envs.suites.jaxmarl_env")
pytestmark = pytest.mark.slow  # Five JaxMARL families compiled twice each: make test-fast skips the file.

STEPS = 40  # MPE's episodes last 26 steps: a whole one, its reset and part of the next.
# Each task with the actions it is stepped with: random ones, or (SMAX, Hanabi) one action per agent, every step.
TASKS = [
    ("MPE_simple_spread_v3", {}, None),
    ("HeuristicEnemySMAX", {"scenario": "3m"}, [4, 0, 0]),  # One unit moves west, the others stay (no-op).
    ("overcooked", {"layout": "cramped_room", "max_steps": 30}, None),
    ("hanabi", {}, [5, 5]),  # The player to move plays its first card: misplays cost the game's three lives.
    ("MPE_simple_tag_v3", {}, None),  # Teams: three adversaries (16 observed) chase a runner (14).
]


def reference_rollout(env, key: jax.Array, actions: jax.Array):
    """JaxMARL's own steps, resetting after an episode's end, with the keys the adapter draws."""
    suite, agents = env.suite_env, env.agents
    key, reset_key = jax.random.split(key)
    observations, state = suite.reset(reset_key)

    def step(carry, action):
        state, key = carry
        key, step_key = jax.random.split(key)
        observations, state, rewards, dones, _ = suite.step_env(
            step_key, state, {a: action[i] for i, a in enumerate(agents)}
        )
        legal = suite.get_legal_moves if env.task == "hanabi" else suite.get_avail_actions  # Hanabi's are its moves.
        masks = legal(state) if ACTION_MASK in env.observation_spec() else {}
        by_agent = lambda values: {a: values[a] for a in agents}  # noqa: E731
        record = (
            by_agent(observations),
            by_agent(rewards),
            by_agent(dones),
            dones["__all__"],
            by_agent(masks) if masks else {},
        )
        next_key, reset_key = jax.random.split(key)  # As the adapter's `reset` splits its key.
        _, reset_state = suite.reset(reset_key)
        state, key = jax.tree.map(lambda r, s: jnp.where(dones["__all__"], r, s), (reset_state, next_key), (state, key))
        return (state, key), record

    return jax.lax.scan(step, (state, key), actions)[1], observations


def layout(env, by_agent: dict, axis: int) -> Any:
    """Values by JaxMARL agent name as the adapter lays agents out: stacked at `axis`, or stacked per team."""
    members = env.team_members or {"": env.agents}
    stacked = {team: jnp.stack([by_agent[a] for a in agents], axis) for team, agents in members.items()}
    return stacked[""] if env.team_members is None else stacked


def team_actions(env, actions: jax.Array) -> Any:
    """Actions `[T, N]` in JaxMARL's agent order as the adapter takes them: as they are, or split by team."""
    if env.team_members is None:
        return actions
    columns = dict(zip(env.agents, jnp.moveaxis(actions, 1, 0), strict=True))
    return {team: jnp.stack([columns[a] for a in agents], 1) for team, agents in env.team_members.items()}


def adapter_rollout(env, key: jax.Array, actions: jax.Array):
    """The adapter's steps, `reset_episode` after a LAST timestep (Anakin's auto-reset), with the same keys."""
    state, first = env.reset(key)

    def step(state, action):
        state, timestep = env.step(state, action)
        reset_state, _ = env.reset(state.key)
        state = jax.tree.map(lambda r, s: jnp.where(timestep.last(), r, s), reset_state, state)
        return state, timestep

    return jax.lax.scan(step, state, team_actions(env, actions))[1], first


@pytest.fixture(scope="module", params=TASKS, ids=[task for task, _, _ in TASKS])
def rollouts(request):
    task, kwargs, fixed = request.param
    env = jaxmarl_env.make(task, **kwargs)
    choices = min(int(np.max(spec.maximum)) + 1 for spec in jax.tree.leaves(env.action_spec()))
    actions = jax.random.randint(jax.random.key(1), (STEPS, env.num_agents), 0, choices)
    if fixed is not None:
        actions = jnp.broadcast_to(jnp.asarray(fixed, actions.dtype), actions.shape)
    run = jax.jit(lambda key: (reference_rollout(env, key, actions), adapter_rollout(env, key, actions)))
    return env, actions, run(jax.random.key(7))


def test_every_step_is_jaxmarls_own(rollouts):
    env, _, ((records, first_observation), (timesteps, first)) = rollouts
    observations, rewards, dones, episode_done, masks = records
    # The same operations as JaxMARL's, compiled within another program: equal up to XLA's rounding (a few ulps).
    close = functools.partial(np.testing.assert_allclose, rtol=1e-6, atol=1e-7)
    jax.tree.map(close, first.observation[multi_agent.LOCAL], layout(env, first_observation, 0))
    jax.tree.map(close, timesteps.observation[multi_agent.LOCAL], layout(env, observations, 1))
    jax.tree.map(close, timesteps.reward, layout(env, rewards, 1))
    np.testing.assert_array_equal(timesteps.step_type, np.where(episode_done, LAST, MID))
    if ACTION_MASK in env.observation_spec():
        jax.tree.map(np.testing.assert_array_equal, timesteps.observation[ACTION_MASK], layout(env, masks, 1))
    assert episode_done.any(), "the rollout must cross an episode's end"


def test_specs_describe_the_timesteps_without_stepping(rollouts):
    env, _, (_, (timesteps, first)) = rollouts
    spec = env.observation_spec()
    jax.tree.map(
        lambda s, leaf: (s.shape, s.dtype) == (leaf.shape, leaf.dtype) or pytest.fail(s), spec, first.observation
    )
    assert env.has_global_state()
    sizes = env.teams or {"": env.num_agents}
    assert sum(sizes.values()) == env.num_agents
    for team, n in sizes.items():
        pick = (lambda x: x) if env.teams is None else (lambda x: x[team])  # noqa: B023
        assert pick(spec[multi_agent.LOCAL]).shape[0] == n
        assert pick(env.action_spec()).shape == pick(env.reward_spec()).shape == pick(env.discount_spec()).shape == (n,)
        assert pick(timesteps.reward).shape == pick(timesteps.discount).shape == (STEPS, n)
        np.testing.assert_array_equal(pick(first.reward), np.zeros(n))
        np.testing.assert_array_equal(pick(first.discount), np.ones(n))
    assert int(first.step_type) == FIRST


def test_mpe_ends_at_its_time_limit_as_a_truncation_with_the_whole_state_for_a_critic():
    env = jaxmarl_env.make("MPE_simple_spread_v3")
    actions = jnp.zeros((STEPS, env.num_agents), jnp.int32)
    timesteps, first = jax.jit(lambda key: adapter_rollout(env, key, actions))(jax.random.key(0))
    last = np.flatnonzero(np.asarray(timesteps.last()))
    assert last[0] + 1 == env.suite_env.max_steps + 1  # JaxMARL's step counter passes max_steps on the 26th step.
    np.testing.assert_array_equal(timesteps.discount, 1.0)  # A time limit: every agent bootstraps.
    local = first.observation[multi_agent.LOCAL]
    np.testing.assert_array_equal(first.observation[GLOBAL_STATE], local.reshape(-1))  # JaxMARL's MAPPO world state.


def test_smax_gives_a_dead_unit_discount_0_and_ends_when_a_team_is_dead():
    env = jaxmarl_env.make("HeuristicEnemySMAX", scenario="3m")
    actions = jnp.full((120, env.num_agents), 4, jnp.int32)  # The allies stop; the enemies shoot them one by one.
    timesteps, _ = jax.jit(lambda key: adapter_rollout(env, key, actions))(jax.random.key(0))
    end = int(np.flatnonzero(np.asarray(timesteps.last()))[0])
    discounts = np.asarray(timesteps.discount[: end + 1])
    deaths = [int(np.argmax(discounts[:, agent] == 0)) for agent in range(env.num_agents)]
    first = int(np.argmin(deaths))
    assert len(set(deaths)) > 1 and min(deaths) < end  # Units fell at different steps, before the end.
    np.testing.assert_array_equal(discounts[min(deaths) : end + 1, first], 0.0)  # Dead, then out of the game.
    assert discounts[min(deaths)].max() == 1.0  # The living still bootstrap.
    np.testing.assert_array_equal(discounts[end], 0.0)  # The episode terminated: no agent bootstraps.
    assert end + 1 < env.suite_env.max_steps  # A team died: no time limit.


def test_an_unknown_task_names_the_field_with_the_close_ones():
    with pytest.raises(ConfigError, match="env.name") as error:
        env_registry.check("jaxmarl:MPE_simple_sprad_v3", host=False)
    assert "MPE_simple_spread_v3" in str(error.value)


def test_importing_the_adapter_leaves_the_output_streams_to_whoever_captures_them():
    """JaxMARL's import sets sys.stdout and sys.stderr back to the process's own (its MABrax module): a notebook's or
    pytest's capture would lose every later line. A fresh interpreter, as jaxmarl imports once per process."""
    code = (
        "import io, sys; out, err = io.StringIO(), io.StringIO(); sys.stdout, sys.stderr = out, err\n"
        "import podracer.envs.suites.jaxmarl_env\n"
        "ok = sys.stdout is out and sys.stderr is err; sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__\n"
        "print('streams kept' if ok else 'streams replaced')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_SECONDS)
    assert result.stdout.strip().endswith("streams kept"), result.stdout + result.stderr
