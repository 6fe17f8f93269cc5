"""What several test modules of `podracer.experiment` share: one short trained run with a workdir."""

import pytest

import podracer
from tests.helpers import load_config

EPISODES = 6  # The run's last record evaluates its final parameters on this many episodes.


@pytest.fixture(scope="session")
def catch_run(tmp_path_factory):
    """A short Catch run over the session's 2 devices whose last record holds an evaluation of its final checkpoint."""
    workdir = str(tmp_path_factory.mktemp("catch"))
    fields = {"total_steps": 8192 * 3, "evaluation.every_steps": 10**9, "evaluation.episodes": EPISODES}
    return workdir, podracer.train(load_config("anakin_catch", fields), workdir=workdir)
