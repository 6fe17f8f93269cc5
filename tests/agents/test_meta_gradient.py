"""Meta-gradients through K updates against finite differences, meta-gradient RL against the plain agent, and the
way it moves a meta-parameter where that way is known."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from jax.sharding import PartitionSpec

import podracer
from podracer import agents, envs
from podracer.agents.learning.losses import policy_gradient_loss
from podracer.agents.learning.optimizer import LearnerState, OptimizerSettings, make_optimizer, sgd_step
from podracer.agents.learning.returns import lambda_returns
from podracer.agents.meta import meta_gradient
from podracer.agents.models import policy
from podracer.agents.trajectory import Trajectory, transitions
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, SHARDED, device_mesh, per_device_program
from podracer.envs.timestep import FIRST, MID, TimeStep
from tests.references import T, make_params, make_trajectory, unroll_fn

META = {"gamma": 0.9, "td_lambda": 0.8, "entropy_cost": 0.05}  # The meta-parameters eta.
OUTER = {"gamma": 0.99, "td_lambda": 1.0, "entropy_cost": 0.0}  # The validation objective's fixed eta'.
OPTIMIZER = OptimizerSettings(name="sgd", learning_rate=0.5, max_grad_norm=100.0)
LEARN = ("gamma", "td_lambda", "entropy_cost")
META_DEFAULT = {"gamma": 0.99, "td_lambda": 0.9, "entropy_cost": 0.01}  # actor_critic's defaults.


def loss(params, batch, hyperparameters):
    """An A2C objective (`losses.policy_gradient_loss`) whose TD(lambda) targets bootstrap from fixed values.

    Unlike the agents' losses, which hold their targets constant with
    `stop_gradient`, it is a plain function of the parameters, so finite
    differences see exactly what automatic differentiation differentiates.
    """
    trajectory, target_values = batch
    _, (outputs, values) = unroll_fn(
        params, (), trajectory.timestep.observation, trajectory.timestep.step_type == FIRST
    )
    outputs = jax.tree.map(lambda x: x[:-1], outputs)
    tr = transitions(trajectory, hyperparameters["gamma"])
    returns = lambda_returns(tr.rewards, tr.discounts, target_values, tr.lambdas(hyperparameters["td_lambda"]))
    return policy_gradient_loss(
        policy.log_prob(outputs, trajectory.action),
        outputs,
        values[:-1],
        tr.valid,
        returns - target_values[:-1],
        returns,
        value_cost=0.5,
        entropy_cost=hyperparameters["entropy_cost"],
    )


def batch(seed):
    """A trajectory of `references.make_trajectory` and fixed values `[T + 1, B]` to bootstrap from."""
    trajectory = make_trajectory(seed)
    return trajectory, jax.random.normal(jax.random.key(seed), trajectory.timestep.reward.shape)


def problem(axis_name=None):
    """The tiny linear actor-critic's update (SGD, as `make_optimizer` builds it) and validation objective."""
    optimizer = make_optimizer(OPTIMIZER, gradient_steps=10)

    def inner_update(meta, state, batch):
        return sgd_step(state, batch, lambda p, b: loss(p, b, meta), optimizer, axis_name)

    def outer_loss(meta, state, batch):
        return loss(state.params, batch, OUTER)

    return optimizer, inner_update, outer_loss


def stacked(*trajectories):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trajectories)


@pytest.mark.parametrize("k", [1, 2])
def test_meta_gradient_through_k_updates_equals_finite_differences(k):
    """d J'(theta_K) / d eta by reverse mode through K SGD updates equals central differences, in float64.

    With K = 1 the forward-mode form (`update_jacobian` met with the outer gradient, as
    meta-gradient RL computes it) gives the same numbers.
    """
    with jax.enable_x64(True):
        optimizer, inner_update, outer_loss = problem()
        params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), make_params(0))
        data = [
            jax.tree.map(lambda x: x.astype(jnp.float64) if x.dtype == jnp.float32 else x, batch(s))
            for s in range(k + 1)
        ]
        meta = {name: jnp.float64(value) for name, value in META.items()}
        state = LearnerState(params, optimizer.init(params))
        batches, outer_batch = stacked(*data[:k]), data[k]
        grads, (state_k, _, inner_metrics) = jax.jit(meta_gradient.meta_gradient(inner_update, outer_loss))(
            meta, state, batches, outer_batch
        )

        def objective(m):
            return outer_loss(m, meta_gradient.inner_updates(inner_update, m, state, batches)[0], outer_batch)[0]

        objective = jax.jit(objective)
        for name in META:
            eps = 1e-6
            plus, minus = dict(meta, **{name: meta[name] + eps}), dict(meta, **{name: meta[name] - eps})
            estimate = (objective(plus) - objective(minus)) / (2 * eps)
            np.testing.assert_allclose(grads[name], estimate, rtol=1e-5, atol=1e-9, err_msg=name)
        assert all(abs(float(grads[name])) > 1e-6 for name in META)  # Each meta-parameter matters here.
        assert inner_metrics["loss"].shape == (k,)
        if k == 1:

            @jax.jit
            def forward_mode(meta, state, batch, state_k, outer_batch):
                jacobian = meta_gradient.update_jacobian(inner_update, meta, state, batch, lambda s: s.params)
                outer_loss_of = lambda p: outer_loss(meta, state_k.replace(params=p), outer_batch)[0]  # noqa: E731
                return meta_gradient.contract(jacobian, jax.grad(outer_loss_of)(state_k.params))

            forward = forward_mode(meta, state, data[0], state_k, outer_batch)
            for name in META:
                np.testing.assert_allclose(forward[name], grads[name], rtol=1e-9, err_msg=name)


@pytest.mark.slow  # Compiles the meta-gradient on a mesh and off it: about 6 s.
def test_meta_gradient_over_two_devices_equals_the_whole_batch_on_one():
    """Halves of the batch on two devices, as Anakin runs them (`per_device_program`, pmap-style), the inner and
    the meta-gradients averaged with the collectives: the whole batch's numbers, the same on both devices."""
    optimizer, inner_update, outer_loss = problem(DEVICE_AXIS)
    params = make_params(0)
    state = LearnerState(params, optimizer.init(params))
    data = [jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), batch(s), batch(s + 5)) for s in range(2)]
    meta = {name: jnp.float32(value) for name, value in META.items()}
    batches, outer_batch = stacked(data[0]), data[1]
    fn = meta_gradient.meta_gradient(inner_update, outer_loss, DEVICE_AXIS)

    def run(num_devices):  # Each device's copy of the results, along a leading device axis.
        def per_device(meta, state, batches, outer_batch):
            return jax.tree.map(lambda x: x[None], fn(meta, state, batches, outer_batch))

        in_specs = (REPLICATED, REPLICATED, PartitionSpec(None, None, DEVICE_AXIS), PartitionSpec(None, DEVICE_AXIS))
        mesh = device_mesh(jax.devices()[:num_devices])
        program = per_device_program(per_device, mesh, in_specs, SHARDED)
        return jax.jit(program)(meta, state, batches, outer_batch)

    whole, split = run(1), run(2)
    for got, want in zip(jax.tree.leaves(split), jax.tree.leaves(whole), strict=True):
        np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=1e-7)
        np.testing.assert_array_equal(got[0], got[1])  # The same on every device.


def tiny_config(learn=(), learning_rate=1e-3):
    config = podracer.defaults("actor_critic")
    config.network.hidden_sizes = (8,)
    config.agent.meta_gradient.learn, config.agent.meta_gradient.learning_rate = learn, learning_rate
    return config


@pytest.mark.slow
def test_meta_gradient_rl_moves_and_reports_its_values_through_adam():
    """Three `learn` calls, each on a new trajectory, with gamma, lambda and the entropy cost as meta-parameters:
    the Jacobians through Adam are finite where some weights have a 0 gradient, and the values move."""
    env = envs.make("catch", rows=5)
    agent = agents.make(tiny_config(LEARN, learning_rate=0.1), num_updates=10)
    state = agent.init(jax.random.key(0), env.observation_spec(), env.action_spec())
    learn = jax.jit(functools.partial(agent.learn, key=jax.random.key(1)))
    for seed in range(3):
        trajectory = make_trajectory(seed)
        shape = (T + 1, trajectory.action.shape[1], *env.observation_spec().shape)
        observation = jax.random.uniform(jax.random.key(seed), shape).at[..., 0, :].set(0.0)  # Weights with 0 gradient.
        state, metrics = learn(state, trajectory.replace(timestep=trajectory.timestep.replace(observation=observation)))
    jacobian = jax.tree.leaves(state.meta.jacobian)
    assert any(np.any(leaf != 0) for leaf in jacobian) and all(np.all(np.isfinite(leaf)) for leaf in jacobian)
    assert all(abs(float(metrics[name]) - META_DEFAULT[name]) > 1e-3 for name in LEARN)
    assert all(float(metrics[name]) == state.meta.values[name] for name in LEARN)


@pytest.mark.slow
@pytest.mark.default_compile(llvm_optimised=False)  # Bitwise only as XLA's own emitters build the two programs.
def test_a_tiny_anakin_run_at_rate_0_is_the_plain_run_bitwise_and_records_gamma_and_lambda():
    """As Anakin compiles it, acting and learning in one program: there XLA fused the plain update differently (1
    ulp off) until the meta-gradient's arithmetic was kept apart from it."""

    def run(learn):
        config = podracer.defaults("actor_critic")
        config.env.name, config.num_envs, config.unroll_length, config.total_steps = "catch", 64, 16, 64 * 16 * 2
        config.agent.meta_gradient.learn, config.agent.meta_gradient.learning_rate = learn, 0.0
        return podracer.train(config)

    plain, at_0 = run(()), run(("gamma", "td_lambda"))
    for a, b in zip(
        jax.tree.leaves(plain.learner_state.params), jax.tree.leaves(at_0.learner_state.params), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    record = at_0.history[-1]
    assert record["gamma"] == np.float32(0.99) and record["td_lambda"] == np.float32(0.9) and "meta_loss" in record


def bandit(seed: int, steps: int = 8, batch: int = 16, actions: int = 3, features: int = 4):
    """`steps` x `batch` one-step bandits on a constant observation, their arms drawn uniformly: arm 0 pays 1, the
    others 0, and every step ends its episode (discount 0), so each return is the next reward."""
    rng = np.random.default_rng(seed)
    action = rng.integers(0, actions, size=(steps, batch)).astype(np.int32)
    reward = np.zeros((steps + 1, batch), np.float32)
    reward[1:] = action == 0
    timestep = TimeStep(
        step_type=jnp.full((steps + 1, batch), MID, jnp.int32),
        reward=jnp.asarray(reward),
        discount=jnp.zeros((steps + 1, batch), jnp.float32),
        observation=jnp.ones((steps + 1, batch, features), jnp.float32),
    )
    return Trajectory(timestep=timestep, action=jnp.asarray(action), extras={})


@pytest.mark.slow  # Two small agents compiled.
@pytest.mark.parametrize("init", range(3))
def test_the_meta_gradient_moves_the_entropy_cost_the_way_the_validation_objective_asks(init):
    """The entropy cost c as the one meta-parameter, an SGD inner update theta' = theta - alpha grad(L_pg - c H) and a
    policy of its own torso: d theta' / dc = alpha grad H, so the meta-gradient of J' = L_pg - c' H is
    alpha (grad L_pg . grad H - c' |grad H|^2). On a bandit whose arm 0 pays, once the policy prefers that arm,
    raising the entropy pulls it back towards uniform, against L_pg: with c' = 0 the meta-gradient is positive and c
    falls; with c' = 10 the second term wins and c rises. Either way it moves by more than Adam's noise of a few steps.
    """

    def entropy_costs(outer_entropy_cost: float) -> list[float]:
        config = podracer.defaults("actor_critic")
        config.network.hidden_sizes, config.network.shared_torso = (8,), False
        config.optimizer.name, config.optimizer.learning_rate = "sgd", 0.5
        settings = config.agent.meta_gradient
        settings.learn, settings.learning_rate, settings.outer_entropy_cost = (
            ("entropy_cost",),
            1e-3,
            outer_entropy_cost,
        )
        agent = agents.make(config, num_updates=100)
        state = agent.init(jax.random.key(init), specs.Array((4,), np.float32), specs.DiscreteArray(3))
        learn = jax.jit(functools.partial(agent.learn, key=jax.random.key(1)))
        costs = []
        for seed in range(8):
            state, metrics = learn(state, bandit(100 * init + seed))
            costs.append(float(metrics["entropy_cost"]))
        return costs

    start = META_DEFAULT["entropy_cost"]
    falls, rises = entropy_costs(0.0), entropy_costs(10.0)
    assert falls[-1] < start - 1e-3 and np.all(np.diff(falls[-4:]) < 0), falls
    assert rises[-1] > start + 1e-3 and np.all(np.diff(rises[-4:]) > 0), rises
