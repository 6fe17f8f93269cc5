"""PPO with a recurrent core: K updates on 8 devices, each holding 1/8 of the environments, and on 1 holding all.

One epoch of one minibatch and plain SGD: replicated over 8 devices, each update
(gradients averaged over devices, advantages normalised with statistics pooled
over them, each environment's recurrent state carried on its own device) must
equal the update on 1 device with the whole batch. Prints a JSON summary; exits
non-zero (an assertion) if the two differ beyond float rounding. Run with 8
forced CPU devices: `python -m tests.programs.eight_versus_one [CORE] [AGENT]`,
CORE a recurrent core (`network.core`) or none, AGENT `ppo` on CartPole (the
default), `mappo`: MAPPO with a network per agent (vmapped over the agents
inside the replicated update) and a core per head on JaxMARL's MPE simple_spread,
`vmpo`: V-MPO on CartPole, whose top half of advantages is selected over
every device's shard together and whose duals and target network are replicated,
or `pqn_vdn` (CORE none): PQN-VDN's Q(lambda) on the agents' summed Q-values on MPE simple_spread.
"""

import json
import sys

import jax
import numpy as np

from podracer import agents, envs
from podracer.anakin.program import make_dispatch, make_init
from podracer.devices.topology import device_mesh
from tests.helpers import load_config, replicas_identical


def main(core: str = "none", agent_name: str = "ppo") -> dict:
    """Asserts the two agree; returns the summary (finished episodes, largest parameter change)."""
    assert jax.device_count() == 8, jax.devices()
    several = agent_name in ("mappo", "pqn_vdn")
    # One epoch of one minibatch: V-MPO always takes one step; its target network is copied after each update.
    own = (
        {"agent.target_update_period": 1}
        if agent_name == "vmpo"
        else {"agent.num_epochs": 1, "agent.num_minibatches": 1}
    )
    # Plain SGD: Adam's per-parameter normalisation would blow float noise in near-zero gradients up to full steps.
    config = load_config(
        {
            "mappo": "anakin_mpe_spread_mappo",
            "vmpo": "anakin_cartpole_vmpo",
            "pqn_vdn": "anakin_mpe_spread_pqn_vdn",
        }.get(agent_name, "anakin_cartpole_ppo"),
        {
            **own,
            "optimizer.name": "sgd",
            "optimizer.learning_rate": 0.1,
            "optimizer.anneal_lr": False,
            "network.core": core,
            "network.core_size": 16,
            "network.hidden_sizes": (16,),  # One small layer: equality does not depend on the network's size.
            "network.head_hidden_sizes": (),
            "network.shared_torso": core != "none" and not several,  # MAPPO: a core per head, on its own torso.
            **({"agent.share_parameters": False} if agent_name == "mappo" else {}),
        },
        num_envs=32,
        unroll_length=16,
        updates_per_dispatch=3,
    )
    env = envs.wrap_for_training(envs.make(config.env.name))
    agent = agents.make(config, num_updates=3)

    def run(devices):
        mesh = device_mesh(devices)
        key = jax.random.key(7)
        state = make_init(env, lambda _: agent, config.num_envs, mesh, key, {})(key, {})
        initial_params = jax.device_get(state.learner.params)
        observation = jax.tree.leaves(state.timestep.observation)[0]
        shards = {s.device for s in observation.addressable_shards}
        assert len(shards) == len(devices), shards
        assert observation.addressable_shards[0].data.shape[0] == config.num_envs // len(devices)
        dispatch = make_dispatch(env, lambda _: agent, config.unroll_length, config.updates_per_dispatch, mesh)
        state, (metrics, completed, _) = dispatch(state, {}, np.int32(config.updates_per_dispatch))
        params = state.learner.params
        assert len(jax.tree.leaves(params)[0].sharding.device_set) == len(devices)
        assert replicas_identical(params)
        outputs = (params, state.timestep.observation, state.agent_state, metrics, completed)
        return initial_params, jax.device_get(outputs)

    initial, (params8, obs8, agent_state8, metrics8, completed8) = run(jax.devices())
    _, (params1, obs1, agent_state1, metrics1, completed1) = run(jax.devices()[:1])
    # An LSTM's (c, h), or MAPPO's two cores' states, each [B, N, ...]: one per agent of each environment.
    assert len(jax.tree.leaves(agent_state1)) == {"none": 0, "lstm": 2, "gru": 2 if several else 1}[core]
    for a, b in zip(jax.tree.leaves(agent_state8), jax.tree.leaves(agent_state1), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # Each environment's recurrent state, wherever it ran.
    jax.tree.map(np.testing.assert_array_equal, obs8, obs1)  # The same environment trajectories,
    for a, b in zip(completed8, completed1, strict=True):  # hence the same finished episodes (their returns summed
        np.testing.assert_allclose(a, b, rtol=1e-6)  # in another order: MPE's rewards are not whole numbers).
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
    print(json.dumps(main(*sys.argv[1:])))
