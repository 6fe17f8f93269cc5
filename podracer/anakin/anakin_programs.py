"""Which programs an Anakin run compiles: acting and learning online, or learning from a dataset.

`programs(config, env, agent_for, mesh)` is the one place the two differ for
the host loop (`anakin_train`): how the state is made, the dispatch, and what
each dispatch takes beside the state (the dataset on the devices, or nothing).
Everything else, from checkpoints and evaluation to populations, is the same.
"""

import dataclasses
from collections.abc import Callable

from jax.sharding import Mesh
from ml_collections import ConfigDict

from podracer import envs
from podracer.anakin import anakin_settings
from podracer.anakin.offline_program import make_offline_dispatch, make_offline_init
from podracer.anakin.program import AgentFor, make_dispatch, make_init
from podracer.config import population
from podracer.envs.base import Environment
from podracer.offline import offline_settings, training_data


@dataclasses.dataclass(frozen=True)
class Programs:
    """How a run's state is made and its dispatch built, and what every dispatch takes after `updates`."""

    make_init: Callable  # (key, hyperparameters) -> init(key, hyperparameters) -> AnakinState, compiled.
    make_dispatch: Callable  # () -> the jitted dispatch(state, hyperparameters, updates, *data).
    data: tuple  # The dataset on the devices (`podracer.offline.sampling.DeviceRows`), or ().


def programs(config: ConfigDict, env: Environment, agent_for: AgentFor, mesh: Mesh) -> Programs:
    """The run's programs; a dataset (`offline.dataset`) is read, checked and placed here, before any compiles."""
    members, in_parallel = population.size(config), config.members_in_parallel
    updates_per_dispatch = anakin_settings.updates_per_dispatch(config)
    if offline_settings.from_dataset(config):
        _, device_rows = training_data.load(config, env, mesh)
        specs = (env.observation_spec(), env.action_spec())
        return Programs(
            make_init=lambda key, varied: make_offline_init(agent_for, specs, mesh, key, varied),
            make_dispatch=lambda: make_offline_dispatch(
                agent_for,
                config.agent.batch_size,
                updates_per_dispatch,
                mesh,
                device_rows,
                config.check_finite,
                members,
                in_parallel,
            ),
            data=(device_rows,),
        )
    training_env = envs.wrap_for_training(env, reset_fraction=anakin_settings.reset_fraction(config))
    return Programs(
        make_init=lambda key, varied: make_init(training_env, agent_for, config.num_envs, mesh, key, varied),
        make_dispatch=lambda: make_dispatch(
            training_env,
            agent_for,
            config.unroll_length,
            updates_per_dispatch,
            mesh,
            config.check_finite,
            members,
            in_parallel,
            offline_settings.records(config),
        ),
        data=(),
    )
