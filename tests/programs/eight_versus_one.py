"""PPO with a recurrent core: K updates on 8 devices, each holding 1/8 of the environments, and on 1 holding all.

One epoch of one minibatch and plain SGD: replicated over 8 devices, each update
(gradients averaged over devices, advantages normalised with statistics pooled
over them, each environment's recurrent state carried on its own device) must
equal the update on 1 device with the whole batch. Prints a JSON summary; exits
non-zero (an assertion) if the two differ beyond float rounding. Run with 8
forced CPU devices: `python -m tests.programs.eight_versus_one [CORE]`, CORE a
recurrent core (`network.core`) or none.
"""

import json
import sys

import jax
import numpy as np

from podracer import agents, envs
from podracer.anakin.program import make_dispatch, make_init
from podracer.runtime.topology import device_mesh
from tests.helpers import load_config, replicas_identical


def main(core: str) -> dict:
    """Asserts the two agree; returns the summary (finished episodes, largest parameter change)."""
    assert jax.device_count() == 8, jax.devices()
    # Plain SGD: Adam's per-parameter normalisation would blow float noise in near-zero gradients up to full steps.
    config = load_config(
        "anakin_cartpole_ppo",
        {
            "agent.num_epochs": 1,
            "agent.num_minibatches": 1,
            "optimizer.name": "sgd",
            "optimizer.learning_rate": 0.1,
            "optimizer.anneal_lr": False,
            "network.core": core,
            "network.core_size": 16,
            "network.hidden_sizes": (16,),  # One small layer: equality does not depend on the network's size.
            "network.shared_torso": core != "none",  # A recurrent core feeds policy and value from one torso.
        },
        num_envs=32,
        unroll_length=16,
        updates_per_dispatch=3,
    )
    env = envs.wrap_for_training(envs.make("cartpole"))
    agent = agents.make(config, num_updates=3)

    def run(devices):
        mesh = device_mesh(devices)
        key = jax.random.key(7)
        state = make_init(env, lambda _: agent, config.num_envs, mesh, key, {})(key, {})
        initial_params = jax.device_get(state.learner.params)
        shards = {s.device for s in state.timestep.observation.addressable_shards}
        assert len(shards) == len(devices), shards
        assert state.timestep.observation.addressable_shards[0].data.shape[0] == config.num_envs // len(devices)
        dispatch = make_dispatch(env, lambda _: agent, config.unroll_length, config.updates_per_dispatch, mesh)
        state, (metrics, completed, _) = dispatch(state, {}, np.int32(config.updates_per_dispatch))
        params = state.learner.params
        assert len(jax.tree.leaves(params)[0].sharding.device_set) == len(devices)
        assert replicas_identical(params)
        outputs = (params, state.timestep.observation, state.agent_state, metrics, completed)
        return initial_params, jax.device_get(outputs)

    initial, (params8, obs8, agent_state8, metrics8, completed8) = run(jax.devices())
    _, (params1, obs1, agent_state1, metrics1, completed1) = run(jax.devices()[:1])
    assert len(jax.tree.leaves(agent_state1)) == (0 if core == "none" else 2)  # An LSTM's (c, h).
    for a, b in zip(jax.tree.leaves(agent_state8), jax.tree.leaves(agent_state1), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # Each environment's recurrent state, wherever it ran.
    np.testing.assert_array_equal(obs8, obs1)  # The same environment trajectories,
    for a, b in zip(completed8, completed1, strict=True):  # hence the same finished episodes.
        np.testing.assert_array_equal(a, b)
    for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(params1), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert set(metrics8) == set(metrics1)
    for name in metrics1:
        np.testing.assert_allclose(metrics8[name], metrics1[name], rtol=1e-4, atol=1e-6, err_msg=name)
    changed = max(
        float(np.abs(a - b).max()) for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(initial), strict=True)
    )
    loss = float(np.abs(metrics8["loss"]).max())
    return {"episodes": float(np.sum(completed8.episodes)), "changed": changed, "loss": loss}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else "none")))
