"""A config fuzzer: hundreds of wrong configs through `podracer train`, each one clear line before anything compiles.

The cases are enumerated, not drawn at random, from every file under configs/
(Anakin and Sebulba alike): wrong types, values out of range, unknown names,
device splits the machine cannot give, environment options the environment
refuses, and malformed tuples. Most are `--config.FIELD=VALUE` overrides; what
a command line cannot express (a misspelt field in a config file, a None or a
bool where a number belongs) comes from config files this test writes.

Every case must exit with status 2 and print exactly one line,
`podracer train: error: config.FIELD: PROBLEM; FIX`, naming the field the
case got wrong and saying how to fix it; it must create no workdir, and never
reach `jax.stages.Lowered.compile`, the step after every check in both
architectures: `tests/programs/run_cli_cases.py --forbid-compile` stops a run
there, and a valid config among the cases shows that it does. The cases run
in one interpreter per device count (forced CPU devices): 2, and 4 for the
splits that need more, so JAX starts twice in all. (A third interpreter with
one device re-checked the same "ids past the last device" code on 4 cases,
for a JAX start and the imports of both architectures, about 5 s of CPU.)
"""

import dataclasses
import glob
import json
import os
import re
from collections import Counter

import pytest

from podracer.config import loading
from tests.helpers import ROOT, last_json_line, run_module


@dataclasses.dataclass(frozen=True)
class Case:
    category: str
    config: str  # A file under configs/ (no .py), or "written:NAME", a file of WRITTEN this test writes.
    args: tuple[str, ...]  # Overrides, each --config.FIELD=VALUE.
    field: str  # The field the error must name (after "config.").
    devices: int = 2  # CPU devices the run sees.


CATEGORIES = ("wrong type", "out of range", "unknown name", "device split", "environment option", "malformed tuple")
LAMBDA = {"actor_critic": "td_lambda", "ppo": "gae_lambda", "impala": "vtrace_lambda"}
# The actor-critic configs: the cases below read their fields (DQN's bad input is tested in tests/agents/test_dqn.py).
BASES = {
    os.path.basename(path)[: -len(".py")]: config
    for path in sorted(glob.glob(os.path.join(ROOT, "configs", "*.py")))
    if (config := loading.load(path)).agent.name in LAMBDA
}
ANAKIN = [name for name, config in BASES.items() if config.architecture == "anakin"]
SEBULBA = [name for name, config in BASES.items() if config.architecture == "sebulba"]
# Bases whose get_config() returns an unlocked config (the others load() another file, which locks it).
UNLOCKED = [name for name in BASES if name not in ("sebulba_breakout_impala", "sebulba_gymnasium_cartpole")]


def agent(base: str) -> str:
    return BASES[base].agent.name


def architecture(base: str) -> str:
    return BASES[base].architecture


def rotate(items: list, start: int, count: int) -> list:
    """`count` items of `items` from position `start` on, wrapping around: spreads fields over the bases."""
    return [items[(start + i) % len(items)] for i in range(count)]


def override(field: str, value) -> str:
    return f"--config.{field}={value}"


# ---------------------------------------------------------------------------------------------
# Wrong types: text that cannot be read as the field's type, and values of another type from config files.

COMMON_INTEGERS = ["seed", "total_steps", "unroll_length", "replicas", "cpu_threads", "checkpoint.every_updates"]
INTEGERS = {
    "anakin": [*COMMON_INTEGERS, "checkpoint.keep", "num_envs", "num_devices", "updates_per_dispatch", "log_records"],
    "sebulba": [
        *COMMON_INTEGERS,
        "envs_per_thread",
        "actor_threads_per_device",
        "learner_minibatches",
        "queue_size",
        "log_every_updates",
        "policy_lag",
    ],
}
NOT_INTEGERS = ["many", "2.5", "(1, 2)", "[64]", "True", "1e-3", "None", "0x10", "", "six"]
NOT_NUMBERS = ["fast", "(0.5,)", "[0.1, 0.2]", "None", "0.1.2", "1/2", "", "one"]
NOT_BOOLEANS = ["maybe", "2", "0.5", "yes", "None", "(True,)"]
NOT_TUPLES = ["64", "abc", "{1: 2}", "None", "1.5", '"64"']
NOT_STRINGS = ["[1, 2]", "3", "None", "('adam',)", "{}", "1.5"]  # Read as text, then refused as a name.


def numbers(base: str) -> list[str]:
    own = [f"agent.{LAMBDA[agent(base)]}"]
    if architecture(base) == "sebulba":
        own.append("stall_timeout_seconds")
    return [
        "agent.gamma",
        "agent.value_cost",
        "agent.entropy_cost",
        "agent.reward_clip",
        "optimizer.learning_rate",
        "optimizer.max_grad_norm",
        "optimizer.eps",
        "checkpoint.every_minutes",
        *own,
    ]


def booleans(base: str) -> list[str]:
    own = ["agent.clip_value_loss", "agent.normalize_advantages"] if agent(base) == "ppo" else []
    return ["network.shared_torso", "optimizer.anneal_lr", "agent.normalize_observations", "agent.scale_rewards", *own]


def tuples(base: str) -> list[str]:
    own = ["actor_device_ids", "learner_device_ids"] if architecture(base) == "sebulba" else []
    return ["network.hidden_sizes", "network.channels", *own]


NAMES = ["env.name", "agent.name", "network.torso", "network.activation", "optimizer.name", "resume", "architecture"]

# Config files that set a value of the wrong type, which ml_collections lets through: None (after which a field
# takes any type), a bool where a whole number belongs, a list for a tuple. NAME: (base, lines, field).
WRITTEN = {
    "seed_none": ("anakin_catch", ["config.seed = None"], "seed"),
    "gamma_text": ("anakin_cartpole_ppo", ["config.agent.gamma = None", "config.agent.gamma = '0.99'"], "agent.gamma"),
    "num_envs_float": ("anakin_gridworld", ["config.num_envs = None", "config.num_envs = 64.0"], "num_envs"),
    "num_envs_bool": ("anakin_pendulum_ppo", ["config.num_envs = True"], "num_envs"),
    "policy_lag_bool": ("sebulba_cartpole_impala", ["config.policy_lag = True"], "policy_lag"),
    "envs_per_thread_bool": ("sebulba_cartpole_ppo", ["config.envs_per_thread = False"], "envs_per_thread"),
    "rate_text": (
        "sebulba_halfcheetah_ppo",
        ["config.optimizer.learning_rate = None", "config.optimizer.learning_rate = '3e-4'"],
        "optimizer.learning_rate",
    ),
    "torso_none": ("sebulba_pong_impala", ["config.network.torso = None"], "network.torso"),
    "env_name_none": ("anakin_minatar_breakout_ppo", ["config.env.name = None"], "env.name"),
    "shared_torso_int": (
        "anakin_brax_ppo",
        ["config.network.shared_torso = None", "config.network.shared_torso = 1"],
        "network.shared_torso",
    ),
    "hidden_sizes_text": (
        "anakin_catch",
        ["config.network.hidden_sizes = None", "config.network.hidden_sizes = '64, 64'"],
        "network.hidden_sizes",
    ),
    "actor_ids_list": (
        "sebulba_cartpole_impala",
        ["config.actor_device_ids = None", "config.actor_device_ids = [0, 'x']"],
        "actor_device_ids",
    ),
    "network_none": ("anakin_gridworld", ["config.network = None"], "network"),
    "kwargs_none": ("anakin_catch", ["config.env.kwargs = None"], "env.kwargs"),
    "agent_dict": ("sebulba_cartpole_ppo", ["config.agent = {'name': 'ppo'}"], "agent.name"),
    # Unknown names in a config file: a misspelt field is a new one there, until load() locks the config.
    "typo_top": ("anakin_catch", ["config.num_env = 32"], "num_env"),
    "typo_agent": ("anakin_gridworld", ["config.agent.gama = 0.9"], "agent.gama"),
    "typo_network": ("sebulba_cartpole_impala", ["config.network.hiden_sizes = (32,)"], "network.hiden_sizes"),
    "typo_optimizer": ("anakin_cartpole_ppo", ["config.optimizer.learning_rat = 1e-3"], "optimizer.learning_rat"),
    "typo_checkpoint": ("sebulba_halfcheetah_ppo", ["config.checkpoint.evry_minutes = 5.0"], "checkpoint.evry_minutes"),
    "typo_group": ("anakin_pendulum_ppo", ["config.netwrok = ConfigDict({'torso': 'mlp'})"], "netwrok"),
    "typo_sebulba": ("sebulba_pong_impala", ["config.num_envs = 64"], "num_envs"),  # Anakin's field.
    "typo_anakin": ("anakin_brax_ppo", ["config.envs_per_thread = 16"], "envs_per_thread"),  # Sebulba's.
    "typo_env": ("anakin_minatar_breakout_ppo", ["config.env.nmae = 'catch'"], "env.nmae"),
    "missing_field": ("sebulba_cartpole_ppo", ["del config.agent['gae_lambda']"], "agent.name"),
    "architecture_in_file": ("anakin_catch", ["config.architecture = 'sebulba'"], "architecture"),
}
WRITTEN_CATEGORY = {name: "unknown name" for name in WRITTEN if name.startswith(("typo", "missing", "architecture"))}


def wrong_type_cases() -> list[Case]:
    cases = []
    for b, base in enumerate(BASES):
        integers = INTEGERS[architecture(base)]
        for i, field in enumerate(rotate(integers, 3 * b, 3)):
            cases.append(Case("wrong type", base, (override(field, NOT_INTEGERS[(b + i) % len(NOT_INTEGERS)]),), field))
        for i, field in enumerate(rotate(numbers(base), 2 * b, 2)):
            cases.append(Case("wrong type", base, (override(field, NOT_NUMBERS[(b + i) % len(NOT_NUMBERS)]),), field))
        for field in rotate(booleans(base), b, 1):
            cases.append(Case("wrong type", base, (override(field, NOT_BOOLEANS[b % len(NOT_BOOLEANS)]),), field))
        for field in rotate(tuples(base), b, 1):
            cases.append(Case("wrong type", base, (override(field, NOT_TUPLES[b % len(NOT_TUPLES)]),), field))
        for field in rotate(NAMES, b, 1):
            cases.append(Case("wrong type", base, (override(field, NOT_STRINGS[b % len(NOT_STRINGS)]),), field))
    for name, (_, _, field) in WRITTEN.items():
        cases.append(Case(WRITTEN_CATEGORY.get(name, "wrong type"), f"written:{name}", (), field))
    return cases


# ---------------------------------------------------------------------------------------------
# Values out of range.

# (field or "LAMBDA" for the agent's own lambda, values, which bases). Each value goes to one base, in turn.
ALL = list(BASES)
PPO = [base for base in BASES if agent(base) == "ppo"]
IMPALA = [base for base in BASES if agent(base) == "impala"]
OUT_OF_RANGE = [
    ("agent.gamma", ["-0.1", "1.0001", "-inf", "nan", "2"], ALL),
    ("LAMBDA", ["1.01", "-0.5", "inf"], ALL),
    ("agent.value_cost", ["-0.5", "-inf"], ALL),
    ("agent.entropy_cost", ["-0.01", "nan"], ALL),
    ("agent.reward_clip", ["-1.0", "inf"], ALL),
    ("optimizer.learning_rate", ["0", "-1", "inf", "nan"], ALL),
    ("optimizer.max_grad_norm", ["0", "-0.5"], ALL),
    ("optimizer.eps", ["-1e-8", "nan"], ALL),
    ("checkpoint.every_minutes", ["-1", "inf"], ALL),
    ("checkpoint.keep", ["0", "-3"], ALL),
    ("checkpoint.every_updates", ["-1"], ALL),
    ("seed", ["-1", "2147483648", "1e20"], ALL),
    ("total_steps", ["0", "-1000"], ALL),
    ("replicas", ["0", "-1"], ALL),
    ("cpu_threads", ["-1", "-8"], ALL),
    ("unroll_length", ["0", "-16", "1e11"], ALL),
    ("network.num_blocks", ["-1"], ALL),
    ("network.hidden_size", ["0", "-256"], ALL),
    ("num_envs", ["0", "-64", "1e10"], ANAKIN),
    ("num_devices", ["-1", "-2"], ANAKIN),
    ("updates_per_dispatch", ["-1", "-10"], ANAKIN),
    ("log_records", ["0", "-100"], ANAKIN),
    ("envs_per_thread", ["0", "-16", "3e9"], SEBULBA),
    ("actor_threads_per_device", ["0", "-1"], SEBULBA),
    ("learner_minibatches", ["0", "-2"], SEBULBA),
    ("queue_size", ["0", "-1"], SEBULBA),
    ("log_every_updates", ["0"], SEBULBA),
    ("stall_timeout_seconds", ["0", "-5", "inf"], SEBULBA),
    ("policy_lag", ["2", "-1"], SEBULBA),
    ("env_stepping", ["jit", "Compiled", "python"], SEBULBA),
    ("seed", ["2147483647"], SEBULBA),  # Environment i is seeded seed + i: all but the first pass int32.
    ("agent.clip_epsilon", ["0", "-0.2", "1.5", "nan"], PPO),
    ("agent.num_epochs", ["0", "-4"], PPO),
    ("agent.num_minibatches", ["0", "-1"], PPO),
    ("agent.clip_rho_threshold", ["0", "-1", "inf"], IMPALA),
    ("agent.clip_pg_rho_threshold", ["0", "-2"], IMPALA),
]


def out_of_range_cases() -> list[Case]:
    # The two examples on every config file, then each value of OUT_OF_RANGE on one base, in turn.
    cases = [Case("out of range", base, (override("agent.gamma", "1.5"),), "agent.gamma") for base in BASES]
    cases += [
        Case("out of range", base, (override("optimizer.learning_rate", "-3e-4"),), "optimizer.learning_rate")
        for base in BASES
    ]
    turn = 0
    for field, values, bases in OUT_OF_RANGE:
        for value in values:
            base = bases[turn % len(bases)]
            turn += 1
            name = f"agent.{LAMBDA[agent(base)]}" if field == "LAMBDA" else field
            cases.append(Case("out of range", base, (override(name, value),), name))
    return cases


# ---------------------------------------------------------------------------------------------
# Unknown names: misspelt fields, agents, environments, torsos, activations, optimisers, modes.

TOP_LEVEL_TYPOS = ["num_env", "unroll_lenght", "total_step", "seeds", "num_device", "envs_per_threads", "polcy_lag"]
NESTED_TYPOS = [
    "agent.gama",
    "agent.entropy",
    "network.hiden_sizes",
    "network.activaton",
    "optimizer.learning_rat",
    "optimizer.lr",
    "checkpoint.evry_minutes",
    "env.nme",
    "netwrok.torso",
    "optimiser.name",
    "agent.gamma.value",
]
UNKNOWN_VALUES = [
    ("agent.name", ["sarsa", "PPO", "a2c", "ppo ", "actor-critic"]),
    ("network.torso", ["vit", "resnet", "NatureCNN", "mlp2", ""]),
    ("network.activation", ["gelu", "sigmoid", "Tanh"]),
    ("optimizer.name", ["adagrad", "adamw", "SGD"]),
    ("resume", ["sometimes", "always", "Auto"]),
    ("architecture", ["podracer", "anakin2", "Sebulba"]),
    ("logger.wandb.mode", ["cloud", "Offline"]),
]
UNKNOWN_ENVIRONMENTS = {
    "anakin": [
        "pong",
        "Catch",
        "CartPole-v1",  # An envpool task: Sebulba's.
        "gymnasium:CartPole-v1",
        "foo:bar",
        ":catch",
        "",
        "gymnax:Breakout-MinAtr",
        "gymnax:",
        "brax:nope",
    ],
    "sebulba": [
        "catch",  # A pure-JAX environment: Anakin's.
        "cartpole-v1",
        "Pong-v4",
        "envpool:Pong-v5",
        "gymnax:CartPole-v1",
        "brax:ant",
        "gymnasium:Nope-v0",
        "gymnasium:CartPole-v9",
        "",
    ],
}


def unknown_name_cases() -> list[Case]:
    cases = []
    for b, base in enumerate(BASES):
        for typo in rotate(TOP_LEVEL_TYPOS, b, 2):
            cases.append(Case("unknown name", base, (override(typo, 1),), typo))
        for typo in rotate(NESTED_TYPOS, 2 * b, 2):
            cases.append(Case("unknown name", base, (override(typo, 1),), typo))
        # Another agent by name brings its own fields: one of this config's agent it does not read is refused.
        others, own = sorted(set(LAMBDA) - {agent(base)}), f"agent.{LAMBDA[agent(base)]}"
        cases.append(Case("unknown name", base, (override("agent.name", others[b % 2]), override(own, 0.9)), own))
        other = "sebulba" if architecture(base) == "anakin" else "anakin"
        cases.append(Case("unknown name", base, (override("architecture", other),), "architecture"))
    turn = 0
    for field, values in UNKNOWN_VALUES:
        for value in values:
            base = ALL[turn % len(ALL)]
            turn += 1
            cases.append(Case("unknown name", base, (override(field, value),), field))
    for kind, names in UNKNOWN_ENVIRONMENTS.items():
        bases = ANAKIN if kind == "anakin" else SEBULBA
        for n, name in enumerate(names):
            cases.append(Case("unknown name", bases[n % len(bases)], (override("env.name", name),), "env.name"))
    return cases


# ---------------------------------------------------------------------------------------------
# Device splits this machine cannot give: checked against the devices, before the environments are built.


def device_split_cases() -> list[Case]:
    def anakin(base, devices, field, *args):
        return Case("device split", base, tuple(args), field, devices)

    def sebulba(base, devices, field, actors, learners=None, *args):
        overrides = [override("actor_device_ids", actors)]
        if learners is not None:
            overrides.append(override("learner_device_ids", learners))
        return Case("device split", base, (*overrides, *args), field, devices)

    catch, gridworld, ppo = "anakin_catch", "anakin_gridworld", "anakin_cartpole_ppo"
    impala, sebulba_ppo, cheetah = "sebulba_cartpole_impala", "sebulba_cartpole_ppo", "sebulba_halfcheetah_ppo"
    return [
        # More Anakin devices than there are.
        anakin(catch, 2, "num_devices", override("num_devices", 16)),
        anakin(gridworld, 2, "num_devices", override("num_devices", 3)),
        anakin(ppo, 4, "num_devices", override("num_devices", 5)),
        anakin("anakin_pendulum_ppo", 4, "num_devices", override("num_devices", 64)),
        anakin("anakin_minatar_breakout_ppo", 2, "num_devices", override("num_devices", 8)),
        anakin("anakin_brax_ppo", 2, "num_devices", override("num_devices", 4)),
        # Environments that do not split evenly over the devices.
        anakin(catch, 2, "num_envs", override("num_envs", 63)),
        anakin(catch, 4, "num_envs", override("num_envs", 6)),
        anakin(gridworld, 4, "num_envs", override("num_envs", 130)),
        anakin(ppo, 4, "num_envs", override("num_envs", 2)),
        anakin(gridworld, 4, "num_envs", override("num_devices", 3)),  # 256 over 3 of 4 devices.
        anakin("anakin_minatar_breakout_ppo", 4, "num_envs", override("num_envs", 66)),
        anakin("anakin_pendulum_ppo", 2, "num_envs", override("num_envs", 33)),
        # PPO minibatches that do not divide a device's transitions (found while tracing).
        anakin(ppo, 2, "agent.num_minibatches", override("agent.num_minibatches", 3)),
        anakin(ppo, 4, "agent.num_minibatches", override("agent.num_minibatches", 256)),
        # Sebulba: device ids past the last device.
        sebulba(impala, 2, "actor_device_ids", "(3,)"),
        sebulba(impala, 2, "actor_device_ids", "(2,)"),
        sebulba(sebulba_ppo, 4, "actor_device_ids", "(0, 7)"),
        sebulba(cheetah, 4, "learner_device_ids", "(0,)", "(4,)"),
        sebulba(impala, 2, "learner_device_ids", "(0,)", "(5,)"),
        sebulba("sebulba_pong_impala", 2, "learner_device_ids", "(0,)", "(2,)"),
        sebulba("sebulba_breakout_impala", 2, "actor_device_ids", "(3,)", "(0,)"),
        # Actors and learners sharing devices on a machine with several.
        sebulba(impala, 2, "learner_device_ids", "(0,)", "(0, 1)"),
        sebulba(sebulba_ppo, 2, "learner_device_ids", "(1,)", "(1,)"),
        sebulba(cheetah, 4, "learner_device_ids", "(0, 1)", "(1, 2)"),
        sebulba("sebulba_gymnasium_cartpole", 4, "learner_device_ids", "(2,)", "(0, 1, 2, 3)"),
        sebulba(impala, 2, "actor_device_ids", "(0, 1)"),  # Every device an actor: none left to learn on.
        sebulba(sebulba_ppo, 4, "actor_device_ids", "(3, 2, 1, 0)"),
        # Environments per thread that do not split over the learner devices.
        sebulba(impala, 4, "envs_per_thread", "(0,)", "(1, 2, 3)"),
        sebulba(sebulba_ppo, 4, "envs_per_thread", "(0,)", "(1, 2)", override("envs_per_thread", 5)),
        sebulba(cheetah, 4, "envs_per_thread", "(3,)", "()", override("envs_per_thread", 8)),  # 8 over 3.
        # Learner batches that do not split into learner_minibatches.
        sebulba(impala, 2, "learner_minibatches", "(0,)", "(1,)", override("learner_minibatches", 5)),
        sebulba(sebulba_ppo, 4, "learner_minibatches", "(0,)", "(1, 2)", override("learner_minibatches", 3)),
        # PPO minibatches that do not divide a learner device's transitions (found while tracing).
        sebulba(sebulba_ppo, 2, "agent.num_minibatches", "(0,)", "(1,)", override("agent.num_minibatches", 7)),
    ]


# ---------------------------------------------------------------------------------------------
# Environment options the environment refuses: unknown ones, and values out of range or of the wrong type.

ENVIRONMENT_OPTIONS = [
    # (base, overrides, field)
    ("anakin_catch", ["rows=1"], "env.kwargs"),
    ("anakin_catch", ["columns=0"], "env.kwargs"),
    ("anakin_catch", ["columns=-2"], "env.kwargs"),
    ("anakin_catch", ["colums=3"], "env.kwargs"),
    ("anakin_catch", ["rows=abc"], "env.kwargs.rows"),  # Not read as the whole number the file set.
    ("anakin_catch", ["rows=10.5"], "env.kwargs.rows"),
    ("anakin_catch", ["name=nested_catch", "rows=0"], "env.kwargs"),
    ("anakin_catch", ["name=cartpole"], "env.kwargs"),  # Catch's rows and columns, given to CartPole.
    ("anakin_cartpole_ppo", ["max_episode_steps=0"], "env.kwargs"),
    ("anakin_cartpole_ppo", ["max_episode_steps=-5"], "env.kwargs"),
    ("anakin_cartpole_ppo", ["max_episode_steps=2.5"], "env.kwargs"),
    ("anakin_cartpole_ppo", ["max_episode_steps=abc"], "env.kwargs"),
    ("anakin_cartpole_ppo", ["gravity=9.8"], "env.kwargs"),
    ("anakin_gridworld", ["max_episode_steps=0"], "env.kwargs"),
    ("anakin_gridworld", ["max_episode_steps=abc"], "env.kwargs.max_episode_steps"),
    ("anakin_gridworld", ["random_goal=maybe"], "env.kwargs"),
    ("anakin_gridworld", ["size=3"], "env.kwargs"),
    ("anakin_gridworld", ["name=catch"], "env.kwargs"),  # FourRooms' max_episode_steps, given to Catch.
    ("anakin_pendulum_ppo", ["bogus=1"], "env.kwargs"),
    ("anakin_pendulum_ppo", ["max_steps_in_episode=0"], "env.kwargs"),
    ("anakin_pendulum_ppo", ["max_speed=abc"], "env.kwargs"),
    ("anakin_minatar_breakout_ppo", ["max_steps_in_episode=-10"], "env.kwargs"),
    ("anakin_minatar_breakout_ppo", ["max_steps_in_episode=True"], "env.kwargs"),
    ("anakin_brax_ppo", ["episode_length=0"], "env.kwargs"),
    ("anakin_brax_ppo", ["action_repeat=-1"], "env.kwargs"),
    ("anakin_brax_ppo", ["backend=nope"], "env.kwargs"),
    ("anakin_brax_ppo", ["bogus=1"], "env.kwargs"),
    ("sebulba_cartpole_impala", ["bogus=1"], "env.kwargs"),
    ("sebulba_cartpole_impala", ["max_episode_steps=-1"], "env.kwargs"),
    ("sebulba_cartpole_impala", ["max_episode_steps=0"], "env.kwargs"),
    ("sebulba_cartpole_impala", ["max_episode_steps=abc"], "env.kwargs"),
    ("sebulba_cartpole_impala", ["num_threads=-1"], "env.kwargs"),  # envpool itself would abort the process.
    ("sebulba_cartpole_ppo", ["sticky_actions=True"], "env.kwargs"),  # Atari only.
    ("sebulba_cartpole_ppo", ["reward_clip=True"], "env.kwargs"),  # The learner's: agent.reward_clip.
    ("sebulba_cartpole_ppo", ["batch_size=3"], "env.kwargs"),
    ("sebulba_cartpole_ppo", ["num_envs=3"], "env.kwargs"),
    ("sebulba_cartpole_ppo", ["seed=3"], "env.kwargs"),
    ("sebulba_cartpole_ppo", ["env_type=dm"], "env.kwargs"),
    ("sebulba_halfcheetah_ppo", ["bogus=1"], "env.kwargs"),
    ("sebulba_halfcheetah_ppo", ["max_episode_steps=0"], "env.kwargs"),
    ("sebulba_halfcheetah_ppo", ["frame_skip=0"], "env.kwargs"),
    ("sebulba_halfcheetah_ppo", ["reset_noise_scale=abc"], "env.kwargs"),
    ("sebulba_pong_impala", ["sticky_actions=maybe"], "env.kwargs"),
    ("sebulba_pong_impala", ["sticky_actions=True", "repeat_action_probability=0.1"], "env.kwargs"),
    ("sebulba_pong_impala", ["repeat_action_probability=2.0"], "env.kwargs"),
    ("sebulba_pong_impala", ["frame_skip=0"], "env.kwargs"),
    ("sebulba_pong_impala", ["stack_num=-1"], "env.kwargs"),
    ("sebulba_pong_impala", ["img_height=0"], "env.kwargs"),
    ("sebulba_pong_impala", ["episodic_life=maybe"], "env.kwargs"),
    ("sebulba_breakout_impala", ["noop_max=-1"], "env.kwargs"),
    ("sebulba_breakout_impala", ["img_width=-84"], "env.kwargs"),
    ("sebulba_gymnasium_cartpole", ["bogus=1"], "env.kwargs"),
    ("sebulba_gymnasium_cartpole", ["max_episode_steps=-3"], "env.kwargs"),
    ("sebulba_gymnasium_cartpole", ["step_timeout_seconds=-1"], "env.kwargs"),
    ("sebulba_gymnasium_cartpole", ["step_timeout_seconds=abc"], "env.kwargs"),
    ("sebulba_gymnasium_cartpole", ["autoreset_mode=sometimes"], "env.kwargs"),
    ("sebulba_gymnasium_cartpole", ["context=thread"], "env.kwargs"),
    ("sebulba_mpe2_spread_ippo", ["step_timeout_seconds=0"], "env.kwargs"),
    ("sebulba_mpe2_spread_ippo", ["context=fork"], "env.kwargs"),
    ("sebulba_mpe2_spread_ippo", ["vectorization_mode=threads"], "env.kwargs"),
]


def environment_option_cases() -> list[Case]:
    def env_override(setting: str) -> str:
        name, _, value = setting.partition("=")
        return override("env.name" if name == "name" else f"env.kwargs.{name}", value)

    return [
        Case("environment option", base, tuple(map(env_override, settings)), field)
        for base, settings, field in ENVIRONMENT_OPTIONS
    ]


# ---------------------------------------------------------------------------------------------
# Malformed tuples.

MALFORMED_TUPLES = [
    ("network.hidden_sizes", ['(64, "a")', "(64, 2.5)", "(64, True)", "()", "[]", "(64, None)", "((64,),)"]),
    ("network.hidden_sizes", ["(0,)", "(-64, 64)", "(64, 2147483648)", "(64,) * 0"]),
    ("network.channels", ['(16, "x", 32)', "()", "(16, -32, 32)", "(16.0,)", "(0, 32)"]),
    ("actor_device_ids", ["()", "[]", "(0.5,)", '("a",)', "(-1,)", "(0, 0)", "(None,)", "[0, [1]]"]),
    ("actor_device_ids", ["0", "abc", "{0}", "1.0", "(0, 1"]),  # Not tuples at all.
    ("learner_device_ids", ["(1, 1)", "(-1,)", '("1",)', "(1.5,)", "(True,)"]),
    ("learner_device_ids", ["1", "{1: 2}", "None"]),
]


def malformed_tuple_cases() -> list[Case]:
    cases, turn = [], 0
    for field, values in MALFORMED_TUPLES:
        bases = SEBULBA if field.endswith("device_ids") else ALL
        for value in values:
            cases.append(Case("malformed tuple", bases[turn % len(bases)], (override(field, value),), field))
            turn += 1
    return cases


CASES = (
    wrong_type_cases()
    + out_of_range_cases()
    + unknown_name_cases()
    + device_split_cases()
    + environment_option_cases()
    + malformed_tuple_cases()
)
DEVICE_COUNTS = sorted({case.devices for case in CASES})
# A valid config run with the bad ones: it must get as far as compiling, or the check below could not fail.
VALID = Case("valid", "anakin_catch", ("--config.num_envs=8", "--config.unroll_length=4"), "", devices=2)

MESSAGE = re.compile(r"podracer train: error: config\.(?P<field>[\w.]+): (?P<problem>.+?); (?P<fix>.+)")
# How the fixes begin or what they offer: a value to set, names to choose from, a file or function to start from.
FIX = re.compile(
    r"\b(set|use|choose|pass|start|leave|make|list|run|did you mean|the fields of|prefix|name an|give|pip install|"
    r"has \[)",
    re.IGNORECASE,
)


def test_the_fuzzer_covers_every_category_with_over_200_distinct_wrong_configs():
    counts = Counter(case.category for case in CASES)
    assert set(counts) == set(CATEGORIES), counts
    assert all(count >= 25 for count in counts.values()), counts
    assert len(CASES) >= 200
    assert len({(case.config, case.args, case.devices) for case in CASES}) == len(CASES)  # Distinct.
    used = {case.config for case in CASES} | {base for base, _, _ in WRITTEN.values()}
    assert used >= set(BASES)  # Every config file is a base.


def config_path(case: Case, directory) -> str:
    """The config file a case runs: one of configs/, or one this test writes into `directory`."""
    if not case.config.startswith("written:"):
        return os.path.join("configs", f"{case.config}.py")
    name = case.config.split(":", 1)[1]
    base, lines, _ = WRITTEN[name]
    path = directory / f"{name}.py"
    body = "\n".join(f"    {line}" for line in lines)
    path.write_text(
        "import runpy\n\nfrom ml_collections import ConfigDict  # noqa: F401\n\n\n"
        "def get_config():\n"
        f"    config = runpy.run_path({os.path.join(ROOT, 'configs', base + '.py')!r})['get_config']()\n"
        f"{body}\n"
        "    return config\n"
    )
    return str(path)


@pytest.mark.slow  # Over 600 wrong configs, one process per device count: about 20 s, left to `make test`.
@pytest.mark.parametrize("devices", DEVICE_COUNTS)
def test_every_wrong_config_is_one_clear_line_before_anything_compiles(tmp_path, devices):
    wrong = [case for case in CASES if case.devices == devices]
    cases = wrong + ([VALID] if VALID.devices == devices else [])
    runs = [
        ([config_path(case, tmp_path), *case.args], str(tmp_path / f"run{index}")) for index, case in enumerate(cases)
    ]
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps(runs))
    result = run_module("run_cli_cases", "--cases", str(cases_file), "--forbid-compile", num_devices=devices)
    assert result.returncode == 0, result.stderr
    outcomes = last_json_line(result.stdout)
    assert len(outcomes) == len(cases)

    failures = []
    for case, outcome in zip(cases, outcomes, strict=True):
        if case is VALID:
            assert outcome["compiled"], outcome  # The guard stops a run that gets as far as compiling.
            continue
        lines = outcome["stderr"].strip().splitlines()
        match = MESSAGE.fullmatch(lines[0]) if len(lines) == 1 else None
        problems = [
            f"exit code {outcome['code']}" if outcome["code"] != 2 else "",
            "compiled" if outcome["compiled"] else "",
            "wrote its workdir" if outcome["workdir_exists"] else "",
            f"{len(lines)} lines on stderr" if len(lines) != 1 else "",
            "not `config.FIELD: PROBLEM; FIX`" if len(lines) == 1 and not match else "",
            f"names config.{match['field']}" if match and match["field"] != case.field else "",
            "says no fix" if match and not FIX.search(match["fix"]) else "",
        ]
        if any(problems):
            reasons = ", ".join(problem for problem in problems if problem)
            failures.append(
                f"{case.category}: {case.config} {' '.join(case.args)} (config.{case.field}): {reasons}\n"
                f"    {outcome['stderr'].strip()[-600:]}"
            )
    summary = f"{len(failures)} of {len(wrong)} wrong configs not rejected properly:"
    assert not failures, "\n".join([summary, *failures])
