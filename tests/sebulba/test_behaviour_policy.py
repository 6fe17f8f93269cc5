"""The behaviour policy each rollout records is exactly that of the parameter version that acted.

V-trace's and PPO's importance weights divide by the behaviour policy stored in
`trajectory.extras`. Here a real actor thread (envpool CartPole, the agent's
`act`, stepped from Python or as one compiled program) runs against a
stand-in learner that publishes a new, different parameter version after each
rollout it takes, as the learner thread does. For every rollout, the first
ones included, under policy lag 0 and 1: the version reported is the one the
lag prescribes, and the recorded logits equal that version's policy on the
rollout's observations, and no other version's.
"""

import queue
import threading

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding

import podracer
from podracer import agents
from podracer.devices.topology import device_mesh
from podracer.envs import make_envpool_env
from podracer.sebulba.actor import ActorLoop, make_send, policy_version, run_actor
from podracer.sebulba.learner import TRAJECTORY_SPEC
from podracer.sebulba.lifecycle import RunControl
from podracer.sebulba.parameter_versions import ParameterVersions
from podracer.sebulba.phase_clock import PhaseClock
from podracer.sebulba.telemetry import ACTOR_PHASES
from podracer.sebulba.unroll import make_unroll
from tests.helpers import HANG_SECONDS

ROLLOUTS, UNROLL, ENVS = 5, 6, 4


def _version(params, version: int):
    """Parameters of `version`: version 0 perturbed by an amount that grows with the version."""
    keys = jax.random.split(jax.random.key(100 + version), len(jax.tree.leaves(params)))
    noise = jax.tree.unflatten(
        jax.tree.structure(params),
        [jax.random.normal(k, x.shape) for k, x in zip(keys, jax.tree.leaves(params), strict=True)],
    )
    return jax.tree.map(lambda x, n: x + 0.5 * version * n, params, noise)


@pytest.mark.parametrize("stepping", ["host", "compiled"])
@pytest.mark.parametrize("policy_lag", [0, 1])
def test_each_rollout_records_the_policy_of_the_version_that_acted(policy_lag, stepping):
    agent = agents.make(podracer.defaults("impala", "sebulba"), num_updates=ROLLOUTS)
    env = make_envpool_env("CartPole-v1", ENVS, seed=0)
    device = jax.devices()[0]
    state = agent.init(jax.random.key(0), env.observation_spec(), env.action_spec())
    versions = {v: _version(agent.acting_params(state), v) for v in range(ROLLOUTS)}
    parameters, rollouts, control = ParameterVersions([device]), queue.Queue(maxsize=1), RunControl(HANG_SECONDS)
    parameters.publish(0, versions[0])
    send = make_send(NamedSharding(device_mesh([device]), TRAJECTORY_SPEC))
    clock = PhaseClock(ACTOR_PHASES)
    actor = threading.Thread(
        target=run_actor,
        args=(
            ActorLoop(
                unroll=make_unroll(stepping, env, agent, device, jax.random.key(1), UNROLL, send, control.check, clock),
                device=device,
                parameters=parameters,
                rollouts=rollouts,
                control=control,
                policy_lag=policy_lag,
                first_rollout=0,
                num_rollouts=ROLLOUTS,
                clock=clock,
            ),
        ),
    )
    actor.start()
    try:
        for index in range(ROLLOUTS):
            rollout = rollouts.get(timeout=HANG_SECONDS)
            assert rollout.params_version == policy_version(index, policy_lag)
            observations = rollout.trajectory.timestep.observation[:-1].reshape(UNROLL * ENVS, -1)
            recorded = np.asarray(rollout.trajectory.extras["logits"]).reshape(UNROLL * ENVS, -1)
            for version, params in versions.items():
                _, (outputs, _) = params.step((), observations)
                logits = np.asarray(outputs["logits"])
                same = np.allclose(recorded, logits, rtol=1e-5, atol=1e-6)
                assert same == (version == rollout.params_version), (index, version)
            if index + 1 < ROLLOUTS:
                parameters.publish(index + 1, versions[index + 1])  # As the learner does after update index + 1.
    finally:
        control.stop.set()
        actor.join(HANG_SECONDS)
        env.close()
    assert not actor.is_alive()
