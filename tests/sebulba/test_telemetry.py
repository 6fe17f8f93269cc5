"""A log window's record: actor shares averaged over the threads' clocks, the learner's own, episodes pooled."""

import pytest

from podracer.envs.episodes import Completed
from podracer.sebulba.actor import Rollout
from podracer.sebulba.phase_clock import PhaseClock
from podracer.sebulba.telemetry import ACTOR_PHASES, LEARNER_PHASES, TelemetryWindow


def test_a_window_records_each_thread_s_time_inside_it_and_the_next_window_opens_where_it_closed():
    now = [0.0]
    actors = [PhaseClock(ACTOR_PHASES, lambda: now[0]) for _ in range(2)]
    learner = PhaseClock(LEARNER_PHASES, lambda: now[0])
    actors[0].enter("compiled")  # Under way since before the window opens at 1.
    actors[1].enter("wait")
    learner.enter("wait")
    now[0] = 1.0
    window = TelemetryWindow(actors, learner)
    now[0] = 2.0
    learner.enter("learn")
    actors[1].enter("compiled")
    now[0] = 4.0
    actors[0].enter("wait")
    rollout = Rollout(trajectory=None, params_version=2, completed=Completed(2.0, 30.0, 20.0))
    window.add({"loss": 1.0}, [rollout, rollout._replace(params_version=3)], version=4, queue_depth=1)
    window.add({"loss": 3.0}, [rollout._replace(completed=Completed(0.0, 0.0, 0.0))] * 2, version=5, queue_depth=0)
    now[0] = 5.0  # The window closes at 5: 4 seconds.
    record = window.record(version=5)
    assert record["seconds"] == 4.0
    # Actor 0: compiled 1-4, waiting 4-5; actor 1: waiting 1-2, compiled 2-5. Their mean:
    assert record["actor_compiled_share"] == pytest.approx((3 / 4 + 3 / 4) / 2)
    assert record["actor_wait_share"] == pytest.approx((1 / 4 + 1 / 4) / 2)
    assert record["actor_env_share"] == record["actor_inference_share"] == 0.0
    assert (record["learner_wait_share"], record["learner_share"]) == (1 / 4, 3 / 4)
    assert (record["episodes"], record["mean_episode_return"], record["mean_episode_length"]) == (4, 15.0, 10.0)
    assert record["loss"] == 2.0 and record["updates"] == 2 and record["queue_depth"] == 0.5
    assert record["policy_lag"] == pytest.approx((1 + 0 + 2 + 2) / 4)  # Version - 1 - the rollout's version.

    following = window.following()
    following.add({"loss": 0.5}, [rollout] * 2, version=6, queue_depth=0)
    now[0] = 7.0
    assert following.record(version=6)["seconds"] == 2.0  # From 5, where the first window closed.
