"""`SUITE:TASK` names through the registry: building, and the errors a config's `env.name` can get."""

import sys

import pytest

from podracer import envs
from podracer.config.errors import ConfigError
from podracer.envs import brax_env, gymnax_env


def test_make_builds_the_suites_adapters_with_their_settings():
    cartpole = envs.make("gymnax:CartPole-v1", max_steps_in_episode=50)
    assert cartpole == gymnax_env.make("CartPole-v1", max_steps_in_episode=50)
    assert envs.make("brax:inverted_pendulum", episode_length=10) == brax_env.make(
        "inverted_pendulum", episode_length=10
    )


@pytest.mark.parametrize(
    "name, message",
    [
        ("gymnax:Nope-v0", r"gymnax has no environment 'Nope-v0'; gymnax has \['CartPole-v1'"),
        ("gymnax:CartPole-v2", "did you mean gymnax:CartPole-v1"),
        ("brax:inverted_pendulm", "did you mean brax:inverted_pendulum"),
        ("foo:bar", r"unknown suite 'foo'; prefix a task with one of \['brax', 'gymnasium', 'gymnax'\]"),
    ],
)
def test_unknown_names(name, message):
    with pytest.raises(ConfigError, match=message) as error:
        envs.check(name, host=False)
    assert error.value.field == "env.name"
    with pytest.raises(ConfigError, match=message):
        envs.make(name)


@pytest.mark.parametrize("suite", ["gymnax:CartPole-v1", "brax:inverted_pendulum"])
def test_a_pure_jax_suite_under_sebulba(suite):
    with pytest.raises(
        ConfigError, match="environments run under anakin, not sebulba; set --config.architecture=anakin"
    ):
        envs.check(suite, host=True)


@pytest.mark.parametrize("package", ["gymnax", "brax"])
def test_a_missing_suite_names_its_pip_extra(monkeypatch, package):
    monkeypatch.setitem(sys.modules, package, None)  # `import gymnax` now fails as if it were not installed.
    monkeypatch.delitem(sys.modules, f"podracer.envs.{package}_env")
    with pytest.raises(ConfigError, match=rf"need the {package} package.*pip install -e '\.\[{package}\]'"):
        envs.check(f"{package}:anything", host=False)


def test_static_validation_leaves_the_task_to_the_build(monkeypatch):
    """Importing gymnax starts JAX, which must wait for the job to start; so validation only checks the prefix."""
    envs.check("gymnax:Nope-v0", host=False, import_suite=False)  # Looked up later, by envs.make.
    with pytest.raises(ConfigError, match="unknown suite"):
        envs.check("foo:bar", host=False, import_suite=False)
    with pytest.raises(ConfigError, match="run under anakin"):
        envs.check("brax:ant", host=True, import_suite=False)
    monkeypatch.setitem(sys.modules, "gymnax", None)
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[gymnax\]'"):
        envs.check("gymnax:CartPole-v1", host=False, import_suite=False)
