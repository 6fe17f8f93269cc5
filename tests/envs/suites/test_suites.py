"""`SUITE:TASK` names through the registry: building, and the errors a config's `env.name` can get."""

import sys

import pytest

from podracer import envs
from podracer.config.errors import ConfigError
from podracer.envs.suites import gymnax_env


def test_make_builds_the_suites_adapters_with_their_settings():
    cartpole = envs.make("gymnax:CartPole-v1", max_steps_in_episode=50)
    assert cartpole == gymnax_env.make("CartPole-v1", max_steps_in_episode=50)  # Brax's: test_brax_env.py.


@pytest.mark.parametrize(
    "name, message",
    [
        ("gymnax:Nope-v0", r"gymnax has no environment 'Nope-v0'; gymnax has \['CartPole-v1'"),
        ("gymnax:CartPole-v2", "did you mean gymnax:CartPole-v1"),
        ("brax:inverted_pendulm", "did you mean brax:inverted_pendulum"),
        ("foo:bar", r"unknown suite 'foo'; prefix a task with one of \['brax', 'craftax', 'gymnasium'"),
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


@pytest.mark.parametrize(
    "prefix, module",
    [
        ("gymnax", "gymnax"),
        ("brax", "brax"),
        ("craftax", "craftax"),
        ("jumanji", "jumanji"),
        ("jumanji", "stoa"),  # The extra installs stoa-env beside Jumanji: either missing is the extra missing.
        ("playground", "mujoco_playground"),  # The extra is named after the prefix, not the import.
        ("xminigrid", "xminigrid"),
        ("navix", "navix"),
        ("popgym_arcade", "popgym_arcade"),
        ("pgx", "pgx"),
    ],
)
def test_a_missing_suite_names_its_pip_extra(monkeypatch, prefix, module):
    for name in [name for name in sys.modules if name.split(".")[0] == module] or [module]:
        monkeypatch.setitem(sys.modules, name, None)  # Importing it (or its submodules) fails, as if not installed.
    monkeypatch.delitem(sys.modules, envs.SUITES[prefix].adapter, raising=False)
    message = rf"{prefix} environments need the {prefix} extra.*pip install -e '\.\[{prefix}\]'"
    for import_suite in (True, False):  # Building, and the static validation before anything starts.
        with pytest.raises(ConfigError, match=message):
            envs.check(f"{prefix}:anything", host=False, import_suite=import_suite)


@pytest.mark.parametrize(
    "name, hint",
    [
        ("craftax:Craftax-Clasic-Symbolic-v1", "did you mean craftax:Craftax-Classic-Symbolic-v1"),
        ("jumanji:Snake-v2", "did you mean jumanji:Snake-v1"),
        ("playground:CartpoleBalanse", "did you mean playground:CartpoleBalance"),
        ("xminigrid:MiniGrid-Empty-8x9", "did you mean xminigrid:MiniGrid-Empty-8x8"),
        ("navix:Navix-Empty-5x5-v1", "did you mean navix:Navix-Empty-5x5-v0"),
        ("popgym_arcade:CountRecallEasyy", "did you mean popgym_arcade:CountRecallEasy"),
        ("pgx:tic_tac_to", "did you mean pgx:tic_tac_toe"),
    ],
)
@pytest.mark.slow  # Imports every suite: about 10 s.
def test_an_unknown_task_of_each_suite_names_the_closest(name, hint):
    with pytest.raises(ConfigError, match=hint) as error:
        envs.check(name, host=False)
    assert error.value.field == "env.name"


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
