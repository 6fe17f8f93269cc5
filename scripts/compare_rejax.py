"""Side-by-side speed and return against rejax's SAC on gymnax's Pendulum-v1 and its IQN on gymnax's CartPole-v1.

rejax (github.com/keraJLi/rejax) is not a dependency of podracer: point
`--rejax` at a folder holding its `rejax` package (e.g. `pip install --no-deps
--target /tmp/rejax-site rejax==0.1.3`), in an environment with gymnax, flax,
optax and distrax. rejax trains `SAC` with its Pendulum settings
(`configs/gymnax/pendulum.yaml`, `sac`), or with `--algorithm iqn` its `IQN`
with its CartPole settings (`configs/gymnax/cartpole.yaml`, `iqn`); podracer
trains `configs/anakin_pendulum_sac.py` or `configs/anakin_cartpole_iqn.py`
on the same gymnax task with its fields set to the same values (`plan`), for
the same environment steps. Each timed run has a fresh process
of its own, the two sides taking turns (who goes first alternates from pair
to pair); compilation is left out on both sides: rejax's program is compiled
ahead of time, before the call that is timed, and podracer's speed is read
from its log records (`purejaxrl_runs`). Both run XLA:CPU with
`--cpu-threads` threads (PJRT_NPROC; 1 by default, podracer's Anakin default;
0: one per core); `--cpu-devices 2` runs podracer's Anakin over two XLA:CPU
devices (`plan` says how the work is split).

A run's return is that of its final policy, measured the same way on both
sides, outside the timing: rejax's own evaluation (its `eval_callback`: 128
episodes, actions sampled from the policy) and podracer's (`evaluation`: 128
episodes, sampled, `greedy=False`). podracer's mean over its last 100
training episodes is printed too; at 10,000 steps of one environment those
are all 50 of the run's episodes, the first ones random.

What cannot be the same: podracer's SAC has no observation normalisation, so
rejax's `normalize_observations` is off (on, rejax learns as well and runs
slower); rejax clips no gradients (`max_grad_norm` inf), podracer's clip is
set out of reach (1e10). The algorithms differ in details that are no
setting: rejax samples each batch without replacement, podracer's buffer with
it; rejax updates the actor, then the critics (with the new actor's next
actions), then the temperature, podracer the critics first; rejax treats
Pendulum's 200-step time limit as a termination (gymnax 0.0.x's single
`done`, given to it by `OneDonePendulum`), podracer bootstraps through it;
rejax's networks start from flax's default initialisers and its log-std is
clipped to [-10, 2], podracer's are orthogonal and [-5, 2].

IQN: rejax's network is podracer's `iqn` with a 64-64 swish torso, a cosine
embedding of 64 and one hidden head layer of 64 (`IQN_OVERRIDES`). rejax
chooses actions (acting and the double-Q bootstrap) by the mean of 32
sampled quantiles, podracer by that of 32 midpoint fractions; rejax treats
CartPole's 500-step time limit as a termination, podracer bootstraps through
it; its evaluation acts with epsilon 0.005, podracer's greedily.

    python -m scripts.compare_rejax --rejax /tmp/rejax-site [--algorithm iqn] [--pairs 5] [--total-steps N]
"""

import argparse
import json
import os
import statistics
import sys
import time

from podracer.devices.xla_cpu import THREADS_ENV, child_environment
from scripts import purejaxrl_runs
from scripts.compare_purejaxrl import fresh_pairs

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")
# rejax's configs/gymnax/pendulum.yaml, `sac` (v0.1.3), observation normalisation off (see above).
SAC_SETTINGS = {
    "agent_kwargs": {"activation": "swish"},
    "num_envs": 1,
    "buffer_size": 10_000,
    "fill_buffer": 256,
    "batch_size": 256,
    "learning_rate": 0.01,
    "num_epochs": 1,
    "total_timesteps": 10_000,
    "eval_freq": 100,
    "gamma": 0.99,
    "polyak": 0.98,
    "target_entropy_ratio": None,
    "normalize_observations": False,
}
# rejax's configs/gymnax/cartpole.yaml, `iqn` (v0.1.3).
IQN_SETTINGS = {
    "agent_kwargs": {"activation": "swish"},
    "num_envs": 1,
    "buffer_size": 100_000,
    "fill_buffer": 1000,
    "batch_size": 1,
    "num_tau_samples": 64,
    "num_tau_prime_samples": 64,
    "learning_rate": 0.0003,
    "num_epochs": 1,
    "total_timesteps": 100_000,
    "eval_freq": 5000,
    "target_update_freq": 1,
    "polyak": 0.99,
    "kappa": 1.0,
    "eps_start": 1,
    "eps_end": 0.01,
    "exploration_fraction": 0.5,
    "gamma": 0.99,
    "normalize_observations": False,
}
# Each algorithm: (podracer's config, rejax's settings, the gymnax environment, podracer's own fields).
ALGORITHMS = {
    "sac": (
        "anakin_pendulum_sac.py",
        SAC_SETTINGS,
        ("classic_control", "Pendulum"),
        {"agent.initial_temperature": 1.0, "agent.target_entropy": None},
    ),
    "iqn": (
        "anakin_cartpole_iqn.py",
        IQN_SETTINGS,
        ("classic_control", "CartPole"),
        {
            "env.name": "gymnax:CartPole-v1",
            "network.head_hidden_sizes": (64,),
            "agent.n_step": 1,
            "agent.double_q": True,
            "agent.target_update_period": 1,
            "agent.num_atoms": 64,
            "agent.acting_quantiles": 32,
            "agent.embedding_size": 64,
            "agent.kappa": 1.0,
            "agent.epsilon_start": 1.0,
            "agent.epsilon_end": 0.01,
            "agent.epsilon_fraction": 0.5,
        },
    ),
}
EVAL_EPISODES = 128  # rejax's `eval_callback` plays 128 episodes.
SIDES = ("rejax", "podracer")


def plan(algorithm: str, total_steps: int, updates_per_dispatch: int, cpu_devices: int = 1, num_envs: int = 1):
    """(podracer's config, rejax's settings, steps per run): the same environment steps and hyperparameters.

    `num_envs` environments on both sides (rejax's settings have 1),
    with as many gradient steps per update (rejax's `num_epochs`), so that
    there is one gradient step per environment step whatever the number.

    rejax's fields map onto podracer's: `num_envs` environments stepped once
    per update (`unroll_length` 1), `num_epochs` gradient steps per update
    (`replay_ratio`) on `batch_size` transitions, `learning_rate` for the
    actor's, the critics' and the temperature's Adam (optax's eps, 1e-8),
    `1 - polyak` as `target_tau`, the `hidden_layer_sizes` of both networks
    (rejax's default, 64-64) and their activation. rejax learns once more
    than `fill_buffer` steps are in, podracer once `min_replay_size` are. On
    `cpu_devices` > 1 each device steps its own environments into its own
    buffer and samples its share of the batch, gradients averaged, so the
    environments, buffer, batch and first sampled update are split over the
    devices and the gradient steps per environment step stay rejax's.
    """
    from podracer import load_config

    config_file, defaults, _, own = ALGORITHMS[algorithm]
    settings = {**defaults, "num_envs": num_envs, "num_epochs": defaults["num_epochs"] * num_envs}
    steps = int(total_steps) // num_envs * num_envs
    if steps <= settings["fill_buffer"]:
        raise ValueError(f"--total-steps: no gradient step before {settings['fill_buffer']:,} steps are in the buffer")
    envs = max(num_envs, cpu_devices)  # At least one environment per device.
    if envs % cpu_devices or envs % num_envs:
        raise ValueError(f"--num-envs {num_envs}: a multiple or a divisor of --cpu-devices {cpu_devices}")
    overrides = {
        "total_steps": steps,
        "num_envs": envs,
        "unroll_length": 1,
        "cpu_devices": cpu_devices,
        "num_devices": cpu_devices,
        "updates_per_dispatch": updates_per_dispatch,
        "network.hidden_sizes": (64, 64),
        "network.activation": settings["agent_kwargs"]["activation"],
        "optimizer.learning_rate": settings["learning_rate"],
        "optimizer.eps": 1e-8,
        "optimizer.max_grad_norm": 1e10,
        "agent.gamma": settings["gamma"],
        "agent.target_tau": 1.0 - settings["polyak"],
        "agent.replay_ratio": settings["num_epochs"] * envs // num_envs,
        "agent.batch_size": max(1, settings["batch_size"] // cpu_devices),
        "agent.buffer_size": settings["buffer_size"] // cpu_devices,
        "agent.min_replay_size": (settings["fill_buffer"] + 1) // cpu_devices,
        **own,
        "evaluation.every_steps": steps,
        "evaluation.episodes": EVAL_EPISODES,
        "evaluation.greedy": False,
    }
    return load_config(os.path.join(CONFIGS, config_file), overrides), {**settings, "total_timesteps": steps}, steps


def one_done(module: str, name: str):
    """gymnax's environment `name` whose `step` returns gymnax 0.0.x's `(obs, state, reward, done, info)`, which rejax
    0.1.3 unpacks: on gymnax 1.0 a step returns terminated and truncated apart, and `done` is their union."""
    import importlib

    base = getattr(importlib.import_module(f"gymnax.environments.{module}"), name)

    class OneDone(base):
        def step(self, key, state, action, params=None):
            observation, state, reward, terminated, truncated, info = super().step(key, state, action, params)
            return observation, state, reward, terminated | truncated, info

    return OneDone()


def run_rejax(algorithm: str, site: str, settings: dict, steps: int, seed: int) -> tuple[float, float]:
    """(steps per second, final return) of one rejax run, compiled before the call that is timed, which evaluates
    nothing; its own evaluation of the final policy follows, untimed (training does not depend on it)."""
    import jax
    import jax.numpy as jnp

    sys.path.insert(0, os.path.abspath(site))
    import rejax

    env = one_done(*ALGORITHMS[algorithm][2])
    algo = getattr(rejax, algorithm.upper()).create(
        env=env, env_params=env.default_params, skip_initial_evaluation=True, **settings
    )
    timed = algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))
    compiled = jax.jit(timed.train).lower(jax.random.PRNGKey(seed)).compile()
    start = time.perf_counter()
    train_state, _ = jax.block_until_ready(compiled(jax.random.PRNGKey(seed)))
    rate = steps / (time.perf_counter() - start)
    _, returns = algo.eval_callback(algo, train_state, train_state.rng)
    return rate, float(jnp.mean(returns))


def run_podracer(config, seed: int) -> tuple[float, float, float]:
    """(steps per second, final return of its evaluation, mean of its last 100 training episodes) of one run."""
    import podracer
    from podracer.run.contract import recent_return

    config.seed = seed
    history = podracer.train(config).history
    return purejaxrl_runs.podracer_rate(history), history[-1]["eval_mean_return"], recent_return(history)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rejax", required=True, help="a folder holding rejax's package (the folder holding rejax/)")
    parser.add_argument("--algorithm", choices=sorted(ALGORITHMS), default="sac")
    parser.add_argument("--pairs", type=int, default=5, help="alternating runs of each")
    parser.add_argument("--total-steps", type=int, default=None, help="environment steps (rejax's settings')")
    parser.add_argument("--cpu-threads", type=int, default=1, help="XLA:CPU threads for both (0: one per core)")
    parser.add_argument("--cpu-devices", type=int, default=1, help="XLA:CPU devices podracer's Anakin runs over")
    parser.add_argument("--num-envs", type=int, default=1, help="environments on both sides, a gradient step each")
    parser.add_argument("--updates-per-dispatch", type=int, default=1000, help="podracer's updates per dispatch")
    parser.add_argument("--side", choices=SIDES, default=None, help=argparse.SUPPRESS)  # One fresh process's run.
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def plan_of(args: argparse.Namespace):
    """`plan` for the command line's algorithm and settings (`--total-steps` by default rejax's)."""
    total_steps = args.total_steps or ALGORITHMS[args.algorithm][1]["total_timesteps"]
    return plan(args.algorithm, total_steps, args.updates_per_dispatch, args.cpu_devices, args.num_envs)


def one_run(args: argparse.Namespace) -> dict:
    """This process's timed run of `args.side` on `args.seed`."""
    config, settings, steps = plan_of(args)
    if args.side == "rejax":
        rate, final_return = run_rejax(args.algorithm, args.rejax, settings, steps, args.seed)
        return {"steps_per_second": rate, "final_return": final_return}
    rate, final_return, training_return = run_podracer(config, args.seed)
    return {"steps_per_second": rate, "final_return": final_return, "training_return": training_return}


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.rejax, "rejax", "algos", "sac.py")):
        parser.error(f"--rejax: no rejax/algos/sac.py under {args.rejax}; pass the folder that holds the package")
    if args.side is not None:
        print("RESULT " + json.dumps({"side": args.side, **one_run(args)}))
        return 0
    _, _, steps = plan_of(args)
    env = child_environment(threads=args.cpu_threads, devices=0)  # podracer's `cpu_devices` decides; rejax: the first.
    threads = env.get(THREADS_ENV, "one per core")  # Unset: PJRT's default.
    print(
        f"{ALGORITHMS[args.algorithm][2][1]}-v1 {args.algorithm.upper()}: {steps:,} steps per run, XLA:CPU threads={threads}, "
        f"{args.num_envs} environment(s), podracer on {args.cpu_devices} XLA:CPU device(s), fresh processes",
        flush=True,
    )
    results = fresh_pairs("scripts.compare_rejax", argv or sys.argv[1:], args.pairs, SIDES, env)
    for seed in range(args.pairs):
        theirs, ours = results[seed]["rejax"], results[seed]["podracer"]
        print(
            f"seed {seed}: rejax {theirs['steps_per_second']:>7,.0f} steps/s (return {theirs['final_return']:7.1f})   "
            f"podracer {ours['steps_per_second']:>7,.0f} steps/s (return {ours['final_return']:7.1f}, last 100 "
            f"training episodes {ours['training_return']:7.1f})   "
            f"speed-up {ours['steps_per_second'] / theirs['steps_per_second']:.2f}"
        )
    speed_ups = [results[s]["podracer"]["steps_per_second"] / results[s]["rejax"]["steps_per_second"] for s in results]
    print(f"median speed-up over {args.pairs} pairs: {statistics.median(speed_ups):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
