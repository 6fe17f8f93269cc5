"""Static validation of a whole config: values that cannot be meant are refused, naming the field and the fix."""

import json

import pytest
from ml_collections import ConfigDict

import podracer
from podracer.config import loading
from podracer.experiment import schema
from tests.helpers import ROOT, last_json_line, load_config, run_module

CATCH = f"{ROOT}/configs/anakin_catch.py"
CARTPOLE_IMPALA = f"{ROOT}/configs/sebulba_cartpole_impala.py"


# Values that cannot be meant, each with the words its error must contain. All are caught by the static checks.
IMPOSSIBLE = [
    (CATCH, {"agent.gamma": 1.5}, ["config.agent.gamma", "<= 1", "0.99"]),
    (CATCH, {"agent.gamma": -0.1}, ["config.agent.gamma", ">= 0"]),
    (CATCH, {"agent.td_lambda": 2.0}, ["config.agent.td_lambda", "<= 1"]),
    (CATCH, {"agent.entropy_cost": -0.01}, ["config.agent.entropy_cost", ">= 0"]),
    (CATCH, {"agent.reward_clip": -1.0}, ["config.agent.reward_clip", ">= 0"]),
    (CATCH, {"optimizer.learning_rate": 0.0}, ["config.optimizer.learning_rate", "> 0"]),
    (CATCH, {"optimizer.learning_rate": -3e-4}, ["config.optimizer.learning_rate", "> 0"]),
    (CATCH, {"optimizer.max_grad_norm": 0.0}, ["config.optimizer.max_grad_norm", "> 0"]),
    (CATCH, {"optimizer.name": "adagrad"}, ["config.optimizer.name", "'adagrad'", "adam"]),
    (CATCH, {"network.hidden_sizes": ()}, ["config.network.hidden_sizes", "non-empty"]),
    (CATCH, {"network.hidden_sizes": (64, 0)}, ["config.network.hidden_sizes", ">= 1"]),
    (CATCH, {"network.activation": "gelu"}, ["config.network.activation", "tanh"]),
    (CATCH, {"network.torso": "vit"}, ["config.network.torso", "impala_resnet"]),
    (CATCH, {"num_envs": 0}, ["config.num_envs", ">= 1"]),
    (CATCH, {"num_devices": -1}, ["config.num_devices", ">= 0"]),
    (CATCH, {"unroll_length": 0}, ["config.unroll_length", ">= 1"]),
    (CATCH, {"updates_per_dispatch": -1}, ["config.updates_per_dispatch", ">= 0"]),
    (CATCH, {"log_records": 0}, ["config.log_records", ">= 1"]),
    (CATCH, {"total_steps": 0}, ["config.total_steps", ">= 1"]),
    (CATCH, {"replicas": 0}, ["config.replicas", ">= 1"]),
    (CATCH, {"cpu_threads": -1}, ["config.cpu_threads", ">= 0"]),
    (CATCH, {"env.name": "pong"}, ["config.env.name", "'pong'", "catch"]),
    (CATCH, {"env.reset_fraction": 1.5}, ["config.env.reset_fraction", "(0, 1]", "0.0625"]),
    (CATCH, {"env.reset_fraction": -0.1}, ["config.env.reset_fraction", "(0, 1]", "0.0625"]),
    (CATCH, {"env.reset_fraction": float("nan")}, ["config.env.reset_fraction", "(0, 1]"]),
    (CATCH, {"agent.name": "sarsa"}, ["config.agent.name", "'sarsa'", "ppo"]),
    (CATCH, {"architecture": "podracer"}, ["config.architecture", "sebulba"]),
    (f"{ROOT}/configs/anakin_cartpole_ppo.py", {"agent.num_epochs": 0}, ["config.agent.num_epochs", ">= 1"]),
    (f"{ROOT}/configs/anakin_cartpole_ppo.py", {"agent.clip_epsilon": 0.0}, ["config.agent.clip_epsilon", "> 0"]),
    (CARTPOLE_IMPALA, {"agent.clip_rho_threshold": 0.0}, ["config.agent.clip_rho_threshold", "> 0"]),
    (CARTPOLE_IMPALA, {"policy_lag": 2}, ["config.policy_lag", "0 or 1"]),
    (CARTPOLE_IMPALA, {"actor_device_ids": ()}, ["config.actor_device_ids", "non-empty"]),
    (CARTPOLE_IMPALA, {"actor_device_ids": (0, 0)}, ["config.actor_device_ids", "repeats"]),
    (CARTPOLE_IMPALA, {"learner_device_ids": (-1,)}, ["config.learner_device_ids", ">= 0"]),
    (CARTPOLE_IMPALA, {"envs_per_thread": 0}, ["config.envs_per_thread", ">= 1"]),
    (CARTPOLE_IMPALA, {"stall_timeout_seconds": 0.0}, ["config.stall_timeout_seconds", "> 0"]),
    (CARTPOLE_IMPALA, {"env.name": "catch"}, ["config.env.name", "not a registered host environment", "Pong-v5"]),
]


@pytest.mark.parametrize("path, overrides, words", IMPOSSIBLE)
def test_static_validation_rejects_values_that_cannot_be_meant(path, overrides, words):
    config = loading.load(path, overrides)
    with pytest.raises(podracer.ConfigError) as error:
        schema.validate(config)
    message = str(error.value)
    for word in words:
        assert word in message, message
    assert message.count(";") >= 1  # "config.FIELD: the problem; the fix".


@pytest.mark.parametrize("architecture", sorted(schema.ARCHITECTURES))
@pytest.mark.parametrize("agent", podracer.agents.names())
def test_every_agents_defaults_pass_the_static_checks(agent, architecture):
    """`podracer.defaults(agent)` is a config to start from: only what no default can give is refused, naming it."""
    config = podracer.defaults(agent, architecture=architecture)
    refused = {"learned_rule": "agent.rule_checkpoint"}  # A meta-trained rule's folder: the user's to give.
    only_offline = [name for name in podracer.agents.names() if not podracer.agents.lookup(name).online]
    refused |= {name: "offline.dataset" for name in only_offline}
    if architecture == "sebulba":  # Pgx games are Anakin's; Sampled AlphaZero steps a pure-JAX environment.
        refused |= {"alphazero": "env.name", "sampled_alphazero": "architecture"}
    if agent in refused:
        with pytest.raises(podracer.ConfigError) as error:
            schema.validate(config)
        assert error.value.field == refused[agent], error.value
    else:
        schema.validate(config)


def test_static_validation_touches_no_device():
    result = run_module("validate_without_devices", CATCH, json.dumps({"agent.gamma": 1.5}))
    assert result.returncode == 0, result.stderr
    assert last_json_line(result.stdout) == {
        "error": "config.agent.gamma: must be a number >= 0 and <= 1, got 1.5; set e.g. --config.agent.gamma=0.99",
        "backends_started": False,
    }


def test_an_agent_passed_in_is_not_checked_against_config_agent():
    config = load_config("anakin_catch")
    config.agent = ConfigDict({"name": "my_own_agent", "temperature": 2.0})  # Read by the user's agent, not ours.
    with pytest.raises(podracer.ConfigError, match="config.agent.name"):
        schema.validate(config)
    schema.validate(config, agent_from_config=False)


def test_agent_name_among_the_overrides_brings_that_agents_defaults_and_the_others_override_them():
    """In any order beside it; the file's Catch, network and optimiser stay, and the result validates as PPO's."""
    for overrides in ({"agent.name": "ppo", "agent.num_epochs": 2}, {"agent.num_epochs": 2, "agent.name": "ppo"}):
        config = podracer.load_config(CATCH, overrides)
        expected = podracer.defaults("ppo").agent
        assert config.agent.to_dict() == {**expected.to_dict(), "num_epochs": 2}
        assert config.env.name == "catch" and config.optimizer.learning_rate == 3e-3  # The file's own.
        schema.validate(config)
    with pytest.raises(podracer.ConfigError, match=r"config\.agent\.epsilon_end: .* no such field"):
        podracer.load_config(CATCH, {"agent.name": "ppo", "agent.epsilon_end": 0.1})  # DQN's, not PPO's.
    with pytest.raises(podracer.ConfigError, match=r"config\.agent\.name: unknown value 'sarsa'; choose one of .*ppo"):
        podracer.load_config(CATCH, {"agent.name": "sarsa"})


def test_the_files_own_agent_named_again_keeps_the_files_values():
    dqn = f"{ROOT}/configs/anakin_cartpole_dqn.py"
    assert podracer.load_config(dqn, {"agent.name": "dqn"}).agent == loading.load(dqn).agent
    assert podracer.load_config(dqn).agent != podracer.defaults("dqn").agent  # So the check above can fail.
