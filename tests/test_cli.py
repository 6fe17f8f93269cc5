"""The `podracer` command: a successful run's outputs, and clear errors (exit 2, nothing written) for bad input.

Also the config files: every one under configs/ loads and passes static validation.
"""

import glob
import json
import os

import numpy as np
import pytest

import podracer
from tests.helpers import (
    HANG_SECONDS,
    ROOT,
    TINY_META_TRAINING,
    last_json_line,
    load_config,
    play_without_podracer,
    run_as_user,
    run_cli,
    run_module,
    save_random_rule,
)

CATCH = "configs/anakin_catch.py"
TICTACTOE = "configs/anakin_tictactoe_alphazero.py"
COORDINATION = "tests/programs/coordination_game.py"  # Two agents (IPPO) on a cooperative game of its own.


@pytest.mark.slow  # Six podracer commands and a JAX program in fresh processes, compiling afresh: about 40 s.
def test_make_run_then_each_command_on_its_workdir_in_a_users_environment(tmp_path):
    """What a new user does first, each command in a fresh process with a user's environment, from a scratch folder:
    `make run`'s experiment (its `podracer train`, shortened), then `podracer evaluate` with a video, `podracer
    export` and the exported policy played by JAX alone, `podracer plot`, `podracer configs` and `podracer config
    show`. None of the session's settings reach them: the default `cpu_devices = 0` splits the CPU into one
    device per core as for the user (two of 256 environments on a 2-core machine), nothing else forces a device
    count or limits XLA:CPU's code, and nothing is in a compilation cache, so the checkpoint written on those
    devices is read back on the one device the other commands have."""
    workdir, scratch = tmp_path / "run", tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "configs").symlink_to(os.path.join(ROOT, "configs"), target_is_directory=True)
    result = run_as_user(
        "podracer",
        "train",
        "--config",
        CATCH,
        "--config.total_steps=24576",  # One dispatch of 3 updates of 512 x 16 steps, a record each.
        f"--config.max_dispatch_seconds={HANG_SECONDS}",  # Never shortened by a busy host.
        f"--workdir={workdir}",
        cwd=str(scratch),
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [8192, 16384, 24576]
    assert {"step", "steps_per_second", "mean_episode_return", "loss", "policy_loss", "value_loss"} <= set(records[0])
    wall = [r["wall_seconds"] for r in records]
    assert wall[0] > records[0]["compile_seconds"] and wall == sorted(wall)  # From the start, compilation included.
    assert glob.glob(str(workdir / "events.out.tfevents.*"))
    resolved = json.loads((workdir / "config.json").read_text())
    assert resolved["num_envs"] == 512 and resolved["total_steps"] == 24576
    assert "mean episode return" in result.stdout
    cores = len(os.sched_getaffinity(0))
    devices = max(count for count in range(1, cores + 1) if 512 % count == 0)  # Whole batches, one per core.
    assert result.stderr.startswith(f"podracer: replicating over {devices} cpu device")
    assert f"24,576 steps on {devices} device" in result.stdout
    assert "steps_per_second=" in result.stderr and "mean_return=" in result.stderr and "24.6k/24.6k" in result.stderr

    video = scratch / "catch.gif"
    evaluated = run_as_user("podracer", "evaluate", str(workdir), "--video", str(video), cwd=str(scratch))
    assert evaluated.returncode == 0, evaluated.stderr
    assert "over 10 episodes" in evaluated.stdout and video.stat().st_size > 0

    exports = scratch / "exports"  # The policy, its description, and the inputs and actions of the play below.
    exports.mkdir()
    exported = run_as_user("podracer", "export", str(workdir), "--out", str(exports / "policy.bin"), cwd=str(scratch))
    assert exported.returncode == 0, exported.stderr
    observations = np.zeros((2, 3, 10, 5), np.float32)  # [T, B, rows, columns] of Catch's board.
    observations[:, :, 9, 2] = 1.0  # The paddle at the bottom, mid-row; no ball yet.
    np.savez(exports / "policy.inputs.npz", observation=observations, first=np.ones((2, 3), bool))
    assert play_without_podracer(str(exports), as_user=True) == {"podracer_loaded": False}
    actions = np.load(exports / "policy.actions.npy")
    assert actions.shape == (2, 3) and set(actions.ravel()) <= {0, 1, 2}

    plotted = run_as_user("podracer", "plot", str(workdir), "--out", str(scratch / "run.png"), cwd=str(scratch))
    assert plotted.returncode == 0 and (scratch / "run.png").read_bytes().startswith(b"\x89PNG"), plotted.stderr
    listed = run_as_user("podracer", "configs", cwd=str(scratch))
    assert listed.returncode == 0 and "anakin_catch" in listed.stdout, listed.stderr
    shown = run_as_user("podracer", "config", "show", CATCH, "--config.seed=7", cwd=str(scratch))
    assert shown.returncode == 0 and json.loads(shown.stdout)["seed"] == 7, shown.stderr


META = "configs/anakin_lpg_gridworlds.py"
META_TINY = {**TINY_META_TRAINING, "meta.updates": 4}


@pytest.mark.slow
@pytest.mark.extended  # Meta-trains, then trains with the rule, each a fresh process compiling afresh: about 40 s.
def test_meta_train_then_train_with_its_rule_in_a_users_environment(tmp_path):
    """`podracer meta-train` writes its rule, and `podracer train` of the learned-rule config trains with it, each in
    a user's environment (as the first test's commands)."""
    workdir = tmp_path / "meta"
    overrides = [f"--config.{field}={value}" for field, value in META_TINY.items()]
    meta = run_as_user("podracer", "meta-train", "--config", META, f"--workdir={workdir}", *overrides)
    assert meta.returncode == 0, meta.stderr
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["meta_update"] for r in records][-1] == 4 and all(np.isfinite(r["meta_loss"]) for r in records)
    rule = workdir / "rule"
    trained = run_as_user(
        "podracer",
        "train",
        "--config",
        LEARNED_RULE,
        f"--config.agent.rule_checkpoint={rule}",
        "--config.agent.prediction_size=4",
        "--config.total_steps=4096",
        f"--workdir={tmp_path / 'train'}",
    )
    assert trained.returncode == 0, trained.stderr
    assert "mean episode return" in trained.stdout


SEBULBA = "configs/sebulba_cartpole_impala.py"
DQN = "configs/anakin_cartpole_dqn.py"
SAC, TD3 = "configs/anakin_pendulum_sac.py", "configs/anakin_pendulum_td3.py"
MPO, VMPO = "configs/anakin_cartpole_mpo.py", "configs/anakin_cartpole_vmpo.py"
PQN = "configs/anakin_cartpole_pqn.py"
C51, IQN = "configs/anakin_cartpole_c51.py", "configs/anakin_cartpole_iqn.py"
SAMPLED_MUZERO = "configs/anakin_pendulum_sampled_muzero.py"
SAMPLED_ALPHAZERO = "configs/anakin_pendulum_sampled_alphazero.py"
PPO = "configs/anakin_cartpole_ppo.py"
LEARNED_RULE = "configs/anakin_catch_learned_rule.py"
RULE = "RULE_FOLDER"  # Replaced by the folder of `saved_rule`, a random rule of prediction size 30.

BAD_INPUTS = [
    # (config file, extra arguments, devices, words the error must contain)
    (CATCH, ["--config.num_envz=8"], 1, ["config.num_envz", "no such field", "num_envs"]),
    (CATCH, ["--config.network.hidden=3"], 1, ["config.network.hidden", "hidden_sizes"]),
    (CATCH, ["--config.num_envs=6"], 4, ["config.num_envs", "4 devices", "multiple of 4"]),
    (CATCH, ["--config.num_devices=3"], 2, ["config.num_devices", "3 devices requested", "has 2"]),
    (CATCH, ["--config.env.name=pong"], 1, ["config.env.name", "'pong'", "catch"]),
    (CATCH, ["--config.agent.name=sarsa"], 1, ["config.agent.name", "'sarsa'", "ppo"]),
    (CATCH, ["--config.env.name=gymnax:Breakout-MinAtr"], 1, ["config.env.name", "gymnax:Breakout-MinAtar"]),
    (CATCH, ["--config.env.name=foo:bar"], 1, ["config.env.name", "unknown suite 'foo'", "gymnax"]),
    (CATCH, ["--config.env.name=pgx:tic_tac_to"], 1, ["config.env.name", "did you mean pgx:tic_tac_toe"]),
    (
        "configs/anakin_xminigrid_ppo.py",
        ["--config.env.kwargs.max_stepz=3"],
        1,
        ["config.env.kwargs", "no setting max_stepz", "'max_steps'"],
    ),
    (
        CATCH,
        ["--config.num_envs=many"],
        1,
        ["config.num_envs", "cannot read 'many' as a whole number", "--config.num_envs=512"],
    ),
    (CATCH, ["--config.total_steps=0"], 1, ["config.total_steps", ">= 1", "--config.total_steps=1000000"]),
    (CATCH, ["--config.env.kwargs.rows=1"], 1, ["config.env.kwargs", "rows", "rows >= 2"]),
    (CATCH, ["--config.cpu_threads=-1"], 1, ["config.cpu_threads", ">= 0", "--config.cpu_threads=1"]),
    (CATCH, ["--config.replicas=2"], 1, ["config.replicas", "2 processes requested", "scripts.launch_local"]),
    (CATCH, ["--config.resume=sometimes"], 1, ["config.resume", "'sometimes'", "must"]),
    (CATCH, ["--config.resume=must"], 1, ["config.resume", "holds no checkpoint", "resume=auto"]),
    (CATCH, ["--config.checkpoint.keep=0"], 1, ["config.checkpoint.keep", ">= 1"]),
    (CATCH, ["--config.checkpoint.every_minutes=-1"], 1, ["config.checkpoint.every_minutes", ">= 0"]),
    (SEBULBA, ["--config.resume=must"], 1, ["config.resume", "holds no checkpoint", "resume=auto"]),
    (
        SEBULBA,
        ["--config.learner_device_ids=(0,1)"],
        2,
        ["config.learner_device_ids", "[0] are also actor", "disjoint"],
    ),
    (SEBULBA, ["--config.learner_device_ids=(5,)"], 2, ["config.learner_device_ids", "(5,)", "0..1"]),
    (
        SEBULBA,
        ["--config.actor_device_ids=()"],
        2,
        [
            "config.actor_device_ids",
            "must be a non-empty tuple of whole numbers >= 0",
            '--config.actor_device_ids="(0,)"',
        ],
    ),
    (
        SEBULBA,
        ["--config.learner_device_ids=(1,2,3)"],
        4,
        ["config.envs_per_thread", "3 learner devices", "multiple of 3"],
    ),
    (SEBULBA, ["--config.learner_minibatches=5"], 2, ["config.learner_minibatches", "32 environments", "divisor"]),
    (SEBULBA, ["--config.policy_lag=2"], 1, ["config.policy_lag", "0 or 1"]),
    (SEBULBA, ["--config.env_stepping=jit"], 1, ["config.env_stepping", "'jit'", "'compiled'"]),
    (
        "configs/sebulba_halfcheetah_ppo.py",
        ["--config.env_stepping=compiled"],
        1,
        ["config.env_stepping", "HalfCheetah-v4", "64-bit", "--config.env_stepping=host"],
    ),
    (
        SEBULBA,
        ["--config.env.name=catch"],
        1,
        ["config.env.name", "not a registered host environment or an envpool task", "Pong-v5"],
    ),
    (SEBULBA, ["--config.env.name=gymnasium:Nope-v0"], 1, ["config.env.name", "gymnasium has no environment"]),
    (SEBULBA, ["--config.env.name=gymnax:CartPole-v1"], 1, ["config.env.name", "run under anakin, not sebulba"]),
    # Several agents in one environment (podracer.envs.multi_agent): no agent of podracer acts for them yet.
    (CATCH, ["--config.env.name=jaxmarl:MPE_simple_spread_v3"], 1, ["config.agent.name", "has 3"]),
    (CATCH, ["--config.env.name=jaxmarl:MPE_simple_sprad_v3"], 1, ["config.env.name", "MPE_simple_spread_v3"]),
    # Several agents (several_agents.ippo): an agent of several on one, a centralised critic without a global state
    # or on the policy's torso.
    (COORDINATION, ["--config.env.name=catch"], 1, ["config.env.name", "'ippo'", "has one"]),
    (
        COORDINATION,
        ["--config.agent.critic=centralised", "--config.env.kwargs.global_state=False"],
        1,
        ["config.agent.critic", "global state", "--config.agent.critic=local"],
    ),
    (
        COORDINATION,
        ["--config.agent.critic=centralised", "--config.network.shared_torso=True"],
        1,
        ["config.network.shared_torso", "--config.network.shared_torso=False"],
    ),
    (
        "configs/anakin_mpe_spread_ippo.py",
        ["--config.env.name=jaxmarl:MPE_simple_tag_v3"],
        1,
        ["config.agent.share_parameters", "'adversary': 3", "--config.agent.share_parameters=False"],
    ),
    # Value decomposition (several_agents.q_mixing, pqn_vdn): one shared Q-network needs alike agents, a known mixer,
    # and PQN-VDN is feed-forward.
    (
        "configs/anakin_mpe_spread_qmix.py",
        ["--config.env.name=jaxmarl:MPE_simple_tag_v3"],
        1,
        ["config.env.name", "one Q-network", "'adversary': 3"],
    ),
    ("configs/anakin_mpe_spread_qmix.py", ["--config.agent.mixer=sum"], 1, ["config.agent.mixer", "'vdn'"]),
    ("configs/anakin_mpe_spread_pqn_vdn.py", ["--config.network.core=gru"], 1, ["config.network.core", "gru"]),
    (SEBULBA, ["--config.network.torso=nature_cnn"], 1, ["config.network.torso", "uint8 frames", "(4,) float"]),
    (DQN, ["--config.agent.replay_ratio=0"], 2, ["config.agent.replay_ratio", ">= 1"]),
    (DQN, ["--config.agent.min_replay_size=60000"], 2, ["config.agent.min_replay_size", "buffer_size"]),
    # Rows of 8 / 8 = 1 item cannot hold a 4-step sequence; found when the buffer is made, before compiling.
    (DQN, ["--config.agent.buffer_size=8", "--config.agent.min_replay_size=8"], 2, ["config.agent.buffer_size"]),
    (SEBULBA, ["--config.population.seed=(0,1)"], 1, ["config.population", "train populations with Anakin"]),
    (
        DQN,
        ["--config.population.agent.n_step=(1,3)"],
        1,
        ["config.population.agent.n_step", "no real number", "population.optimizer.learning_rate"],
    ),
    (CATCH, ["--config.population.network.hidden_sizes=((8,),(16,))"], 1, ["config.population.network.hidden_sizes"]),
    (CATCH, ["--config.population.agent.gama=(0.9,0.99)"], 1, ["config.population.agent.gama", "no field"]),
    (
        CATCH,
        ["--config.population.seed=(0,1,2)", "--config.population.agent.gamma=(0.9,0.99)"],
        1,
        ["config.population.seed", "lists 3 values", "lists 2"],
    ),
    (
        CATCH,
        ["--config.population.optimizer.learning_rate=(0.001,-1.0)"],
        1,
        ["config.population.optimizer.learning_rate", "member 1", "> 0"],
    ),
    # Recurrent cores (podracer.agents.models.cores).
    (CATCH, ["--config.network.core=rnn"], 1, ["config.network.core", "'rnn'", "'lstm'"]),
    (CATCH, ["--config.network.core=lstm", "--config.network.core_size=0"], 1, ["config.network.core_size", ">= 1"]),
    (
        "configs/anakin_catch_muzero.py",
        ["--config.network.core=lstm"],
        1,
        ["config.network.core", "MuZero", "--config.network.core=none"],
    ),
    (
        DQN,
        ["--config.network.core=lstm", "--config.agent.burn_in=8", "--config.agent.sequence_length=8"],
        1,
        ["config.agent.burn_in", "as long as the sequence", "nothing to learn from"],
    ),
    (DQN, ["--config.agent.burn_in=2"], 1, ["config.agent.burn_in", "recurrent core", "--config.network.core=lstm"]),
    # The distributional agents: their heads' fields, and discrete actions.
    (C51, ["--config.agent.v_max=-20.0"], 1, ["config.agent.v_max", "empty", "above agent.v_min"]),
    (C51, ["--config.agent.num_atoms=1"], 1, ["config.agent.num_atoms", ">= 2"]),
    (IQN, ["--config.agent.kappa=-1.0"], 1, ["config.agent.kappa", ">= 0"]),
    (IQN, ["--config.agent.munchausen_clip=0.5"], 1, ["config.agent.munchausen_clip", "<= 0"]),
    (C51, ["--config.env.name=gymnax:Pendulum-v1"], 1, ["config.env.name", "DiscreteArray", "ppo"]),
    (C51, ["--config.agent.noisy_sigma=0.5", "--config.network.core=gru"], 1, ["config.network.core", "noisy"]),
    # Off-policy continuous control (SAC, TD3), and the kind of actions each agent needs, found before compiling.
    (SAC, ["--config.agent.target_entropy=1.0"], 1, ["config.agent.target_entropy", "<= 0", "-1.0"]),
    (TD3, ["--config.agent.policy_delay=0"], 1, ["config.agent.policy_delay", ">= 1", "policy_delay=2"]),
    (SAC, ["--config.env.name=catch"], 1, ["config.env.name", "BoundedArray", "dqn"]),
    (TD3, ["--config.env.name=cartpole"], 1, ["config.env.name", "BoundedArray", "dqn"]),
    # MPO and V-MPO: their KL bounds, the target network's period and MPO's feed-forward networks.
    (VMPO, ["--config.agent.epsilon_temperature=0.0"], 1, ["config.agent.epsilon_temperature", "> 0"]),
    (VMPO, ["--config.agent.target_update_period=0"], 1, ["config.agent.target_update_period", ">= 1"]),
    (MPO, ["--config.agent.epsilon_stddev=-1e-3"], 1, ["config.agent.epsilon_stddev", "> 0"]),
    (MPO, ["--config.network.core=lstm"], 1, ["config.network.core", "feed-forward", "lstm"]),
    (DQN, ["--config.env.name=gymnax:Pendulum-v1"], 1, ["config.env.name", "DiscreteArray", "ppo"]),
    # PQN (podracer.agents.algorithms.pqn): a lambda outside [0, 1], a continuous task, minibatches that do not divide.
    (PQN, ["--config.agent.td_lambda=1.5"], 1, ["config.agent.td_lambda", "<= 1"]),
    (PQN, ["--config.env.name=gymnax:Pendulum-v1"], 1, ["config.env.name", "DiscreteArray", "actor-critic agent"]),
    (PQN, ["--config.agent.num_minibatches=3"], 1, ["config.agent.num_minibatches", "2048 transitions", "divisor"]),
    (PPO, ["--config.agent.num_minibatches=3"], 1, ["config.agent.num_minibatches", "equal minibatches", "divisor"]),
    # Meta-gradient RL (podracer.agents.meta.meta_gradient_rl): an agent without it, an unknown name, a negative rate.
    (
        "configs/anakin_cartpole_ppo.py",
        ["--config.agent.meta_gradient.learn=('gamma',)"],
        1,
        ["config.agent.meta_gradient", "agent 'ppo'", "actor_critic and impala", "--config.agent.name=actor_critic"],
    ),
    (
        CATCH,
        ["--config.agent.meta_gradient.learn=('gama',)"],
        1,
        ["config.agent.meta_gradient.learn", "'gama'", "gamma"],
    ),
    (CATCH, ["--config.agent.meta_gradient.learning_rate=-1"], 1, ["meta_gradient.learning_rate", ">= 0"]),
    # Sampled MuZero (podracer.agents.continuous_search): fewer than 2 samples to search, discrete actions.
    (SAMPLED_MUZERO, ["--config.agent.num_samples=1"], 1, ["config.agent.num_samples", ">= 2"]),
    (SAMPLED_MUZERO, ["--config.env.name=cartpole"], 1, ["config.env.name", "discrete", "--config.agent.name=muzero"]),
    (SAMPLED_MUZERO, ["--config.agent.uniform_fraction=2"], 1, ["config.agent.uniform_fraction", "<= 1"]),
    # Sampled AlphaZero steps a pure-JAX environment from the state its observation carries.
    (SAMPLED_ALPHAZERO, ["--config.env.kwargs.observe_state=False"], 1, ["config.env.kwargs.observe_state", "=True"]),
    (SAMPLED_ALPHAZERO, ["--config.env.name=cartpole"], 1, ["config.env.name", "--config.agent.name=alphazero"]),
    # Self-play (AlphaZero) on a single-player game, or off Pgx.
    (TICTACTOE, ["--config.env.name=pgx:2048"], 1, ["config.env.kwargs.self_play", "pgx:2048", "of 1 player"]),
    (TICTACTOE, ["--config.env.name=catch"], 1, ["config.env.name", "'catch' is not a Pgx game"]),
    # A learned rule (podracer.agents.algorithms.learned_rule): none given, none there, or one of another prediction size.
    (LEARNED_RULE, [], 1, ["config.agent.rule_checkpoint", "must name a saved rule", "save_rule"]),
    (LEARNED_RULE, ["--config.agent.rule_checkpoint=/no/rule"], 1, ["config.agent.rule_checkpoint", "no saved rule"]),
    (
        LEARNED_RULE,
        [f"--config.agent.rule_checkpoint={RULE}", "--config.agent.prediction_size=7"],
        1,
        ["config.agent.prediction_size", "is 7", "size 30", "--config.agent.prediction_size=30"],
    ),
]


@pytest.fixture(scope="module")
def saved_rule(tmp_path_factory) -> str:
    return save_random_rule(str(tmp_path_factory.mktemp("rule") / "rule"))


def imports_a_suite(config: str, args: list[str]) -> bool:
    """Whether a case's command imports one of the suites that take seconds to import (JaxMARL, gymnax)."""
    return any(suite in " ".join([config, *args]) for suite in ("jaxmarl", "gymnax", "_mpe_"))


# One process per device count (JAX starts once in each); the cases that import a slow suite in one of their own,
# slow, so that `make test-fast` keeps the rest (the JaxMARL and gymnax imports were 23 of their 25 s).
BAD_INPUT_GROUPS = [
    pytest.param(devices, suites, marks=[pytest.mark.slow] if suites else [], id=f"{devices}{'-suites' * suites}")
    for devices, suites in sorted({(devices, imports_a_suite(config, args)) for config, args, devices, _ in BAD_INPUTS})
]


@pytest.mark.parametrize("devices, suites", BAD_INPUT_GROUPS)
def test_bad_input_is_a_clear_error_with_exit_code_2_and_no_output(tmp_path, devices, suites, saved_rule):
    cases = [
        ([config, *(arg.replace(RULE, saved_rule) for arg in args)], words)
        for config, args, count, words in BAD_INPUTS
        if (count, imports_a_suite(config, args)) == (devices, suites)
    ]
    payload = json.dumps([(args, str(tmp_path / f"run{i}")) for i, (args, _) in enumerate(cases)])
    result = run_module("run_cli_cases", payload, num_devices=devices)  # JAX starts once per device count.
    assert result.returncode == 0, result.stderr
    for (args, words), outcome in zip(cases, last_json_line(result.stdout), strict=True):
        assert outcome["code"] == 2, (args, outcome)
        message = outcome["stderr"].strip().splitlines()[-1]
        assert message.startswith("podracer train: error:"), (args, message)
        for word in words:
            assert word in message, (args, message)
        assert "Traceback" not in outcome["stderr"]
        assert not outcome["workdir_exists"], args


@pytest.mark.parametrize(
    "args, words",
    [
        (["--config.meta.lifetime=(80,40)"], ["config.meta.lifetime", "low <= high"]),
        (["--config.meta.inner_updates=0"], ["config.meta.inner_updates", ">= 1"]),
        (['--config.meta.environments=(("lpg_tabular",{"variant":"huge"},2),)'], ["config.meta.environments", "huge"]),
        (['--config.meta.environments=(("pong",{},2),)'], ["config.meta.environments", "pong"]),
        (["--config.optimizer.anneal_lr=True"], ["config.optimizer.anneal_lr", "lifetimes restart"]),
        (["--config.meta.optimizer.anneal_lr=True"], ["config.meta.optimizer.anneal_lr", "constant rate"]),
    ],
)
def test_meta_train_bad_input_is_exit_2_naming_the_field(tmp_path, capsys, args, words):
    from podracer import cli

    assert cli.run(["meta-train", "--config", META, "--workdir", str(tmp_path / "run"), *args]) == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith("podracer meta-train: error:"), message
    assert all(word in message for word in words), message
    assert not (tmp_path / "run").exists()


def test_missing_config_file_and_unknown_command_exit_2():
    assert run_cli("train", "--config", "configs/nope.py").returncode == 2
    assert run_cli("train").returncode == 2
    assert run_cli("fly").returncode == 2


# ---------------------------------------------------------------------------------------------
# The config files themselves.


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "configs", "*.py"))))
def test_every_config_file_is_valid(path, saved_rule):
    name = os.path.splitext(os.path.basename(path))[0]
    given = {"agent.rule_checkpoint": saved_rule} if "learned_rule" in name else {}
    config = load_config(name, given)  # A learned rule's folder must be given on the command line.
    if "meta" in config:  # A meta-training config, for podracer meta-train.
        from podracer.experiment.meta_train import validate

        validate(config)
    else:
        podracer.validate_config(config)
    assert config.is_locked  # Loaded configs refuse new fields; a typo is an error, not a silent no-op.
