"""Periodic evaluation on both architectures: its schedule, its fields, known returns, and a run left unchanged."""

import dataclasses
import math

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from flax import struct

import podracer
from podracer.agents import Agent
from podracer.envs import Environment
from podracer.envs.timestep import TimeStep, restart, transition
from podracer.run import evaluation
from tests.helpers import load_config

TIME_LIMIT = 10
gymnasium.register(
    "PodracerEvalCounter-v0", entry_point="tests.envs.gymnasium_envs:Counter", max_episode_steps=TIME_LIMIT
)

# The scripted agent's two policies on Counter (reward 10 x steps + action; action 2 ends the episode):
GREEDY_RETURN, GREEDY_LENGTH = (10 + 1) + (20 + 1) + (30 + 2), 3  # Action 1 twice, then 2.
SAMPLED_RETURN = sum(10 * step for step in range(1, TIME_LIMIT + 1))  # Action 0 until the time limit.


@struct.dataclass
class CounterState:
    steps: jax.Array
    total: jax.Array


@dataclasses.dataclass(frozen=True)
class JaxCounter(Environment):
    """`tests.envs.gymnasium_envs.Counter` in JAX (its start value 0): observes [steps, sum of actions, 0]."""

    def reset(self, key):
        state = CounterState(jnp.int32(0), jnp.float32(0))
        return state, restart(self._observe(state))

    def step(self, state, action):
        state = CounterState(state.steps + 1, state.total + action)
        reward = 10.0 * state.steps + action
        return state, transition(self._observe(state), reward, action == 2, state.steps >= TIME_LIMIT)

    def _observe(self, state):
        return jnp.stack([state.steps.astype(jnp.float32), state.total, jnp.float32(0)])

    def observation_spec(self):
        return specs.Array((3,), np.float32, name="observation")

    def action_spec(self):
        return specs.DiscreteArray(3, name="action")


def scripted_agent(greedy: bool = True) -> Agent:
    """Samples action 0 forever; its greedy action is 1 for two steps, then 2. It learns nothing."""

    def act(params, observation, key):
        return jnp.zeros(observation.shape[0], jnp.int32), {}

    def greedy_act(params, observation, key):
        return jnp.where(observation[:, 0] >= 2, 2, 1).astype(jnp.int32), {}

    return Agent(
        init=lambda key, observation_spec, action_spec: {"step": jnp.zeros(())},
        act=act,
        learn=lambda state, trajectory, key, axis_name=None: (state, {"loss": jnp.zeros(())}),
        acting_params=lambda state: state,
        greedy_act=greedy_act if greedy else None,
    )


def test_record_fields_are_the_ended_episodes_mean_and_standard_error():
    returns, lengths = np.array([3.0, 5.0, 10.0, 99.0]), np.array([4, 6, 8, 100])
    fields = evaluation.record_fields(returns, lengths, np.array([True, True, True, False]))
    assert fields["eval_mean_return"] == pytest.approx(6.0)
    assert fields["eval_return_stderr"] == pytest.approx(math.sqrt(13.0 / 3.0))  # Sample variance 13 over 3 episodes.
    assert fields["eval_mean_length"] == pytest.approx(6.0)
    assert (fields["eval_episodes"], fields["eval_unfinished"]) == (3, 1)
    none = evaluation.record_fields(returns, lengths, np.zeros(4, bool))
    assert math.isnan(none["eval_mean_return"]) and math.isnan(none["eval_return_stderr"])
    assert "eval_success_rate" not in fields  # No success return given.
    # Above 4: the episodes of 5 and 10 of the three that ended (99 never ended); exactly 5 is no success.
    assert evaluation.record_fields(returns, lengths, np.array([1, 1, 1, 0], bool), 4.0)["eval_success_rate"] == 2 / 3
    assert evaluation.record_fields(returns, lengths, np.array([1, 1, 1, 0], bool), 5.0)["eval_success_rate"] == 1 / 3


def test_an_evaluation_of_several_agents_counts_their_mean_reward():
    """Rewards [B, N] beside one step type per environment: each step adds the agents' mean, until LAST."""
    totals = evaluation.initial_totals(2, np)
    for step_type, reward in (
        (1, [[1.0, 3.0], [0.0, 0.0]]),
        (2, [[2.0, 2.0], [4.0, -2.0]]),
        (1, [[9.0, 9.0], [1.0, 1.0]]),
    ):
        timestep = TimeStep(np.full(2, step_type), np.array(reward), np.ones((2, 2)), np.zeros((2, 1)))
        totals = evaluation.tally(totals, timestep, np)
    np.testing.assert_allclose(totals[0], [2.0 + 2.0, 0.0 + 1.0])  # After LAST (type 2) nothing more counts.
    np.testing.assert_array_equal(totals[1], [2, 2])


def test_an_evaluation_is_due_at_the_first_record_past_each_multiple_and_at_the_last():
    records = [8192 * k for k in range(1, 6)]

    def evaluated(every: int) -> list[int]:
        steps = zip([0, *records[:-1]], records, strict=True)
        return [
            now
            for before, now in steps
            if evaluation.is_due(now, evaluation.next_due(before, every), now == records[-1])
        ]

    assert evaluated(10_000) == [16384, 24576, 32768, 40960]
    assert evaluated(4096) == records
    assert evaluated(10**9) == [40960]


def anakin_config(**fields):
    config = podracer.defaults(architecture="anakin")
    config.num_envs, config.unroll_length, config.total_steps = 4, 4, 4 * 4 * 6
    config.log_records = 3
    for field, value in {"evaluation.every_steps": 32, "evaluation.episodes": 5, **fields}.items():
        podracer.config.loading.override(config, field, value)
    return config


@pytest.mark.parametrize(
    ("greedy", "expected_return", "expected_length"),
    [(True, GREEDY_RETURN, GREEDY_LENGTH), (False, SAMPLED_RETURN, TIME_LIMIT)],
)
def test_anakin_evaluates_a_scripted_policy_to_its_known_return(greedy, expected_return, expected_length):
    """Over the session's 2 devices: 5 episodes, split 3 + 3 with the sixth dropped."""
    result = podracer.train(anakin_config(**{"evaluation.greedy": greedy}), env=JaxCounter(), agent=scripted_agent())
    evaluated = [record for record in result.history if "eval_mean_return" in record]
    assert [record["step"] for record in evaluated] == [32, 64, 96]
    for record in evaluated:
        assert record["eval_mean_return"] == expected_return and record["eval_mean_length"] == expected_length
        assert (record["eval_episodes"], record["eval_unfinished"], record["eval_return_stderr"]) == (5, 0, 0.0)


def test_an_episode_past_max_steps_is_left_out():
    config = anakin_config(**{"evaluation.greedy": False, "evaluation.max_steps": TIME_LIMIT - 1})
    record = podracer.train(config, env=JaxCounter(), agent=scripted_agent()).history[-1]
    assert (record["eval_episodes"], record["eval_unfinished"]) == (0, 5) and math.isnan(record["eval_mean_return"])


def test_a_greedy_evaluation_needs_a_greedy_act_and_says_so_before_compiling():
    with pytest.raises(podracer.ConfigError, match="evaluation.greedy"):
        podracer.train(anakin_config(), env=JaxCounter(), agent=scripted_agent(greedy=False))


@pytest.mark.slow  # A Sebulba run with its threads and Gymnasium worker processes.
def test_sebulba_evaluates_on_host_environments_of_its_own():
    config = podracer.defaults("actor_critic", architecture="sebulba")
    config.env.name = "gymnasium:PodracerEvalCounter-v0"
    config.envs_per_thread, config.unroll_length, config.log_every_updates = 2, 4, 1
    config.total_steps = 2 * 2 * 4 * 3  # 3 updates of 2 actor threads.
    for field, value in {"evaluation.every_steps": 32, "evaluation.episodes": 3}.items():
        podracer.config.loading.override(config, field, value)
    history = podracer.train(config, agent=scripted_agent()).history
    evaluated = [record for record in history if "eval_mean_return" in record]
    assert [record["step"] for record in evaluated] == [32, 48]  # Past 32, and the last record.
    for record in evaluated:
        assert (record["eval_mean_return"], record["eval_mean_length"], record["eval_episodes"]) == (
            GREEDY_RETURN,
            GREEDY_LENGTH,
            3,
        )


@pytest.mark.slow  # Two runs of Catch over 2 devices, about 10 s.
def test_evaluation_leaves_the_training_run_exactly_as_it_was():
    fields = {"total_steps": 8192 * 6, "log_records": 6}  # 6 updates of 512 environments x 16 steps.
    plain = podracer.train(load_config("anakin_catch", fields))
    evaluated = podracer.train(load_config("anakin_catch", {**fields, "evaluation.every_steps": 20_000}))
    timing = {"steps_per_second", "wall_seconds", "compile_seconds", "eval_seconds"}
    stripped = [
        {k: v for k, v in record.items() if k not in timing and not k.startswith("eval_")}
        for record in evaluated.history
    ]
    assert stripped == [{k: v for k, v in record.items() if k not in timing} for record in plain.history]
    for a, b in zip(jax.tree.leaves(plain.learner_state), jax.tree.leaves(evaluated.learner_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert sum("eval_mean_return" in record for record in evaluated.history) == 3  # Past 20,000, 40,000, and the end.


def test_a_population_records_each_members_evaluation():
    config = anakin_config()
    config.population.seed = (3, 5)
    record = podracer.train(config, env=JaxCounter(), agent=scripted_agent()).history[-1]
    for index, member in enumerate(record["members"]):
        assert member["member"] == index and member["eval_mean_return"] == GREEDY_RETURN, member
