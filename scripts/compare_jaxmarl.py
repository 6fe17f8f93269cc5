"""Side-by-side speed and return against JaxMARL's IPPO (de Witt et al. 2020) on its MPE simple_spread_v3.

JaxMARL (github.com/FLAIROx/JaxMARL) is not a dependency of podracer: point
`--jaxmarl` at a checkout, in an environment with the `jaxmarl` package
(which podracer's adapter steps too), distrax and matplotlib. Its
`baselines/IPPO/ippo_ff_mpe.py`, unmodified, trains with its
`config/ippo_ff_mpe.yaml` (16 environments x 128 steps, 4 epochs x 4
minibatches, Adam 2.5e-4 annealed, separate 64-64 tanh actor and critic
shared by the agents); podracer trains `configs/anakin_mpe_spread_ippo.py`,
which has the same settings, for the same whole updates (`TOTAL_TIMESTEPS`
counts environment steps, as podracer's `total_steps` does; 1e6 by default,
not the yaml's 1e7). Each timed run has a fresh process of its own, the two
sides taking turns (who goes first alternates from pair to pair); compilation
is left out on both sides: JaxMARL's program is compiled ahead of time, before
the call that is timed, and podracer's speed is read from its log records
(`purejaxrl_runs`). Both run XLA:CPU with `--cpu-threads` threads
(PJRT_NPROC; 1 by default, podracer's Anakin default; 0: one per core).
The script imports hydra, omegaconf and wandb for its command line and
logging: a stand-in serves for each that is missing, and a real wandb logs
nothing (`mode="disabled"`, the yaml's `WANDB_MODE`).

A run's return is on podracer's scale, the agents' mean episode return.
JaxMARL's `MPELogWrapper` logs each agent's return times the number of agents
(3, "as per the on-policy codebase"): its figure is the one it logs for its
last update (each actor's latest finished episode, averaged over the update's
128 steps and every actor: about its last 100 episodes) divided by 3, the
logged figure printed beside it. podracer's is the mean of its last 100
episodes.

What cannot be the same: podracer's agents that share parameters read their
one-hot id beside the observation, JaxMARL's only the observation; JaxMARL
treats the 25-step time limit as a termination, podracer bootstraps through
it. Details that are no setting: JaxMARL anneals the learning rate once per
update, podracer at every gradient step; JaxMARL's program calls back to the
host after every update (its `wandb.log`, which is part of the script and so
of its timing), podracer returns to the host once per dispatch of
`--updates-per-dispatch` updates (its config's 100).

`--algorithm vdn` or `qmix` runs JaxMARL's `baselines/QLearning/vdn_rnn.py` or
`qmix_rnn.py` instead, unmodified, with `config/alg/ql_rnn_mpe.yaml`'s settings
(8 environments x 26 steps, a buffer of 5,000 rollouts, RAdam 5e-3 annealed,
gamma 0.9; `Q_LEARNING_SETTINGS`), against `configs/anakin_mpe_spread_vdn.py`
or `anakin_mpe_spread_qmix.py`, which take them. Their return is the mean over
the last 13 updates' episodes (`q_learning_return`), on podracer's scale.

    python -m scripts.compare_jaxmarl --jaxmarl ~/JaxMARL [--algorithm ippo] [--pairs 5] [--total-steps 1e6]
"""

import argparse
import importlib
import json
import os
import statistics
import sys

from podracer.devices.xla_cpu import THREADS_ENV, child_environment
from scripts import purejaxrl_runs
from scripts.compare_purejaxrl import fresh_pairs

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "anakin_mpe_spread_ippo.py")
SCRIPT = os.path.join("baselines", "IPPO", "ippo_ff_mpe.py")
# JaxMARL's baselines/IPPO/config/ippo_ff_mpe.yaml (commit c793d09): what make_train reads, and WANDB_MODE (the seeds
# are the pairs', one a run).
SETTINGS = {
    "LR": 2.5e-4,
    "NUM_ENVS": 16,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 1e7,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "ACTIVATION": "tanh",
    "ENV_NAME": "MPE_simple_spread_v3",
    "ENV_KWARGS": {},
    "ANNEAL_LR": True,
    "WANDB_MODE": "disabled",
}
AGENTS = 3  # simple_spread_v3's at its default ENV_KWARGS: JaxMARL's logged returns are this many times podracer's.
SIDES = ("jaxmarl", "podracer")
# baselines/QLearning/config/alg/ql_rnn_mpe.yaml (commit c793d09), read by vdn_rnn.py and qmix_rnn.py. Their greedy
# tests during training are left out (podracer's configs evaluate none); WANDB_MODE "online" makes the program call
# back every update, as it does when it logs, and the stand-in's `log` keeps the records (`q_learning_return`).
Q_LEARNING_SETTINGS = {
    **{"TOTAL_TIMESTEPS": 1e7, "NUM_ENVS": 8, "NUM_STEPS": 26, "BUFFER_SIZE": 5000, "BUFFER_BATCH_SIZE": 32},
    **{"HIDDEN_SIZE": 64, "MIXER_EMBEDDING_DIM": 32, "MIXER_HYPERNET_HIDDEN_DIM": 128, "MIXER_INIT_SCALE": 0.001},
    **{"EPS_START": 1.0, "EPS_FINISH": 0.05, "EPS_DECAY": 0.1, "MAX_GRAD_NORM": 25, "TARGET_UPDATE_INTERVAL": 200},
    **{"TAU": 1.0, "NUM_EPOCHS": 1, "LR": 0.005, "LEARNING_STARTS": 10000, "LR_LINEAR_DECAY": True, "GAMMA": 0.9},
    **{"ENV_NAME": "MPE_simple_spread_v3", "ENV_KWARGS": {}, "TEST_DURING_TRAINING": False, "WANDB_MODE": "online"},
    **{"TEST_INTERVAL": 0.05, "TEST_NUM_STEPS": 30, "TEST_NUM_ENVS": 512},  # Read to make the unused test batch.
}
ALGORITHMS = {  # --algorithm: (podracer's config, JaxMARL's script, its settings).
    "ippo": (CONFIG, SCRIPT, SETTINGS),
    "vdn": (CONFIG.replace("ippo", "vdn"), os.path.join("baselines", "QLearning", "vdn_rnn.py"), Q_LEARNING_SETTINGS),
    "qmix": (
        CONFIG.replace("ippo", "qmix"),
        os.path.join("baselines", "QLearning", "qmix_rnn.py"),
        Q_LEARNING_SETTINGS,
    ),
}
LOGGED: list = []  # A Q-learning script's records, one an update, as its wandb.log is handed them.


def plan(total_steps: float, updates_per_dispatch: int, num_envs: int = 16, cpu_threads: int = 1, algorithm="ippo"):
    """(podracer's config, JaxMARL's settings, steps per run): the same hyperparameters and whole updates.

    `num_envs` environments on both sides (the yaml's 16), every other
    setting the yaml's, so minibatches grow with the batch. podracer's config
    has the yaml's values already; this sets the run's length, its
    environments, its dispatches and its XLA:CPU threads (`cpu_threads`).
    """
    from podracer import load_config

    config_file, _, settings = ALGORITHMS[algorithm]
    batch = num_envs * settings["NUM_STEPS"]
    steps = int(total_steps) // batch * batch  # JaxMARL's NUM_UPDATES whole updates.
    if steps == 0:
        raise ValueError(f"--total-steps: fewer than one update of {batch:,} steps")
    overrides = {
        "total_steps": steps,
        "num_envs": num_envs,
        "updates_per_dispatch": updates_per_dispatch,
        "cpu_threads": cpu_threads,
    }
    return load_config(config_file, overrides), {**settings, "NUM_ENVS": num_envs, "TOTAL_TIMESTEPS": steps}, steps


def jaxmarl_make_train(checkout: str, algorithm: str = "ippo"):
    """`make_train` of JaxMARL's `baselines/IPPO/ippo_ff_mpe.py` (or the `--algorithm`'s script) from a checkout,
    unmodified, its logging disabled (a Q-learning script's records kept in `LOGGED`; its `make_train(config, env)`
    given the environment its own `env_from_config` makes).

    Its environments come from the installed `jaxmarl` package (the
    checkout's own is not put on the path), the one podracer's adapter steps.
    """
    purejaxrl_runs.stand_in_missing(("hydra", "omegaconf", "wandb"))
    script = ALGORITHMS[algorithm][1]
    sys.path.insert(0, os.path.join(os.path.abspath(checkout), os.path.dirname(script)))
    trainer = importlib.import_module(os.path.splitext(os.path.basename(script))[0])
    if algorithm == "ippo":
        trainer.wandb.init(mode=SETTINGS["WANDB_MODE"])  # Its program logs every update; wandb.log needs a run.
        return trainer.make_train
    trainer.wandb.log = LOGGED.append
    return lambda settings: trainer.make_train(settings, trainer.env_from_config(dict(settings))[0])


def jaxmarl_return(outputs: dict) -> float:
    """A JaxMARL run's final return on podracer's scale: what it logs for its last update, over the agents."""
    return float(outputs["metrics"]["returned_episode_returns"][-1]) / AGENTS


def q_learning_return(logged: list, updates: int = 13) -> float:
    """A Q-learning script's final return on podracer's scale: over its last `updates` updates (13 x 8 environments,
    about 100 episodes), each update's mean logged return over the fraction of its steps that ended an episode (the
    log wrapper keeps a return only from the step its episode ended), over the agents."""
    recent = logged[-updates:]
    return statistics.fmean(float(m["returned_episode_returns"] / m["returned_episode"]) for m in recent) / AGENTS


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jaxmarl", required=True, help="a JaxMARL checkout (the folder holding baselines/)")
    parser.add_argument("--algorithm", choices=sorted(ALGORITHMS), default="ippo", help="JaxMARL's baseline to run")
    parser.add_argument("--pairs", type=int, default=5, help="alternating runs of each")
    parser.add_argument("--total-steps", type=float, default=1e6, help="environment steps per run in both")
    parser.add_argument("--num-envs", type=int, default=None, help="environments in both (the yaml's by default)")
    parser.add_argument("--cpu-threads", type=int, default=1, help="XLA:CPU threads for both (0: one per core)")
    parser.add_argument("--updates-per-dispatch", type=int, default=100, help="podracer's updates per dispatch")
    parser.add_argument("--side", choices=SIDES, default=None, help=argparse.SUPPRESS)  # One fresh process's run.
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def plan_arguments(args: argparse.Namespace) -> tuple:
    """`plan`'s arguments from the command line's: the algorithm's yaml's environments unless `--num-envs`."""
    num_envs = args.num_envs or ALGORITHMS[args.algorithm][2]["NUM_ENVS"]
    return args.total_steps, args.updates_per_dispatch, num_envs, args.cpu_threads, args.algorithm


def one_run(args: argparse.Namespace) -> dict:
    """This process's timed run of `args.side` on `args.seed`."""
    config, settings, steps = plan(*plan_arguments(args))
    if args.side == "jaxmarl":
        make_train = jaxmarl_make_train(args.jaxmarl, args.algorithm)
        final = jaxmarl_return if args.algorithm == "ippo" else lambda _: q_learning_return(LOGGED)
        rate, final_return = purejaxrl_runs.purejaxrl_runner(make_train, settings, steps, final)(args.seed)
        return {"steps_per_second": rate, "final_return": final_return}
    rate, final_return = purejaxrl_runs.podracer_runner(config)(args.seed)
    return {"steps_per_second": rate, "final_return": final_return}


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    script = ALGORITHMS[args.algorithm][1]
    if not os.path.isfile(os.path.join(args.jaxmarl, script)):
        parser.error(f"--jaxmarl: no {script} under {args.jaxmarl}; pass the checkout's top folder")
    try:
        _, settings, steps = plan(*plan_arguments(args))
    except ValueError as error:
        parser.error(str(error))
    if args.side is not None:
        print("RESULT " + json.dumps({"side": args.side, **one_run(args)}))
        return 0
    env = child_environment(threads=args.cpu_threads)
    threads = env.get(THREADS_ENV, "one per core")  # Unset: PJRT's default.
    print(
        f"MPE simple_spread_v3 {args.algorithm}: {settings['NUM_ENVS']} environments, {steps:,} steps per run, "
        f"XLA:CPU threads={threads}, fresh processes; returns are the agents' mean",
        flush=True,
    )
    results = fresh_pairs("scripts.compare_jaxmarl", argv or sys.argv[1:], args.pairs, SIDES, env)
    for seed in range(args.pairs):
        theirs, ours = results[seed]["jaxmarl"], results[seed]["podracer"]
        print(
            f"seed {seed}: JaxMARL {theirs['steps_per_second']:>8,.0f} steps/s (return {theirs['final_return']:6.2f}, "
            f"logged x{AGENTS} {theirs['final_return'] * AGENTS:6.2f})   "
            f"podracer {ours['steps_per_second']:>8,.0f} steps/s (return {ours['final_return']:6.2f})   "
            f"speed-up {ours['steps_per_second'] / theirs['steps_per_second']:.2f}"
        )
    speed_ups = [
        results[s]["podracer"]["steps_per_second"] / results[s]["jaxmarl"]["steps_per_second"] for s in results
    ]
    print(f"median speed-up over {args.pairs} pairs: {statistics.median(speed_ups):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
