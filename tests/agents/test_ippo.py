"""IPPO and MAPPO (`podracer.agents.several_agents.ippo`, `per_agent`): how parameters are shared or kept apart,
against hand-computed updates and single-agent PPO; what the critics read; action masks; the checks of agent against
environment; and two agents, alike or a team each, learning a cooperative game (`tests/programs/coordination_game.py`)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer import agents
from podracer.agents.agent import Agent
from podracer.agents.algorithms import ppo
from podracer.agents.models.networks import ActorCritic
from podracer.agents.models.torsos import flatten_observation
from podracer.agents.several_agents import per_agent, teams
from podracer.agents.trajectory import Trajectory
from podracer.config.errors import ConfigError
from podracer.envs.actions import ACTION_MASK, GLOBAL_STATE
from podracer.envs.multi_agent import LOCAL
from podracer.envs.timestep import TimeStep
from podracer.run.contract import recent_return
from tests.helpers import load_config
from tests.programs.coordination_game import CuedCoordination, get_config, refused_field


def linear_agent(learning_rate: float) -> Agent:
    """A toy agent whose update is hand-computable: one SGD step on the mean over transitions of w . x, x each
    agent's observation flattened (its id included), so the step is -learning_rate * mean(x)."""

    def init(key, observation_spec, action_spec):
        return {"w": jnp.zeros(sum(int(np.prod(s.shape)) for s in jax.tree.leaves(observation_spec)))}

    def act(params, observation, key):
        return jnp.zeros(key.shape, jnp.int32), {}

    def learn(state, trajectory, key, axis_name=None):
        features = flatten_observation(
            jax.tree.map(lambda x: x[:-1].reshape((-1,) + x.shape[2:]), trajectory.timestep.observation)
        )
        gradient = jax.grad(lambda w: jnp.mean(features @ w))(state["w"])
        return {"w": state["w"] - learning_rate * gradient}, {"loss": jnp.float32(0.0)}

    return Agent(init=init, act=act, learn=learn, acting_params=lambda state: state)


def constant_trajectory(local: np.ndarray, steps: int = 3, batch: int = 2) -> Trajectory:
    """A trajectory `[steps + 1, batch]` whose agents observe `local` `[N, F]` at every step."""
    agents = local.shape[0]
    lead = (steps + 1, batch)
    timestep = TimeStep(
        step_type=jnp.ones(lead, jnp.int32),
        reward=jnp.zeros(lead + (agents,)),
        discount=jnp.ones(lead + (agents,)),
        observation={LOCAL: jnp.broadcast_to(jnp.asarray(local, jnp.float32), lead + local.shape)},
    )
    return Trajectory(timestep, jnp.zeros((steps, batch, agents), jnp.int32), {})


def toy_specs(agents: int, features: int) -> tuple[dict, specs.Array]:
    observation = {LOCAL: specs.Array((agents, features), np.float32)}
    return observation, specs.BoundedArray((agents,), np.int32, 0, 2)


def test_shared_parameters_take_the_sum_over_agents_of_each_ones_share_of_the_gradient():
    """Agents observing v0 = (1, 2) and v1 = (3, -1), each with its one-hot id (which the torso's flattening puts
    first, in key order): x0 = (1, 0, 1, 2), x1 = (0, 1, 3, -1). One network, every agent's transitions in one
    mean: the step is -(x0 + x1) / 2 = -(0.5, 0.5, 2, 0.5)."""
    agent = per_agent.lift(linear_agent(learning_rate=1.0), share_parameters=True)
    state = agent.init(jax.random.key(0), *toy_specs(2, 2))
    state, _ = agent.learn(state, constant_trajectory(np.array([[1.0, 2.0], [3.0, -1.0]])), jax.random.key(1))
    np.testing.assert_allclose(state["w"], [-0.5, -0.5, -2.0, -0.5], rtol=1e-6)


def test_independent_parameters_leave_each_agents_network_to_its_own_loss():
    """One network each, no id: agent 0's step is -(1, 2) and agent 1, which observes zeros, keeps its weights."""
    agent = per_agent.lift(linear_agent(learning_rate=1.0), share_parameters=False)
    state = agent.init(jax.random.key(0), *toy_specs(2, 2))
    assert state["w"].shape == (2, 2)  # A network per agent, stacked on the agent axis.
    state, _ = agent.learn(state, constant_trajectory(np.array([[1.0, 2.0], [0.0, 0.0]])), jax.random.key(1))
    np.testing.assert_allclose(state["w"], [[-1.0, -2.0], [0.0, 0.0]])


def test_teams_of_different_agents_each_learn_on_their_own_part():
    """Team "a" (two agents observing 2 numbers) and team "b" (one observing 3), a network per agent: each agent's
    step is minus its own observation, whatever the other team observes."""
    lifted = {team: per_agent.lift(linear_agent(learning_rate=1.0), share_parameters=False) for team in ("a", "b")}
    agent = teams.over_teams(lifted)
    observation_spec = {LOCAL: {"a": specs.Array((2, 2), np.float32), "b": specs.Array((1, 3), np.float32)}}
    action_spec = {"a": specs.BoundedArray((2,), np.int32, 0, 2), "b": specs.BoundedArray((1,), np.int32, 0, 4)}
    state = agent.init(jax.random.key(0), observation_spec, action_spec)
    local = {"a": np.array([[1.0, 2.0], [3.0, -1.0]]), "b": np.array([[0.5, 0.0, -2.0]])}
    parts = {team: constant_trajectory(local[team]) for team in local}
    trajectory = Trajectory(
        parts["a"].timestep.replace(
            reward={team: part.timestep.reward for team, part in parts.items()},
            discount={team: part.timestep.discount for team, part in parts.items()},
            observation={LOCAL: {team: part.timestep.observation[LOCAL] for team, part in parts.items()}},
        ),
        {team: part.action for team, part in parts.items()},
        {team: {} for team in parts},
    )
    state, _ = agent.learn(state, trajectory, jax.random.key(1))
    np.testing.assert_allclose(state["a"]["w"], [[-1.0, -2.0], [-3.0, 1.0]])
    np.testing.assert_allclose(state["b"]["w"], [[-0.5, 0.0, 2.0]])


def rollout(env, agent: Agent, params, steps: int, batch: int, seed: int = 0) -> Trajectory:
    """A feed-forward agent's trajectory `[steps + 1, batch]` on `env` (one-step episodes, reset after each step)."""
    keys = jax.random.split(jax.random.key(seed), (steps + 1) * 2).reshape(steps + 1, 2)
    timesteps, actions, extras = [], [], []
    for t in range(steps + 1):
        _, timestep = jax.vmap(env.reset)(jax.random.split(keys[t, 0], batch))
        timesteps.append(timestep)
        if t < steps:
            action, extra = agent.act(params, timestep.observation, jax.random.split(keys[t, 1], batch))
            actions.append(action)
            extras.append(extra)
    stack = lambda *x: jnp.stack(x)  # noqa: E731
    return Trajectory(jax.tree.map(stack, *timesteps), jnp.stack(actions), jax.tree.map(stack, *extras))


def agent_slice(trajectory: Trajectory, agent: int) -> Trajectory:
    """Agent `agent`'s trajectory, written out field by field: what single-agent PPO would be given for it."""
    timestep = trajectory.timestep
    observation = {
        key: value if key == GLOBAL_STATE else value[:, :, agent] for key, value in timestep.observation.items()
    }
    return Trajectory(
        TimeStep(timestep.step_type, timestep.reward[..., agent], timestep.discount[..., agent], observation),
        trajectory.action[..., agent],
        jax.tree.map(lambda x: x[:, :, agent], trajectory.extras),
    )


@pytest.mark.slow  # Compiles the lifted learner and single-agent PPO's, each for every agent: about 10 s.
def test_independent_ippo_updates_each_agent_as_single_agent_ppo_on_its_own_trajectory():
    config = get_config()
    config.agent.share_parameters = False
    config.agent.num_minibatches = 2
    env = CuedCoordination(masked=True)
    lifted = agents.make(config, num_updates=4)
    state = lifted.init(jax.random.key(0), env.observation_spec(), env.action_spec())
    trajectory = rollout(env, lifted, lifted.acting_params(state), steps=4, batch=4)
    learned, _ = jax.jit(lifted.learn)(state, trajectory, jax.random.key(3))

    ppo_config = config.copy_and_resolve_references()
    with ppo_config.unlocked():
        del ppo_config.agent.share_parameters, ppo_config.agent.critic
    single = ppo.build(ppo_config, num_updates=4)
    keys = jax.random.split(jax.random.key(3), env.num_agents)
    for i in range(2):
        own = jax.tree.map(lambda x: x[i], state)
        expected, _ = jax.jit(single.learn)(own, agent_slice(trajectory, i), keys[i])
        for a, b in zip(jax.tree.leaves(jax.tree.map(lambda x: x[i], learned)), jax.tree.leaves(expected), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("centralised", [True, False])
def test_only_a_centralised_critic_reads_the_global_state(centralised):
    network = ActorCritic(action_size=3, hidden_sizes=(8,), shared_torso=False, centralised_critic=centralised)
    rng = np.random.default_rng(0)
    observation = {LOCAL: rng.normal(size=(1, 5, 4)), GLOBAL_STATE: rng.normal(size=(1, 5, 6))}
    other_state = {**observation, GLOBAL_STATE: rng.normal(size=(1, 5, 6))}
    first = jnp.zeros((1, 5), bool)
    params = network.init(jax.random.key(0), (), observation, first)
    (_, (outputs, value)), (_, (other_outputs, other_value)) = (
        network.apply(params, (), o, first) for o in (observation, other_state)
    )
    np.testing.assert_array_equal(outputs["logits"], other_outputs["logits"])  # The policy acts on its own view.
    assert np.all(value != other_value) if centralised else np.array_equal(value, other_value)


def test_masked_actions_are_never_chosen():
    config = get_config()
    env = CuedCoordination(arms=3, masked=True)
    agent = agents.make(config, num_updates=1)
    params = agent.acting_params(agent.init(jax.random.key(0), env.observation_spec(), env.action_spec()))
    _, timestep = jax.vmap(env.reset)(jax.random.split(jax.random.key(1), 512))
    for seed in range(4):
        action, _ = jax.jit(agent.act)(params, timestep.observation, jax.random.split(jax.random.key(seed), 512))
        chosen = np.take_along_axis(np.asarray(timestep.observation[ACTION_MASK]), np.asarray(action)[..., None], -1)
        assert chosen.all() and len(np.unique(action)) == 3


@pytest.mark.parametrize(
    "agent, env_name, kwargs, field",
    [
        ("ppo", "cued_coordination", {}, "agent.name"),  # One agent's network for two.
        ("ippo", "catch", {}, "env.name"),  # Several agents' training on one.
        ("mappo", "cued_coordination", {"global_state": False}, "agent.critic"),
        pytest.param(  # One network for different agents. Slow: importing JaxMARL takes about 9 s.
            "ippo", "jaxmarl:MPE_simple_tag_v3", {}, "agent.share_parameters", marks=pytest.mark.slow
        ),
    ],
)
def test_agent_and_environment_must_fit_before_anything_compiles(agent, env_name, kwargs, field):
    assert refused_field(agent, env_name, **kwargs) == field


def test_a_centralised_critic_needs_a_torso_of_its_own():
    config = get_config()
    config.agent = podracer.defaults("mappo").agent
    config.network.shared_torso = True
    with pytest.raises(ConfigError) as error:
        podracer.validate_config(config)
    assert error.value.field == "network.shared_torso"


@pytest.mark.slow  # Three short runs, about 4 s each.
@pytest.mark.parametrize("name, share", [("ippo", True), ("ippo", False), ("mappo", True)])
@pytest.mark.learning("last 100 episodes", at_least=0.9, random=1 / 16)
def test_two_agents_learn_to_meet_at_the_lit_arm(name, share, learning):
    """A random pair meets at the lit arm 1/16 of the time."""
    config = get_config()
    config.agent = podracer.defaults(name).agent
    config.agent.share_parameters = share
    config.env.kwargs.masked = True
    config.seed = learning.seed
    learning.check(recent_return(podracer.train(config).history))


@pytest.mark.slow  # One short run of two teams, about 8 s.
@pytest.mark.learning("last 100 episodes", at_least=0.9, random=1 / 20)
def test_two_teams_of_different_agents_learn_to_meet_at_the_lit_arm(learning):
    """Teams learn, each by its own agent (`teams.over_teams`): the pointer sees the lit arm among its 4 arms, the
    reader among its 5 (one never lit), and both must pull it. A random pair meets 1/20 of the time; seeds 0-4
    reach 1, 0.99, 1, 0.98, 1."""
    config = get_config()
    config.env.name = "cued_coordination_teams"
    config.agent.share_parameters = False
    config.seed = learning.seed
    learning.check(recent_return(podracer.train(config).history))


@pytest.mark.slow  # JaxMARL's MPE and two updates of a network per agent, about 8 s.
def test_ippo_trains_teams_of_different_agents():
    """MPE simple_tag: three adversaries (observing 16 numbers) and a runner (14), a network for each agent."""
    config = load_config("anakin_mpe_spread_ippo", {"env.name": "jaxmarl:MPE_simple_tag_v3"})
    config.agent.share_parameters = False
    config.num_envs, config.unroll_length, config.total_steps, config.network.hidden_sizes = 8, 32, 8 * 32 * 2, (16,)
    result = podracer.train(config)
    assert result.steps == 8 * 32 * 2 and np.isfinite(result.history[-1]["loss"])
    layers = {team: jax.tree.leaves(state.params)[0].shape[0] for team, state in result.learner_state.items()}
    assert layers == {"adversary": 3, "agent": 1}  # A network per agent, stacked within its team.
