"""A meta-trained LPG rule on held-out grid worlds and chains: a fresh agent it trains, against actor-critic and
a random policy at the same number of steps. A table for docs/meta-learning.md, not a CI test.

    python -m scripts.evaluate_learned_rule runs/lpg/rule                 # every family, seeds 0-2
    python -m scripts.evaluate_learned_rule runs/lpg/rule --steps 40960 --seeds 0 1 2 3 4

Each family of `configs/anakin_lpg_gridworlds.py` is evaluated on its
held-out layouts (`env.kwargs.held_out_layouts`: every reset draws among the
first few layouts that meta-training never draws). The two learners are
configured as the meta-trained agents were (the meta-training config's
network, optimiser, unroll length and environments per member), from
`configs/anakin_catch_learned_rule.py` and `configs/anakin_catch.py`; each
row is the mean return of the last 100 episodes (`podracer.recent_return`) of
a run of `--steps` steps. The random policy's row is the same statistic of
uniformly random actions over as many steps, in the same environments.
"""

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import podracer
from podracer.envs import episodes, make
from podracer.envs.wrappers import AutoReset

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
META_CONFIG = os.path.join(ROOT, "configs", "anakin_lpg_gridworlds.py")
LEARNERS = {
    "learned_rule": os.path.join(ROOT, "configs", "anakin_catch_learned_rule.py"),
    "actor_critic": os.path.join(ROOT, "configs", "anakin_catch.py"),
}


def learner_config(name: str, env: str, kwargs: dict, *, meta, rule: str, steps: int, layouts: int, seed: int):
    """`name`'s config on `env`'s first `layouts` held-out layouts for `steps` steps, with the settings of the agents
    that the meta-training config `meta` trained (`rule` is the rule's folder, for `learned_rule`)."""
    config = podracer.load_config(LEARNERS[name])
    config.seed, config.total_steps = seed, steps
    config.env.name, config.env.kwargs = env, {**kwargs, "held_out_layouts": layouts}
    config.num_envs, config.unroll_length = meta.meta.envs_per_member, meta.unroll_length
    config.network, config.optimizer = meta.network, meta.optimizer
    config.cpu_devices = config.num_devices = 1
    config.cpu_threads = 0  # XLA's own default: this process has run JAX already (the random policy's rollouts).
    if name == "learned_rule":
        config.agent.rule_checkpoint = rule
        for field in ("gamma", "prediction_size", "prediction_cost"):  # What the meta-trained agents read.
            config.agent[field] = meta.agent[field]
    return config


def random_return(env_name: str, kwargs: dict, args: argparse.Namespace, seed: int, num_envs: int) -> float:
    """The mean return of the last 100 episodes of uniformly random actions over `args.steps` steps."""
    env = AutoReset(make(env_name, **kwargs, held_out_layouts=args.layouts))
    actions = env.action_spec().num_values

    def step(carry, key):
        state, running, length = carry
        state, timestep = jax.vmap(env.step)(state, jax.random.randint(key, (num_envs,), 0, actions))
        running, length = episodes.update(running, length, timestep)
        return (state, running, length), (timestep.last(), running)

    state, _ = jax.vmap(env.reset)(jax.random.split(jax.random.key(seed), num_envs))
    carry = (state, jnp.zeros(num_envs), jnp.zeros(num_envs, jnp.int32))
    keys = jax.random.split(jax.random.key(seed + 1), args.steps // num_envs)
    _, (ended, returns) = jax.jit(lambda c, k: jax.lax.scan(step, c, k))(carry, keys)
    finished = np.asarray(returns)[np.asarray(ended)]  # In time order, environments within a step.
    return float(np.mean(finished[-100:]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rule", help="the rule's folder (WORKDIR/rule of podracer meta-train)")
    parser.add_argument("--steps", type=int, default=20_480, help="environment steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--layouts", type=int, default=8, help="held-out layouts drawn from")
    args = parser.parse_args(argv)
    meta = podracer.load_config(META_CONFIG)
    print(f"| environment | {' | '.join(('random', *LEARNERS))} |")
    print(f"| --- | {' | '.join('---' for _ in range(len(LEARNERS) + 1))} |")
    settings = {"meta": meta, "rule": args.rule, "steps": args.steps, "layouts": args.layouts}
    for env, kwargs, _ in meta.meta.environments:
        cells = [[random_return(env, kwargs, args, seed, meta.meta.envs_per_member) for seed in args.seeds]]
        for name in LEARNERS:
            runs = [podracer.train(learner_config(name, env, kwargs, **settings, seed=seed)) for seed in args.seeds]
            cells.append([podracer.recent_return(run.history) for run in runs])
        text = [f"{np.mean(c):.2f} ({', '.join(f'{x:.2f}' for x in c)})" for c in cells]
        print(f"| `{env}` {kwargs.get('variant', '')} | {' | '.join(text)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
