"""Gradient steps per second of podracer's TD3+BC and IQL against Unifloral's single-file `td3_bc.py` and `iql.py`.

Unifloral (Jackson et al. 2025, github.com/EmptyJackson/unifloral) compiles
its whole training loop, as podracer does. Both sides train from the same
dataset (a podracer or Minari dataset: Unifloral reads D4RL through `d4rl`,
for which the dataset's arrays stand in), with the same networks (256-256
ReLU), batch (256), optimiser (Adam 3e-4) and losses. Speed is critic
gradient steps per second, compilation left out on both sides: a Unifloral
update of TD3+BC takes 2 critic steps and one actor step, podracer's two
updates (policy delay 2) the same; an IQL update is one step of each network
on both sides. Unifloral's program is compiled ahead of time, before the
timed call; podracer's rate is read from its records (`podracer_rate`). Runs
alternate between the sides, each in a fresh process. Usage:

    python -m scripts.compare_unifloral --unifloral /tmp/unifloral --dataset datasets/pendulum-medium-v0 \\
        --algorithm td3_bc --env gymnax:Pendulum-v1 --updates 20000 --pairs 3 [--cpu-devices 2]

`--cpu-threads` sizes XLA:CPU's thread pool on both sides (0, the default:
one per core, JAX's own default, which Unifloral runs with); `--cpu-devices N`
runs podracer's side on N XLA:CPU devices (the dataset and each batch split
over them); Unifloral's runs on one device.
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

import numpy as np

from scripts.compare_purejaxrl import RESULT, fresh_pairs
from scripts.purejaxrl_runs import podracer_rate, stand_in_missing

SIDES = ("unifloral", "podracer")
CRITIC_STEPS_PER_UPDATE = {"td3_bc": 2, "iql": 1}  # Unifloral's; podracer's updates each take one.


def load_unifloral(checkout: str, algorithm: str):
    """Unifloral's `algorithms/<algorithm>.py` as a module; d4rl, gym, tyro and wandb stand-ins, which it imports
    for its command line, environments and logging (none of them run here)."""
    stand_in_missing(["d4rl", "gym", "tyro", "wandb"])
    path = os.path.join(checkout, "algorithms", f"{algorithm}.py")
    spec = importlib.util.spec_from_file_location(f"unifloral_{algorithm}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transitions(path: str, env_name: str):
    """`(observation, action in [-1, 1], reward, next observation, done)` arrays of the dataset's transitions."""
    from podracer import envs
    from podracer.offline import minari_files
    from podracer.offline.dataset import from_episodes

    env = envs.make(env_name)
    episodes, *_, metadata = minari_files.read(path)
    dataset = from_episodes(episodes, env.observation_spec(), env.action_spec(), metadata)
    rows, spec = dataset.transition_rows, env.action_spec()
    action = 2.0 * (dataset.action[rows] - spec.minimum) / (spec.maximum - spec.minimum) - 1.0
    done = dataset.terminated[rows].astype(np.float32)
    return (
        dataset.observation[rows],
        action.astype(np.float32),
        dataset.reward[rows],
        dataset.observation[rows + 1],
        done,
    )


def unifloral_run(args: argparse.Namespace) -> float:
    """Critic gradient steps per second of one compiled run of Unifloral's trainer."""
    from podracer.devices.xla_cpu import set_cpu_threads

    set_cpu_threads(args.cpu_threads)  # Before JAX starts.
    import jax
    import jax.numpy as jnp

    module = load_unifloral(args.unifloral, args.algorithm)
    settings = module.Args(algorithm=args.algorithm, seed=args.seed)
    data = module.Transition(*(jnp.asarray(x) for x in transitions(args.dataset, args.env)))
    obs_mean, obs_std = data.obs.mean(axis=0), jnp.nan_to_num(data.obs.std(axis=0), nan=1.0)
    dummy = [jnp.zeros(data.obs.shape[1:]), jnp.zeros(data.action.shape[1:])]
    actions = data.action.shape[1]
    rng = jax.random.PRNGKey(args.seed)
    make = lambda network, key, inputs: module.create_train_state(settings, key, network, inputs)  # noqa: E731
    q = module.DualQNetwork(obs_mean, obs_std)
    if args.algorithm == "td3_bc":
        actor = module.DeterministicTanhActor(actions, obs_mean, obs_std)
        state = module.AgentTrainState(
            make(actor, rng, dummy[:1]), make(actor, rng, dummy[:1]), make(q, rng, dummy), make(q, rng, dummy)
        )
        step = module.make_train_step(settings, actor.apply, q.apply, data)
    else:
        actor, value = (
            module.TanhGaussianActor(actions, obs_mean, obs_std),
            module.StateValueFunction(obs_mean, obs_std),
        )
        state = module.AgentTrainState(
            make(actor, rng, dummy[:1]), make(q, rng, dummy), make(q, rng, dummy), make(value, rng, dummy[:1])
        )
        step = module.make_train_step(settings, actor.apply, q.apply, value.apply, data)
    loop = jax.jit(lambda rng, state: jax.lax.scan(step, (rng, state), None, args.updates))
    compiled = loop.lower(rng, state).compile()
    start = time.perf_counter()
    jax.block_until_ready(compiled(rng, state))
    return args.updates * CRITIC_STEPS_PER_UPDATE[args.algorithm] / (time.perf_counter() - start)


def podracer_run(args: argparse.Namespace) -> float:
    """Critic gradient steps per second of podracer's run from its records (compilation never counts)."""
    import podracer

    steps = args.updates * CRITIC_STEPS_PER_UPDATE[args.algorithm]
    fields = {"offline.dataset": args.dataset, "env.name": args.env, "total_steps": steps, "seed": args.seed}
    fields |= {"cpu_devices": args.cpu_devices, "cpu_threads": args.cpu_threads}
    fields |= {"log_records": 10, "evaluation.every_steps": 0}
    config = podracer.load_config(f"configs/anakin_pendulum_{args.algorithm}.py", fields)
    return podracer_rate(podracer.train(config).history)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unifloral", required=True, help="a checkout of EmptyJackson/unifloral")
    parser.add_argument("--dataset", required=True, help="a dataset's folder (podracer collect's, or Minari's)")
    parser.add_argument("--env", default="gymnax:Pendulum-v1", help="the dataset's environment")
    parser.add_argument("--algorithm", choices=sorted(CRITIC_STEPS_PER_UPDATE), default="td3_bc")
    parser.add_argument("--updates", type=int, default=10_000, help="Unifloral's updates per run")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--cpu-devices", type=int, default=1, help="podracer's XLA:CPU devices")
    parser.add_argument("--cpu-threads", type=int, default=0, help="XLA:CPU threads, both sides (0: one per core)")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # One fresh process's run.
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side is not None:
        rate = (unifloral_run if args.side == "unifloral" else podracer_run)(args)
        print(RESULT + json.dumps({"side": args.side, "steps_per_second": rate}))
        return 0
    flags = ["--unifloral", args.unifloral, "--dataset", args.dataset, "--env", args.env]
    flags += ["--algorithm", args.algorithm, "--updates", str(args.updates), "--cpu-devices", str(args.cpu_devices)]
    flags += ["--cpu-threads", str(args.cpu_threads)]
    print(
        f"{args.algorithm} on {args.dataset}: {args.updates:,} Unifloral updates a run, podracer on "
        f"{args.cpu_devices} device(s), each run in a fresh process",
        flush=True,
    )
    results = fresh_pairs("scripts.compare_unifloral", flags, args.pairs, SIDES, dict(os.environ))
    ratios = []
    for seed, pair in sorted(results.items()):
        theirs, ours = pair["unifloral"]["steps_per_second"], pair["podracer"]["steps_per_second"]
        ratios.append(ours / theirs)
        print(f"pair {seed}: Unifloral {theirs:,.0f}, podracer {ours:,.0f} critic steps/s, {ours / theirs:.2f}x")
    print(f"median speed-up over {args.pairs} pairs: {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
