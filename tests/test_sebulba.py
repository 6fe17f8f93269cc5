"""Sebulba end to end: device splits, where data lands, parameter versions, determinism, learning.

Runs that need a particular number of devices start their own interpreter with
forced CPU devices; the rest run in the test process, which has two.
"""

import hashlib
import json

import jax
import numpy as np
import pytest

from podracer import sebulba
from tests.helpers import load_config, run_python

CARTPOLE_IMPALA = "sebulba_cartpole_impala"


def small_cartpole(**overrides):
    """A few quick Sebulba updates on envpool CartPole."""
    fields = dict(envs_per_thread=6, unroll_length=8, total_steps=8 * 6 * 2 * 3, log_every_updates=1)
    fields.update(overrides)
    return load_config(CARTPOLE_IMPALA, **fields)


def params_digest(state) -> str:
    return hashlib.sha256(b"".join(np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(state.params))).hexdigest()


# Runs a small Sebulba training in a fresh interpreter, recording (through wrappers around
# the real functions) where each trajectory's shards live and which parameter versions the
# actors asked for and received.
INSTRUMENTED_RUN = """
import importlib, json, sys
import jax, numpy as np
from podracer.sebulba import parameters
train_module = importlib.import_module("podracer.sebulba.train")  # The module; the package exports the function.
from tests.test_sebulba import small_cartpole

overrides = json.loads(sys.argv[1])
overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
published, received, shards = {}, [], []

def checksum(params):
    return float(sum(np.sum(np.asarray(leaf, np.float64)) for leaf in jax.tree.leaves(params)))

real_publish, real_get = parameters.ParameterServer.publish, parameters.ParameterServer.get
def publish(self, version, params):
    published[version] = checksum(params)
    real_publish(self, version, params)
def get(self, version, device, timeout):
    params = real_get(self, version, device, timeout)
    received.append((version, device.id, sorted(d.id for d in jax.tree.leaves(params)[0].devices()), checksum(params)))
    return params
parameters.ParameterServer.publish, parameters.ParameterServer.get = publish, get

real_make_update = train_module.make_update
def make_update(*args):
    update = real_make_update(*args)
    def recorded(state, trajectories, key):
        leaf = trajectories[0].timestep.observation
        shards.append([(s.device.id, s.index[1].start, s.index[1].stop) for s in leaf.addressable_shards])
        return update(state, trajectories, key)
    return recorded
train_module.make_update = make_update

state, history = train_module.train(small_cartpole(**overrides), show_progress=False)
print(json.dumps({
    "published": published, "received": received, "shards": shards, "records": history,
    "params_devices": sorted(d.id for d in jax.tree.leaves(state.params)[0].devices()),
}))
"""


def instrumented_run(devices: int, **overrides) -> dict:
    result = run_python(INSTRUMENTED_RUN, num_devices=devices, args=(json.dumps(overrides),), timeout=240)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_one_actor_three_learners_shards_land_on_the_learners_and_actors_get_every_new_version():
    run = instrumented_run(4, actor_device_ids=[0], learner_device_ids=[1, 2, 3], policy_lag=0, learner_minibatches=2)
    # Every actor thread's batch of 6 environments is split 2 + 2 + 2 over learner devices 1, 2, 3.
    assert run["shards"] and all(sorted(s) == [[1, 0, 2], [2, 2, 4], [3, 4, 6]] for s in run["shards"])
    assert run["params_devices"] == [1, 2, 3]
    # Versions 0 (initial) to 3 are published; with lag 0 each actor's rollout k uses version k, on its device.
    assert sorted(int(v) for v in run["published"]) == [0, 1, 2, 3]
    for thread_requests in (run["received"][0::2], run["received"][1::2]):
        assert sorted(r[0] for r in thread_requests) == [0, 1, 2]
    for version, device, param_devices, checksum in run["received"]:
        assert device == 0 and param_devices == [0]
        assert checksum == run["published"][str(version)]
    assert [r["policy_lag"] for r in run["records"]] == [0.0, 0.0, 0.0]


def test_actor_and_learner_share_the_only_device():
    run = instrumented_run(1, policy_lag=1)
    assert run["params_devices"] == [0]
    assert all(s == [[0, None, None]] for s in run["shards"])  # The whole batch on device 0.
    # Lag 1: rollout k acts with version k - 1 (rollout 0 with the initial parameters).
    assert [r["policy_lag"] for r in run["records"]] == [0.0, 1.0, 1.0]
    assert all(np.isfinite(r["loss"]) for r in run["records"])


@pytest.mark.parametrize("policy_lag", [0, 1])
def test_fixed_lag_and_seed_give_bitwise_identical_parameters_whatever_the_thread_timing(monkeypatch, policy_lag):
    config = small_cartpole(policy_lag=policy_lag, total_steps=8 * 6 * 2 * 5)
    first, _ = sebulba.train(config, show_progress=False)

    # Second run: random sleeps in every actor's environment steps reshuffle the thread timing.
    from podracer.envs.envpool_env import HostEnvironment

    real_step, rng = HostEnvironment.step, np.random.default_rng()

    def slow_step(self, action):
        if rng.random() < 0.3:
            __import__("time").sleep(rng.random() * 0.01)
        return real_step(self, action)

    monkeypatch.setattr(HostEnvironment, "step", slow_step)
    second, _ = sebulba.train(config, show_progress=False)
    assert params_digest(first) == params_digest(second)
    third, _ = sebulba.train(small_cartpole(policy_lag=policy_lag, total_steps=8 * 6 * 2 * 5, seed=1), show_progress=False)
    assert params_digest(third) != params_digest(first)


def test_telemetry_fields():
    _, history = sebulba.train(small_cartpole(), show_progress=False)
    record = history[-1]
    for field in ("step", "steps_per_second", "frames_per_second", "actor_env_share", "actor_inference_share",
                  "actor_wait_share", "learner_share", "learner_wait_share", "policy_lag", "queue_depth",
                  "mean_episode_return", "loss", "mean_rho"):
        assert field in record, field
    assert record["step"] == 8 * 6 * 2 * 3
    assert 0.0 <= record["queue_depth"] <= 2.0
    # Shares of the window's wall time (approximate: a rollout may have started before the window did).
    for share in ("actor_env_share", "actor_inference_share", "learner_share"):
        assert 0.0 < record[share] < 3.0, (share, record[share])


def test_pong_impala_runs_a_few_updates():
    config = load_config("sebulba_pong_impala", envs_per_thread=2, total_steps=20 * 2 * 2 * 2, log_every_updates=1)
    _, history = sebulba.train(config, show_progress=False)
    assert [r["step"] for r in history] == [80, 160]
    assert all(np.isfinite(r["loss"]) for r in history)
    assert history[-1]["frames_per_second"] == 4 * history[-1]["steps_per_second"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sebulba_cartpole_impala", "sebulba_cartpole_ppo"])
def test_learns_envpool_cartpole(name):
    _, history = sebulba.train(load_config(name), show_progress=False)
    assert history[-1]["mean_episode_return"] >= 475, [round(r["mean_episode_return"]) for r in history]
