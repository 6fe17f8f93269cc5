"""PPO on CartPole trained by `podracer.train` over 8 devices and over 1, in one process with 8 devices.

One epoch of one minibatch and plain SGD: replicated over 8 devices, each update
(gradients averaged over devices, advantages normalised with statistics pooled
over them) must equal the update on 1 device with the whole batch, so both runs
end with the same parameters and log the same losses. Prints a JSON summary;
exits non-zero (an assertion) where they differ beyond float rounding. Run with 8
forced CPU devices: `python -m tests.programs.ppo_eight_versus_one [CORE]`; with
CORE, `tests.programs.eight_versus_one`'s check of actor-critic with that
recurrent core follows in the same process (one interpreter and JAX start for
both), and its summary is printed last.
"""

import json
import sys

import jax
import numpy as np

import podracer
from tests.helpers import load_config, replicas_identical
from tests.programs import eight_versus_one

NUM_ENVS, UNROLL_LENGTH, UPDATES_PER_DISPATCH, DISPATCHES = 16, 32, 2, 2
TOTAL_STEPS = NUM_ENVS * UNROLL_LENGTH * UPDATES_PER_DISPATCH * DISPATCHES


def train(num_devices):
    config = load_config(
        "anakin_cartpole_ppo",
        {
            "agent.num_epochs": 1,
            "agent.num_minibatches": 1,
            "optimizer.name": "sgd",
            "optimizer.learning_rate": 0.1,
            "optimizer.anneal_lr": False,
        },
        num_devices=num_devices,
        num_envs=NUM_ENVS,
        unroll_length=UNROLL_LENGTH,
        updates_per_dispatch=UPDATES_PER_DISPATCH,
        total_steps=TOTAL_STEPS,
    )
    first = []  # The parameters after the first dispatch, copied while the callback may read them.
    callback = lambda event: first or first.append(jax.device_get(event.state.learner.params))  # noqa: E731
    result = podracer.train(config, callbacks=[callback])
    params = result.learner_state.params
    assert len(jax.tree.leaves(params)[0].sharding.device_set) == num_devices
    assert replicas_identical(params)
    return result, first[0]


def main():
    result8, first8 = train(8)  # First, so that config.cpu_threads applies (before anything starts JAX).
    assert jax.device_count() == 8, jax.devices()
    result1, _ = train(1)
    params8, params1 = jax.device_get((result8.learner_state.params, result1.learner_state.params))
    for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(params1), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(result8.history) == len(result1.history) == DISPATCHES
    metrics = ("loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
    for record8, record1 in zip(result8.history, result1.history, strict=True):
        assert record8["step"] == record1["step"]
        assert record8["episodes"] == record1["episodes"]  # The same environment trajectories.
        np.testing.assert_allclose(record8["mean_episode_return"], record1["mean_episode_return"], rtol=1e-6)
        for name in metrics:
            np.testing.assert_allclose(record8[name], record1[name], rtol=1e-4, atol=1e-6, err_msg=name)
    changed = max(
        float(np.abs(a - b).max()) for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(first8), strict=True)
    )
    final = result8.history[-1]
    print(json.dumps({"step": final["step"], "loss": final["loss"], "episodes": final["episodes"], "changed": changed}))
    if len(sys.argv) > 1:
        print(json.dumps(eight_versus_one.main(sys.argv[1])))


if __name__ == "__main__":
    main()
