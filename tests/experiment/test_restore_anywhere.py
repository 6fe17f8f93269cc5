"""A checkpoint written on several devices loads in a process that has fewer, as a user's `podracer` process does.

The session forces two CPU devices on every test process (`tests/conftest.py`), so a run trained here is saved on
two; a user's `podracer evaluate` or `export` sees the one device a plain CPU process has. The single-run case is
the command-line test's (`tests/test_cli.py`); this one is a population's member.
"""

import json
import sys

import jax
import numpy as np
import pytest

import podracer
from tests.helpers import load_config, run_as_user

MEMBER = 1
PRINT_MEMBER = (
    "import json, sys, jax, numpy as np\n"
    "from podracer.experiment import trained\n"
    "agent = trained.load(sys.argv[1], member=int(sys.argv[2]))\n"
    "print(json.dumps({'devices': jax.device_count(), "
    "'leaves': [np.asarray(leaf).tolist() for leaf in jax.tree.leaves(agent.acting_params)]}))\n"
)


@pytest.mark.slow  # Trains a population, then two fresh processes.
def test_a_population_member_saved_on_two_devices_loads_on_one_and_exports(tmp_path):
    workdir = str(tmp_path / "population")
    fields = {"total_steps": 8192, "network.hidden_sizes": (16,), "population.seed": (0, 1)}
    result = podracer.train(load_config("anakin_catch", fields), workdir=workdir)
    assert len(jax.devices()) == 2

    loaded = run_as_user(sys.executable, "-c", PRINT_MEMBER, workdir, str(MEMBER))
    assert loaded.returncode == 0, loaded.stderr
    printed = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert printed["devices"] == 1
    expected = [np.asarray(leaf)[MEMBER] for leaf in jax.tree.leaves(result.acting_params)]
    assert len(printed["leaves"]) == len(expected)
    for got, want in zip(printed["leaves"], expected, strict=True):
        np.testing.assert_array_equal(np.asarray(got, want.dtype), want)

    exported = run_as_user("podracer", "export", workdir, "--member", str(MEMBER), "--out", str(tmp_path / "p.bin"))
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "p.bin").stat().st_size > 0
