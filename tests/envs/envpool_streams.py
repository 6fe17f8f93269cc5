"""Running a host environment on a batch of actions, and checking the stream of timesteps it gives.

Episode statistics are not the environment's: they are computed from its
timesteps with `podracer.envs.episodes`, as Sebulba's actors compute them, and
checked here against an independent loop over the same stream.
"""

import numpy as np
import pytest

from podracer.envs import FIRST, LAST, MID, episodes


def run(env, actions):
    """Resets and steps `env` with `actions` [T, B]; returns the T + 1 timesteps and the statistics after each.

    The statistics are the running episode's return and length as `episodes.update` computes them on the host,
    as Sebulba's actors do.
    """
    timesteps = [env.reset()]
    for action in actions:
        timesteps.append(env.step(action))
    episode_return, episode_length = np.zeros(env.num_envs, np.float64), np.zeros(env.num_envs, np.int64)
    returns, lengths = [], []
    for timestep in timesteps:
        episode_return, episode_length = episodes.update(episode_return, episode_length, timestep, xp=np)
        returns.append(episode_return)
        lengths.append(episode_length)
    return timesteps, np.stack(returns), np.stack(lengths)


def check_stream(timesteps, returns, lengths):
    """dm_env's contract on a batch stream, and statistics recomputed independently from it."""
    step_type = np.stack([t.step_type for t in timesteps])
    reward = np.stack([t.reward for t in timesteps])
    discount = np.stack([t.discount for t in timesteps])
    assert step_type.dtype == np.int32 and reward.dtype == np.float32 and discount.dtype == np.float32
    assert (step_type[0] == FIRST).all()
    assert ((step_type[1:] == FIRST) == (step_type[:-1] == LAST)).all()  # FIRST exactly after LAST.
    first = step_type == FIRST
    assert (reward[first] == 0).all() and (discount[first] == 1).all()
    assert (discount[step_type == MID] == 1).all()
    for b in range(step_type.shape[1]):
        episode_return, episode_length = 0.0, 0
        for t in range(step_type.shape[0]):
            if step_type[t, b] == FIRST:
                episode_return, episode_length = 0.0, 0
            else:
                episode_return += float(reward[t, b])
                episode_length += 1
            assert returns[t, b] == pytest.approx(episode_return)
            assert lengths[t, b] == episode_length
    # What the actors report: the episodes that ended, with their summed returns and lengths.
    completed = [episodes.completed(t, r, n, xp=np) for t, r, n in zip(timesteps, returns, lengths, strict=True)]
    last = step_type == LAST
    assert sum(c.episodes for c in completed) == last.sum()
    assert sum(c.return_sum for c in completed) == pytest.approx(returns[last].sum())
    assert sum(c.length_sum for c in completed) == lengths[last].sum()
    return step_type, reward, discount
