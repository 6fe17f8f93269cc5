"""Independent Q-learning, VDN and QMIX: the agents of a multi-agent environment learn action values from replay.

Three registered agents, one learner differing only in `agent.mixer`
(`mixers`, `value_decomposition`):

- `independent_q` (`mixer="none"`): independent Q-learning (Tan 1993), each
  agent's Q-values learning from its own reward (JaxMARL's `iql_rnn.py`);
- `vdn` (`mixer="vdn"`): Q_tot = sum_a Q_a (Sunehag et al. 2018), from the team's reward;
- `qmix` (`mixer="qmix"`): Q_tot a monotonic mix of the Q_a by a network whose
  weights hypernetworks make from the environment's global state (Rashid et
  al. 2018). An environment that observes no global state is refused, naming
  `agent.mixer`, before anything compiles.

The agents share one Q-network (a GRU with `network.core = "gru"`, as
JaxMARL's `RNNQNetwork`), reading each agent's observation and one-hot id;
they act epsilon-greedily on their own Q-values (`q_learning.recurrent_act` and
`exploration`, lifted over the agents by `per_agent`), so acting needs no
global state. Learning is DQN's replay loop (`replay.make_learn`, `q_learning.make_gradient_step`): each
`learn` call adds the rollout (every agent's steps, and the recurrent state
each had) to the device's buffer and takes `replay_ratio` gradient steps on
sampled sequences, replayed from their stored state (R2D2). The target
network and target mixer follow the online ones every `target_update_period`
gradient steps (`target_tau` of the way).
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import dqn, q_learning, shared_fields
from podracer.agents.algorithms.network_agent import recurrent_state
from podracer.agents.learning import exploration, recurrent_replay, replay
from podracer.agents.learning.optimizer import key_data, make_optimizer
from podracer.agents.models import networks
from podracer.agents.several_agents import mixers, per_agent, value_decomposition
from podracer.agents.trajectory import Trajectory
from podracer.config import field_checks, settings
from podracer.config.errors import ConfigError
from podracer.envs import env_registry, multi_agent
from podracer.envs.actions import GLOBAL_STATE


def defaults(mixer: str = "vdn") -> ConfigDict:
    """DQN's fields (`dqn.defaults`, at JaxMARL's `ql_rnn_mpe.yaml` values where it has them) and the mixer's."""
    config = dqn.defaults()
    del config.huber_delta  # The loss is the squared TD error, as the papers' and JaxMARL's.
    config.update(
        {
            "gamma": 0.9,
            "target_update_period": 200,
            "epsilon_fraction": 0.1,
            "buffer_size": 130_000,  # 5,000 rollouts of 26 steps.
            "min_replay_size": 10_000,
            "batch_size": 32,
            "mixer": mixer,  # none (independent Q-learning), vdn or qmix.
            "reward_scale": 1.0,  # Rewards are multiplied by it, after `reward_clip` (the team's is the agents' mean).
            "embedding_size": 32,  # QMIX: the mixing network's hidden width.
            "hypernet_hidden_size": 128,  # QMIX: the hypernetworks' hidden width.
            "mixer_init_scale": 0.001,  # QMIX: the hypernetworks' orthogonal gain.
        }
    )
    return config


def validate(config: ConfigDict) -> None:
    dqn.validate_q_learning(config)
    field_checks.choice(config, "agent.mixer", mixers.MIXERS)
    field_checks.number(config, "agent.reward_scale", example=10.0, above=0.0)
    field_checks.integer(config, "agent.embedding_size", at_least=1, example=32)
    field_checks.integer(config, "agent.hypernet_hidden_size", at_least=1, example=128)
    field_checks.number(config, "agent.mixer_init_scale", example=0.001, above=0.0)


def check_environment(config: ConfigDict, env: multi_agent.MultiAgent) -> None:
    """`ConfigError`s naming the field: QMIX's mixer reads the global state, and one shared network needs alike agents."""
    if env.teams is not None:
        raise ConfigError(
            "env.name",
            f"the agents of {config.env.name} differ in their spaces ({env.teams}); {config.agent.name} shares one "
            "Q-network among agents that observe and act alike",
            "use an environment of alike agents (e.g. jaxmarl:MPE_simple_spread_v3), or ippo for teams",
        )
    if config.agent.get("mixer") == "qmix" and not env.has_global_state():
        raise ConfigError(
            "agent.mixer",
            f"QMIX's hypernetworks read the environment's global state, and {config.env.name} observes none",
            "set --config.agent.mixer=vdn, or use an environment with a global state",
        )


def init_mixer(mixer: mixers.QMixer | None, key: chex.PRNGKey, observation_spec: dict, agents: int) -> Any:
    """The QMIX mixer's weights for the environment's global state; `{}` for VDN and no mixer."""
    if mixer is None:
        return {}
    state = jax.tree.map(lambda spec: jnp.zeros((1,) + spec.shape, jnp.float32), observation_spec[GLOBAL_STATE])
    return mixer.init(key, jnp.zeros((1, agents)), state)


def stored_state_spec(network: Any, agents: int) -> dict | None:
    """The extras the buffer keeps: each agent's recurrent state acting had at a step (`[N, ...]`)."""
    one = recurrent_replay.stored_state_spec(network)
    return None if one is None else jax.tree.map(lambda s: jax.ShapeDtypeStruct((agents,) + s.shape, s.dtype), one)


def acting_agent(network: Any, agents: int) -> Agent:
    """Epsilon-greedy acting on the shared Q-network for every agent (`act`, `greedy_act`, `initial_state`)."""
    act = exploration.act if network.core == "none" else q_learning.recurrent_act
    single = Agent(
        init=None,
        act=act,
        learn=None,
        acting_params=None,
        initial_state=recurrent_state(network, networks.q_network_state),
        greedy_act=exploration.greedy(act),
    )
    return per_agent.lift(single, share_parameters=True, num_agents=agents)


def build(config: ConfigDict, num_updates: int) -> Agent:
    agent_config, network = config.agent, shared_fields.network_settings(config)
    agents = env_registry.agent_layout(config)
    replay_setup = shared_fields.replay_setup(config, agent_config.sequence_length + agent_config.n_step)
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), num_updates * agent_config.replay_ratio)
    epsilon = exploration.epsilon_schedule(shared_fields.epsilon_settings(config), num_updates)
    loss_settings = settings.read(value_decomposition.LossSettings, agent_config)
    mixer = None
    if agent_config.mixer == "qmix":
        mixer = mixers.QMixer(
            agent_config.embedding_size, agent_config.hypernet_hidden_size, agent_config.mixer_init_scale
        )

    def init(key: chex.PRNGKey, observation_spec: dict, action_spec: Any) -> q_learning.DQNState:
        agent_key, mixer_key, key = jax.random.split(key, 3)
        one_spec = per_agent.agent_observation_spec(observation_spec, with_id=True)
        module = networks.make_q_network(network, one_spec, per_agent.agent_action_spec(action_spec))
        params = value_decomposition.Params(
            networks.init_module(agent_key, module, one_spec), init_mixer(mixer, mixer_key, observation_spec, agents)
        )
        action = jax.ShapeDtypeStruct((agents,), jnp.int32)
        return q_learning.DQNState(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            replay=replay.init(replay_setup, observation_spec, action, stored_state_spec(network, agents), (agents,)),
            learn_calls=jnp.int32(0),
            gradient_steps=jnp.int32(0),
            key=key_data(key),
        )

    gradient_step = q_learning.make_gradient_step(
        optimizer,
        lambda p, s, t, _: value_decomposition.loss(p, s, t, mixer, loss_settings),
        agent_config.target_tau,
        agent_config.target_update_period,
    )
    replayed_learn = replay.make_learn(replay_setup, gradient_step)

    def learn(state: q_learning.DQNState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None):
        learn_calls = state.learn_calls
        state, metrics = replayed_learn(state, recurrent_replay.kept_extras(trajectory), key, axis_name)
        return state, {**metrics, "epsilon": epsilon(learn_calls)}

    def acting_params(state: q_learning.DQNState) -> exploration.ActingParams:
        return exploration.acting_params(state.params.agent, epsilon, state.learn_calls)

    return dataclasses.replace(acting_agent(network, agents), init=init, learn=learn, acting_params=acting_params)


for _name, _mixer in (("independent_q", "none"), ("vdn", "vdn"), ("qmix", "qmix")):
    registry.register(
        _name,
        defaults=lambda mixer=_mixer: defaults(mixer),
        build=build,
        validate=validate,
        several_agents=True,
        check_environment=check_environment,
        config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
    )
