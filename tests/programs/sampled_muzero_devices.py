"""Sampled MuZero's gradient step on one batch: split over 8 devices against whole on 1.

A replay agent samples its own buffer on each device, so two runs on 8 and 1
devices do not see the same data; what must agree is the update on one given
batch: 32 sequences of Pendulum-shaped data (real actions, K sampled actions
and a search policy over them per step, episode ends inside the window,
importance weights), 4 per device against all 32 on one. With plain SGD
(Adam's per-parameter normalisation would blow float noise in near-zero
gradients up to full steps), three steps must end on the same parameters up
to float rounding, with the same metrics, and each sequence's priority the
same wherever it was. Prints a JSON summary; exits non-zero (an assertion) if
they differ. Run with 8 forced CPU devices:
`python -m tests.programs.sampled_muzero_devices`.
"""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from jax.sharding import PartitionSpec

from podracer.agents.algorithms import muzero, shared_fields
from podracer.agents.continuous_search import sampled_model, sampled_muzero
from podracer.agents.learning import replay
from podracer.agents.models import muzero_model
from podracer.agents.trajectory import Trajectory
from podracer.config import settings
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, SHARDED, device_mesh, per_device_program
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from tests.helpers import load_config

SEQUENCES, SAMPLES, STEPS = 32, 4, 3
OBSERVATION_SPEC = specs.Array((3,), np.float32)
ACTION_SPEC = specs.BoundedArray((1,), np.float32, -2.0, 2.0)


def batch(config, seed: int = 0) -> replay.Sample:
    """Random sequences of `config`'s length, [L, S] time-major, a LAST (then FIRST) in a few of them."""
    rng = np.random.default_rng(seed)
    length = config.agent.unroll_steps + config.agent.n_step + 2
    step_type = np.full((length, SEQUENCES), MID, np.int32)
    ends = rng.integers(1, length - 1, size=SEQUENCES // 4)
    step_type[ends, np.arange(SEQUENCES // 4) * 4] = LAST
    step_type[ends + 1, np.arange(SEQUENCES // 4) * 4] = FIRST
    trajectory = Trajectory(
        timestep=TimeStep(
            step_type=jnp.asarray(step_type),
            reward=jnp.asarray(-rng.uniform(0, 16, size=(length, SEQUENCES)), jnp.float32),
            discount=jnp.asarray(np.where(step_type == LAST, 0.0, 1.0), jnp.float32),
            observation=jnp.asarray(rng.normal(size=(length, SEQUENCES, 3)), jnp.float32),
        ),
        action=jnp.asarray(rng.uniform(-2, 2, size=(length - 1, SEQUENCES, 1)), jnp.float32),
        extras={
            "search_policy": jnp.asarray(rng.dirichlet(np.ones(SAMPLES), size=(length - 1, SEQUENCES)), jnp.float32),
            "sampled_actions": jnp.asarray(
                rng.uniform(-0.99, 0.99, size=(length - 1, SEQUENCES, SAMPLES, 1)), jnp.float32
            ),
            "root_value": jnp.asarray(rng.normal(size=(length - 1, SEQUENCES)) * 50, jnp.float32),
        },
    )
    weights = jnp.asarray(rng.uniform(0.2, 1.0, SEQUENCES), jnp.float32)
    return replay.Sample(trajectory, jnp.arange(SEQUENCES, dtype=jnp.int32), weights)


def steps(config, devices) -> tuple:
    """`STEPS` gradient steps on the batch over `devices`: the final parameters, each step's metrics, priorities."""
    loss_settings = settings.read(muzero.LossSettings, config.agent)
    sequence_loss = functools.partial(
        muzero.loss, loss_settings=loss_settings, policy_loss=sampled_muzero.sampled_policy_loss
    )
    gradient_step, optimizer = muzero.make_gradient_step(config, STEPS, sequence_loss)
    network = shared_fields.network_settings(config)
    model = sampled_model.make_model(network, OBSERVATION_SPEC, ACTION_SPEC, config.agent.support_size)
    params = muzero_model.init(jax.random.key(7), model, OBSERVATION_SPEC, jax.ShapeDtypeStruct((1,), jnp.float32))
    state = muzero.MuZeroState(params, optimizer.init(params), None, jnp.int32(0))
    drawn = batch(config)
    time_major = PartitionSpec(None, DEVICE_AXIS)
    sample_specs = replay.Sample(jax.tree.map(lambda _: time_major, drawn.trajectory), SHARDED, SHARDED)
    program = jax.jit(
        per_device_program(
            lambda s, d: gradient_step(s, d, DEVICE_AXIS),
            device_mesh(devices),
            (REPLICATED, sample_specs),
            (REPLICATED, REPLICATED, SHARDED),
        )
    )
    history = []
    for _ in range(STEPS):
        state, metrics, priorities = program(state, drawn)
        history.append(jax.device_get((metrics, priorities)))
    return jax.device_get(state.params.variables), history


def main() -> dict:
    assert jax.device_count() == 8, jax.devices()
    config = load_config(
        "anakin_pendulum_sampled_muzero",
        {
            "optimizer.name": "sgd",
            "optimizer.learning_rate": 0.1,
            "network.hidden_sizes": (16,),
            "network.hidden_size": 16,
            "agent.num_samples": SAMPLES,
        },
    )
    params8, history8 = steps(config, jax.devices())
    params1, history1 = steps(config, jax.devices()[:1])
    for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(params1), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for (metrics8, priorities8), (metrics1, priorities1) in zip(history8, history1, strict=True):
        for name in metrics1:
            np.testing.assert_allclose(metrics8[name], metrics1[name], rtol=1e-4, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(priorities8, priorities1, rtol=1e-5, atol=1e-5)
    return {"loss": [float(m["loss"]) for m, _ in history1], "policy_loss": float(history1[-1][0]["policy_loss"])}


if __name__ == "__main__":
    print(json.dumps(main()))
