"""Replication over several devices: 8 forced CPU devices in a subprocess.

An update on 8 devices, each holding 1/8 of the environments, must equal the
same update on 1 device holding them all: every random draw belongs to one
environment, and gradients are averaged with `pmean` over equal shards.
"""

import json

from tests.helpers import run_python

EIGHT_VERSUS_ONE = """
import json, jax, numpy as np
from podracer import envs
from podracer.agents import make_agent
from podracer.anakin.program import init_state, make_dispatch
from podracer.topology import device_mesh
from tests.helpers import load_config

assert jax.device_count() == 8, jax.devices()
# Plain SGD: Adam's per-parameter normalisation would blow float noise in near-zero gradients up to full steps.
config = load_config("anakin_catch", num_envs=32, unroll_length=10, updates_per_dispatch=3)
config.optimizer.name = "sgd"
config.optimizer.learning_rate = 0.1
env = envs.wrap_for_training(envs.make("catch"))
agent = make_agent(config, env, num_updates=3)

def run(devices):
    mesh = device_mesh(devices)
    state = init_state(jax.random.key(7), env, agent, config.num_envs, mesh)
    initial_params = jax.device_get(state.learner.params)
    shards = {s.device for s in state.timestep.observation.addressable_shards}
    assert len(shards) == len(devices), shards
    assert state.timestep.observation.addressable_shards[0].data.shape[0] == config.num_envs // len(devices)
    state, metrics = make_dispatch(env, agent, config.unroll_length, config.updates_per_dispatch, mesh)(state)
    return initial_params, jax.device_get((state.learner.params, state.timestep.observation, metrics))

initial, (params8, obs8, metrics8) = run(jax.devices())
_, (params1, obs1, metrics1) = run(jax.devices()[:1])
np.testing.assert_array_equal(obs8, obs1)  # The same environment trajectories.
for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(params1)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
for name in metrics1:
    np.testing.assert_allclose(metrics8[name], metrics1[name], rtol=1e-4, atol=1e-6, err_msg=name)
changed = max(float(np.abs(a - b).max()) for a, b in zip(jax.tree.leaves(params8), jax.tree.leaves(initial)))
print(json.dumps({"episodes": float(np.sum(metrics8["episodes"])), "changed": changed}))
"""

PPO_ON_EIGHT = """
import json, jax
from podracer.anakin import train
from tests.helpers import load_config

config = load_config("anakin_cartpole_ppo", num_envs=16, total_steps=16 * 128 * 4, updates_per_dispatch=2)
state, history = train(config, show_progress=False)
params = jax.tree.leaves(state.learner.params)[0]
summary = {"devices": len(params.sharding.device_set), "loss": history[-1]["loss"], "step": history[-1]["step"]}
print(json.dumps(summary))
"""


def last_json_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def test_eight_devices_make_the_same_update_as_one_device_with_the_whole_batch():
    result = run_python(EIGHT_VERSUS_ONE, num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["episodes"] > 0
    assert summary["changed"] > 0  # The updates did move the parameters.


def test_ppo_trains_replicated_over_eight_devices():
    result = run_python(PPO_ON_EIGHT, num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary == {"devices": 8, "loss": summary["loss"], "step": 16 * 128 * 4}
    assert abs(summary["loss"]) < 1e3
