"""Sebulba trains IPPO on PettingZoo: actor threads acting on `[B, N]`, agents checked first, MPE2's simple learnt,
and a worker process that fails ends the run."""

import math
import multiprocessing
import re
import threading

import pytest

import podracer
from podracer.config.errors import ConfigError
from podracer.envs import env_registry
from podracer.run.contract import recent_return
from podracer.sebulba.sebulba_train import ThreadFailed
from tests.helpers import load_config

pytest.importorskip("podracer.envs.host_suites.pettingzoo_env")
pytest.importorskip("mpe2")

SMALL = {"envs_per_thread": 4, "unroll_length": 16, "total_steps": 2 * 4 * 16 * 4, "log_every_updates": 1}
# The learning tests': 80 updates of 2 actor threads x 8 environments x 16 steps (20,480 steps), discounted by 0.9.
LEARNING = {"envs_per_thread": 8, "unroll_length": 16, "total_steps": 2 * 8 * 16 * 80, "log_every_updates": 10}
LEARNING |= {"agent.gamma": 0.9}
# Both step in the actor threads: the same timesteps as in worker processes (tests/envs/test_worker_pool.py), without
# 16 processes on a 2-core machine, where they made these tests about twice as slow.
IN_THREAD = {"env.kwargs.vectorization_mode": "sync"}
SMALL |= IN_THREAD
LEARNING |= IN_THREAD


@pytest.mark.slow  # About 8 s: compiling MAPPO's update, then four updates.
def test_recurrent_mappo_trains_a_few_updates_on_pettingzoo_with_the_agents_mean_return():
    """MAPPO with a network per agent and a GRU per head: the actor threads carry every agent's state across
    rollouts, the centralised critic reads PettingZoo's global state. (IPPO with shared parameters learns below.)"""
    recurrent = {"network.core": "gru", "network.core_size": 16, "network.hidden_sizes": (16,)}
    recurrent |= {"agent.name": "mappo", "agent.critic": "centralised", "agent.share_parameters": False}
    result = podracer.train(load_config("sebulba_mpe2_spread_ippo", {**SMALL, **recurrent}))
    assert [record["step"] for record in result.history] == [128, 256, 384, 512]
    assert all(math.isfinite(record["loss"]) for record in result.history)
    episodes = sum(record["episodes"] for record in result.history)
    assert episodes == 16  # 8 environments, 64 steps: two ends of 25 steps each, then FIRST, MID...
    returns = [record["mean_episode_return"] for record in result.history if record["episodes"]]
    assert all(-60 < value < 0 for value in returns), returns  # The agents' mean over an episode of 25 steps.


def test_the_agents_are_counted_and_checked_before_anything_compiles():
    config = load_config("sebulba_mpe2_spread_ippo", SMALL)
    assert env_registry.agent_layout(config) == 3  # What a recurrent IPPO's state is sized by.
    with config.unlocked():
        config.agent = podracer.defaults("ppo").agent
        config.agent.name = "ppo"
    with pytest.raises(ConfigError, match="acts as one agent, and pettingzoo:mpe2.simple_spread_v3 has 3") as error:
        podracer.train(config)
    assert error.value.field == "agent.name"


@pytest.mark.slow  # About 10 s each: compiling IPPO's update, then the failure.
@pytest.mark.filterwarnings("ignore::UserWarning:gymnasium.vector.async_vector_env")  # Gymnasium's log of it.
@pytest.mark.parametrize("how", ["raise", "hang"])
def test_a_worker_that_raises_or_hangs_ends_the_run_with_an_error_naming_its_environment(how):
    """Environment 1 of actor thread 0 (seeded 1) raises, or hangs past `step_timeout_seconds`, on its second step:
    the run ends with the error naming it, and no worker process or Sebulba thread is left behind."""
    kwargs = {"how": how, "crash_seed": 1, "step_timeout_seconds": 4.0}
    config = load_config("sebulba_mpe2_spread_ippo", {**SMALL, "env.name": "pettingzoo:tests.envs.pettingzoo_envs"})
    with config.unlocked():
        config.env.kwargs = kwargs
    failure = {"raise": "raised in step: ValueError: boom at step 2", "hang": "gave no answer to step within 4 s"}
    where = "PettingZoo environment 'tests.envs.pettingzoo_envs': environment 1 of 4 "
    with pytest.raises(ThreadFailed, match=r"'actor-0'(.|\n)*" + re.escape(where + failure[how])):
        podracer.train(config)
    assert not multiprocessing.active_children()
    assert not [thread.name for thread in threading.enumerate() if thread.name.startswith(("actor-", "learner"))]


@pytest.mark.slow  # About 6 s.
@pytest.mark.learning("last 100 episodes", at_least=101, random=85)
def test_ippo_learns_to_stay_and_play_the_better_action_in_a_pettingzoo_environment_of_the_tests(learning):
    """`pettingzoo_envs.Leavers`: each agent is paid 10 x steps + its action over 4 steps, and leaves (action 2)
    for good. A uniform policy scores about 85, never leaving but playing 0 scores 100, playing 1 scores 104;
    seeds 0-4 end 20,480 steps at 102.8-103.6 over the last 100 episodes (the agents' mean). Above 101 the agents
    stay and mostly play the better action: the worst seed is 1.8 above it, nearly half the way from 100 to 104."""
    overrides = {"env.name": "pettingzoo:tests.envs.pettingzoo_envs", "optimizer.learning_rate": 1e-3}
    result = podracer.train(load_config("sebulba_mpe2_spread_ippo", {**LEARNING, **overrides}, seed=learning.seed))
    learning.check(recent_return(result.history))


@pytest.mark.slow  # About 20 s alone: 27 s of CPU time past pytest's start, 62 s on the busy shared host.
@pytest.mark.learning("last 100 episodes", at_least=-15, random=-40)
def test_ippo_learns_to_reach_the_landmark_of_pettingzoos_mpe2_simple(learning):
    """MPE2's `simple_v3` as PettingZoo ships it: one agent, observing its velocity and the landmark's offset, is
    paid minus its squared distance to the landmark on each of 25 steps. A uniformly random policy scores -40 an
    episode (-39.7 over 8,000 episodes; a mean of 100 spreads about 3.3), standing still -33 (two uniform points of
    the square lie 4/3 apart, squared); seeds 0-4 end 20,480 steps at -8.5, -9.0, -9.1, -8.2 and -8.1 over the
    last 100 episodes. Above -15 the agent reads where the landmark is and goes there: with the adapter's
    observations zeroed, seeds 0 and 1 end at -42.9 and -43.0."""
    overrides = {"env.name": "pettingzoo:mpe2.simple_v3", "optimizer.learning_rate": 3e-3}
    result = podracer.train(load_config("sebulba_mpe2_spread_ippo", {**LEARNING, **overrides}, seed=learning.seed))
    learning.check(recent_return(result.history))
