"""Config files: loading them, and overrides read as each field's type or refused naming the field."""

import pytest

import podracer
from podracer.config import loading
from podracer.config.errors import ConfigFileError
from tests.helpers import ROOT

CATCH = f"{ROOT}/configs/anakin_catch.py"
CARTPOLE_IMPALA = f"{ROOT}/configs/sebulba_cartpole_impala.py"


def test_overrides_given_as_text_are_read_as_each_fields_type():
    config = loading.load(
        CATCH,
        {
            "num_envs": "32",
            "total_steps": "1e5",
            "optimizer.learning_rate": "0.01",
            "network.shared_torso": "false",
            "network.hidden_sizes": "(32,)",
            "env.name": "cartpole",
            "seed": 7,
        },
    )
    assert config.num_envs == 32 and config.total_steps == 100_000 and config.seed == 7
    assert config.optimizer.learning_rate == 0.01 and config.network.shared_torso is False
    assert config.network.hidden_sizes == (32,) and config.env.name == "cartpole"


def test_environment_options_are_open_other_groups_are_locked():
    config = loading.load(CARTPOLE_IMPALA, {"env.kwargs.num_threads": "2", "env.kwargs.max_episode_steps": "200"})
    assert dict(config.env.kwargs) == {"num_threads": 2, "max_episode_steps": 200}
    config.env.kwargs.reward_threshold = 100.0  # An environment's options are the user's.
    with pytest.raises(AttributeError):
        config.num_envz = 3  # A typo in Python is caught too.


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"num_envz": "8"}, ["config.num_envz", "no such field", "num_envs"]),
        ({"network.hidden": "3"}, ["config.network.hidden", "no such field", "hidden_sizes"]),
        ({"agent.gamma.x": "3"}, ["config.agent.gamma.x", "no such field"]),
        ({"num_envs": "many"}, ["config.num_envs", "'many'", "whole number"]),
        ({"num_envs": "6.5"}, ["config.num_envs", "'6.5'", "whole number"]),
        ({"network.hidden_sizes": "64"}, ["config.network.hidden_sizes", "tuple", "(64, 64)"]),
        ({"network.hidden_sizes": "(64"}, ["config.network.hidden_sizes", "tuple"]),
        ({"network.shared_torso": "maybe"}, ["config.network.shared_torso", "True or False"]),
        ({"optimizer.learning_rate": "fast"}, ["config.optimizer.learning_rate", "a number"]),
        ({"network": "mlp"}, ["config.network", "group of fields"]),
    ],
)
def test_an_override_that_cannot_apply_is_a_config_error_naming_the_field(overrides, words):
    with pytest.raises(podracer.ConfigError) as error:
        loading.load(CATCH, overrides)
    for word in words:
        assert word in str(error.value)


def test_a_missing_file_or_one_without_get_config_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config file"):
        loading.load(str(tmp_path / "nope.py"))
    (tmp_path / "empty.py").write_text("X = 1\n")
    with pytest.raises(ValueError, match="defines no get_config"):
        loading.load(str(tmp_path / "empty.py"))


def test_a_config_file_that_raises_names_its_line_and_keeps_the_cause_but_a_config_error_stays_as_it_is(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("import podracer\n\n\ndef get_config():\n    return podracer.defaults('ppo', 'anywhere')\n")
    with pytest.raises(ConfigFileError, match=r"mine\.py, line 5: ValueError: Unknown architecture 'anywhere'") as e:
        loading.load(str(path))
    assert isinstance(e.value.__cause__, ValueError) and "podracer.defaults('ppo', 'anywhere')" in str(e.value)
    path.write_text(
        "import podracer\n\n\ndef get_config():\n    raise podracer.ConfigError('seed', 'is cursed', 'pick 7')\n"
    )
    with pytest.raises(podracer.ConfigError, match="config.seed: is cursed; pick 7"):
        loading.load(str(path))
