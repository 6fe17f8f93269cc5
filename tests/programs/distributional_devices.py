"""C51's gradient steps on 8 devices, each with an eighth of a sampled batch, and on 1 with the whole batch.

A replay agent's devices each sample their own buffer, so their runs cannot be
compared step for step; their update can. K gradient steps of C51 (plain SGD:
Adam's per-parameter normalisation would blow float noise in near-zero
gradients up to full steps) on one fixed batch of 64 sampled sequences of 4
timesteps (n = 3, double Q, dueling streams), split over 8 devices along the
batch, must end on the parameters and the target network of the same steps
on 1 device, and give each sequence the same priority. Prints a JSON summary;
exits non-zero (an assertion) if they differ. Run with 8 forced CPU devices:
`python -m tests.programs.distributional_devices`.
"""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from jax.sharding import PartitionSpec

from podracer.agents.algorithms import q_learning, shared_fields
from podracer.agents.learning import replay
from podracer.agents.learning.optimizer import key_data, make_optimizer
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory
from podracer.agents.value_distributions import distributional_dqn
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, SHARDED, device_mesh, per_device_program
from podracer.envs.timestep import MID, TimeStep
from tests.helpers import load_config

BATCH, TIMESTEPS, STEPS = 64, 4, 3
BY_SEQUENCE = PartitionSpec(None, DEVICE_AXIS)  # Time-major: the sequences are the second axis.


def sampled_batch(seed: int) -> replay.Sample:
    """64 sequences of 4 CartPole-like timesteps inside episodes, random importance weights."""
    rng = np.random.default_rng(seed)
    timestep = TimeStep(
        step_type=jnp.full((TIMESTEPS, BATCH), MID, jnp.int32),
        reward=jnp.asarray(rng.uniform(0, 1, (TIMESTEPS, BATCH)), jnp.float32),
        discount=jnp.ones((TIMESTEPS, BATCH), jnp.float32),
        observation=jnp.asarray(rng.normal(size=(TIMESTEPS, BATCH, 4)), jnp.float32),
    )
    action = jnp.asarray(rng.integers(0, 2, (TIMESTEPS - 1, BATCH)), jnp.int32)
    weights = jnp.asarray(rng.uniform(0.5, 1.0, BATCH), jnp.float32)
    return replay.Sample(Trajectory(timestep, action, {}), jnp.arange(BATCH), weights)


def main() -> dict:
    assert jax.device_count() == 8, jax.devices()
    config = load_config(
        "anakin_cartpole_c51",
        {"optimizer.name": "sgd", "optimizer.learning_rate": 0.1, "agent.dueling": True, "agent.target_tau": 0.5},
    )
    agent = config.agent
    settings = distributional_dqn.loss_settings(agent)
    module = networks.make_q_network(
        networks.NetworkSettings(hidden_sizes=(32,), activation="relu"),
        specs.Array((4,), np.float32),
        specs.DiscreteArray(2),
        module=distributional_dqn.DistributionalQNetwork,
        kind="categorical",
        dueling=True,
        num_atoms=agent.num_atoms,
        v_min=agent.v_min,
        v_max=agent.v_max,
    )
    params = networks.init_module(jax.random.key(3), module, specs.Array((4,), np.float32))
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=STEPS)
    loss = functools.partial(distributional_dqn.loss, settings=settings)
    step = q_learning.make_gradient_step(optimizer, lambda p, s, t, k: loss(p, s, t, k), agent.target_tau, 1)
    state = q_learning.DQNState(
        params, params, optimizer.init(params), (), jnp.int32(0), jnp.int32(0), key_data(jax.random.key(0))
    )
    sample = sampled_batch(0)
    sample_specs = replay.Sample(jax.tree.map(lambda _: BY_SEQUENCE, sample.trajectory), SHARDED, SHARDED)

    def steps(devices):
        def run(state, sample):
            priorities = []
            for _ in range(STEPS):
                state, _, step_priorities = step(state, sample, DEVICE_AXIS)
                priorities.append(step_priorities)
            return state, jnp.stack(priorities)

        program = per_device_program(run, device_mesh(devices), (REPLICATED, sample_specs), (REPLICATED, BY_SEQUENCE))
        return jax.device_get(jax.jit(program)(state, sample))

    (state8, priorities8), (state1, priorities1) = steps(jax.devices()), steps(jax.devices()[:1])
    trees = ((state8.params, state1.params), (state8.target_params, state1.target_params))
    for eight, one in trees:
        for a, b in zip(jax.tree.leaves(eight), jax.tree.leaves(one), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(priorities8, priorities1, rtol=1e-5, atol=1e-6)
    changed = max(
        float(np.abs(a - b).max()) for a, b in zip(jax.tree.leaves(state8.params), jax.tree.leaves(params), strict=True)
    )
    return {"changed": changed, "steps": int(state8.gradient_steps)}


if __name__ == "__main__":
    print(json.dumps(main()))
