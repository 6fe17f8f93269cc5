"""A batch of a pure-JAX environment stepped from Python, as a `HostEnvironment`: one episode per key.

`podracer evaluate` plays a trained Anakin agent's environment this way, so one
host loop (`podracer.sebulba.sebulba_evaluation.play_host_episodes`) serves both
architectures and can draw each environment's state as it goes (`frames`).
Each environment starts from its own key, split into the reset key and the
acting key as Anakin's compiled evaluation splits it, so both play the same
episodes. There is no auto-reset unless asked for: an environment whose
episode ended keeps stepping (its steps count for nothing). With
`auto_reset`, the batch is wrapped as for training (`wrap_for_training`), and
each environment starts its next episode as one ends, as Sebulba's host
batches do: what `podracer collect` plays.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp

from podracer.envs.base import Environment
from podracer.envs.host import HostEnvironment
from podracer.envs.timestep import TimeStep
from podracer.envs.wrappers import wrap_for_evaluation, wrap_for_training


class JaxOnHost(HostEnvironment):
    """`env` batched over `keys` `[B]`, reset and stepped by jitted calls; `state` is the batch's current state."""

    def __init__(self, env: Environment, keys: chex.PRNGKey, auto_reset: bool = False):
        self.env, self.num_envs = env, keys.shape[0]
        self._batched = wrap_for_training(env) if auto_reset else wrap_for_evaluation(env)
        self._reset_keys = evaluation_keys(keys)[0]
        self._reset, self._step = jax.jit(self._batched.reset), jax.jit(self._batched.step)
        self.state: Any = None

    def reset(self) -> TimeStep:
        self.state, timestep = self._reset(self._reset_keys)
        return jax.device_get(timestep)

    def step(self, action: Any) -> TimeStep:
        self.state, timestep = self._step(self.state, action)
        return jax.device_get(timestep)

    def observation_spec(self) -> Any:
        return self.env.observation_spec()

    def action_spec(self) -> Any:
        return self.env.action_spec()


def evaluation_keys(keys: chex.PRNGKey) -> tuple[chex.PRNGKey, chex.PRNGKey]:
    """`(reset keys, acting keys)`, each `[B]`, from one evaluation key per environment."""
    reset_keys, act_keys = jnp.moveaxis(jax.vmap(jax.random.split)(keys), 1, 0)
    return reset_keys, act_keys
