"""A trained agent read back from a run's workdir: its config, its agent and environment, its acting parameters.

`load(workdir)` is what `podracer evaluate` and `podracer export` start from.
It reads the newest readable checkpoint (or the one asked for), takes the
resolved config the checkpoint was written with, rebuilds the agent and the
environment that config names, and restores the agent's learner state, and
nothing else of the training state: the environments' states, the keys and a
replay buffer are not needed to act, and are not read. The learner state is
read into host memory, so a checkpoint saved on any number of devices loads
onto the devices this process has. A population's member is chosen by its
index.
"""

import dataclasses
import os
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from ml_collections import ConfigDict

from podracer import agents, envs
from podracer.agents import Agent
from podracer.anakin import anakin_settings
from podracer.config import population
from podracer.config.errors import ConfigError
from podracer.devices.device_split import sebulba_device_ids
from podracer.envs.env_registry import with_config_kwargs
from podracer.experiment import schema
from podracer.run.checkpoints import FOLDER
from podracer.sebulba import sebulba_settings


@dataclasses.dataclass(frozen=True)
class TrainedAgent:
    """What a workdir's checkpoint holds of the agent, rebuilt to act."""

    config: ConfigDict  # The run's resolved config (a population member's, for a population).
    agent: Agent
    learner: Any  # The learner state, on the default device.
    specs: tuple  # `(observation_spec, action_spec)` of the run's environment (one environment's).
    step: int  # The environment steps the checkpoint had taken.
    checkpoint: str  # Its folder.

    @property
    def acting_params(self) -> Any:
        """What the agent acts with: `agent.acting_params` of the learner state."""
        return self.agent.acting_params(self.learner)

    def make_env(self, num_envs: int = 1, seed: int = 0) -> Any:
        """The run's environment: a pure-JAX `Environment` for Anakin, a batch of `num_envs` host ones for Sebulba."""
        return make_env(self.config, num_envs, seed)


def make_env(config: ConfigDict, num_envs: int = 1, seed: int = 0) -> Any:
    """The environment `config` names, with its `env.kwargs`: Anakin's pure-JAX one, or a Sebulba host batch."""
    if config.architecture == "anakin":
        return with_config_kwargs(config, envs.make, config.env.name)
    return with_config_kwargs(config, envs.host_factory(config.env.name), num_envs, seed)


def env_specs(config: ConfigDict) -> tuple[Any, Any]:
    """The observation and action specs of the environment `config` names, on its architecture."""
    env = make_env(config)
    try:
        return env.observation_spec(), env.action_spec()
    finally:
        if config.architecture == "sebulba":
            env.close()


def load(workdir: str, checkpoint: int | None = None, member: int | None = None) -> TrainedAgent:
    """The agent of `workdir`'s newest checkpoint (or of update `checkpoint`), ready to act.

    Raises `ConfigError` naming `workdir`, `checkpoint` or `member` when there
    is no such run, checkpoint or member.
    """
    folder = os.path.join(os.path.abspath(workdir), FOLDER)  # orbax restores from absolute paths only.
    updates = sorted((int(name) for name in _listing(folder) if name.isdigit()), reverse=True)
    if not updates:
        raise ConfigError("workdir", f"{workdir!r} holds no checkpoint", "give the --workdir of a podracer train run")
    if checkpoint is not None and checkpoint not in updates:
        raise ConfigError("checkpoint", f"{folder} has no checkpoint {checkpoint}", f"choose one of {updates}")
    path = os.path.join(folder, str(checkpoint if checkpoint is not None else updates[0]))
    learner, meta = _restore_learner(folder, int(os.path.basename(path)))
    config = from_dict(meta["config"])
    config, learner = _member(config, learner, member)
    agent = agents.make(config, num_updates=_num_updates(config))
    specs = env_specs(config)  # Outside the trace: an environment may make arrays as it is built.
    like = jax.eval_shape(lambda key: agent.init(key, *specs), jax.random.key(0))
    learner = _as_tree(learner, like)
    return TrainedAgent(config, agent, learner, specs, int(meta["step"]), path)


def _restore_learner(folder: str, update: int) -> tuple[Any, dict]:
    """The learner state of `folder`'s checkpoint of `update` as NumPy arrays on the host, and its metadata.

    Only the learner's part of the training state is read, and into host
    memory, so a checkpoint written on any number of devices (two XLA:CPU
    devices, a TPU slice) is read the same on the devices this process has:
    orbax would otherwise lay each array out as it was saved, and refuse a
    different topology.
    """
    handlers = {"state": ocp.PyTreeCheckpointHandler(), "meta": ocp.JsonCheckpointHandler()}
    manager = ocp.CheckpointManager(folder, item_names=("state", "meta"), item_handlers=handlers)
    try:
        saved = dict(manager.item_metadata(update)["state"])["learner"]
        like = jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype), saved)
        on_host = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), like)
        state = ocp.args.PyTreeRestore(item={"learner": like}, restore_args={"learner": on_host}, partial_restore=True)
        restored = manager.restore(update, args=ocp.args.Composite(state=state, meta=ocp.args.JsonRestore()))
    finally:
        manager.close()
    return restored.state["learner"], restored.meta


def from_dict(saved: dict) -> ConfigDict:
    """The ConfigDict a checkpoint's `config` (its `to_dict()`) was: `defaults` for its agent and architecture,
    with every saved value set and JSON's lists read back as tuples."""
    config = schema.defaults(saved["agent"]["name"], saved["architecture"])
    config.unlock()
    config.update(_tuples(saved))
    return config


def _as_tree(saved: Any, like: Any) -> Any:
    """The arrays of `saved` (orbax's nested dicts and lists, read without a target) in the tree structure of `like`,
    each found by its path; typed random keys wrapped again (`checkpoints.to_savable` stored their data)."""

    def find(path: tuple, reference: Any) -> Any:
        node = saved
        for entry in path:
            node = node[getattr(entry, "name", getattr(entry, "key", getattr(entry, "idx", None)))]
        if jax.dtypes.issubdtype(reference.dtype, jax.dtypes.prng_key):
            return jax.random.wrap_key_data(node, impl=jax.random.key_impl(jax.random.key(0)))
        return jax.numpy.asarray(node)

    return jax.tree_util.tree_map_with_path(find, like)


def _tuples(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _tuples(item) for key, item in value.items()}
    return tuple(_tuples(item) for item in value) if isinstance(value, list) else value


def _member(config: ConfigDict, learner: Any, member: int | None) -> tuple[ConfigDict, Any]:
    """A single run's config and learner state, or a population member's (its slice of every leaf)."""
    members = population.size(config)
    if not members:
        if member is not None:
            raise ConfigError("member", "this run is not a population", "leave --member out")
        return config, learner
    if member is None or not 0 <= member < members:
        raise ConfigError(
            "member", f"the run is a population of {members} members", f"pass --member 0 to {members - 1}"
        )
    return population.member(config, member), jax.tree.map(lambda x: x[member], learner)


def _num_updates(config: ConfigDict) -> int:
    """The `learn` calls the run's agent was built for (its schedules, DQN's epsilon, read them)."""
    if config.architecture == "anakin":
        return anakin_settings.num_updates(config)
    actor_ids, _ = sebulba_device_ids(config)
    threads = len(actor_ids) * config.actor_threads_per_device
    return sebulba_settings.num_updates(config, threads) * config.learner_minibatches


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []
