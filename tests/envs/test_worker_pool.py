"""The worker processes of host environments, Gymnasium's and PettingZoo's: failures reported and ended, imports,
values sent by value.

The Gymnasium environments (`gymnasium_envs`) are registered here, in the test
module, as a user registers their own: the workers only ever see the `EnvSpec`.
PettingZoo's (`pettingzoo_envs`) are named by their module, which each worker imports.
"""

import functools
import os
import signal

import chex
import gymnasium
import numpy as np
import pytest

from podracer.envs import FIRST, MID
from podracer.envs.host_suites.gymnasium_env import GymnasiumEnvironment
from tests.envs.gymnasium_envs import Counter, Crashing

COUNTER = "PodracerPoolCounter-v0"
gymnasium.register(COUNTER, entry_point=Counter)
gymnasium.register("PodracerCrashing-v0", entry_point=Crashing)
LEAVERS = "tests.envs.pettingzoo_envs"

# Worker failures are also reported by Gymnasium's logger, as warnings.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:gymnasium.vector.async_vector_env")


# How long a hung worker is waited for: long enough that a healthy worker answers first on any host, however busy.
HUNG_STEP_SECONDS = 4.0  # A healthy worker steps these environments in microseconds.


def crashing(suite: str, how: str, crash_seed: int, **kwargs):
    """Two environments of `suite`, the one seeded `crash_seed` failing on its second step as `how` says,
    and an action for them; the prefix of their errors."""
    if suite == "gymnasium":
        env = GymnasiumEnvironment("PodracerCrashing-v0", 2, 0, how=how, crash_seed=crash_seed, **kwargs)
        return env, np.zeros(2, np.int64), "Gymnasium environment 'PodracerCrashing-v0': "
    pettingzoo_env = pytest.importorskip("podracer.envs.host_suites.pettingzoo_env")
    env = pettingzoo_env.make(LEAVERS, 2, 0, how=how, crash_seed=crash_seed, **kwargs)
    return env, np.zeros((2, 2), np.int64), f"PettingZoo environment '{LEAVERS}': "


@pytest.mark.parametrize("suite", ["gymnasium", "pettingzoo"])
@pytest.mark.parametrize(
    "how", ["raise", "unpicklable", "exit", "sigkill", pytest.param("hang", marks=pytest.mark.slow)]
)
def test_a_failing_worker_raises_runtime_error_naming_the_environment(suite, how):
    """Exceptions (even unpicklable ones), a dying worker and a hung one: a clear error naming it, not a hang.

    Only the hung worker waits out the step timeout; the others fail as soon as
    the worker does, whatever the timeout (the default here).
    """
    crash_seed = -1 if how == "sigkill" else 1  # sigkill: no environment fails by itself; the test kills worker 1.
    timeout = {"step_timeout_seconds": HUNG_STEP_SECONDS} if how == "hang" else {}
    env, action, where = crashing(suite, how, crash_seed, **timeout)
    processes = env._pool.vec.processes
    env.reset()
    env.step(action)
    if how == "sigkill":
        os.kill(processes[1].pid, signal.SIGKILL)
        processes[1].join()
    expected = {
        "raise": r"environment 1 of 2 raised in step: ValueError: boom at step 2\nTraceback in the worker",
        "unpicklable": r"environment 1 of 2 raised in step: ValueError: \('holds a lock'",
        "exit": r"the worker process of environment 1 \(exit code 3\) of 2 died in step",
        "sigkill": r"the worker process of environment 1 \(killed by SIGKILL\) of 2 died in step",
        "hang": rf"environment 1 of 2 gave no answer to step within {HUNG_STEP_SECONDS:g} s \(step_timeout_seconds\)",
    }[how]
    with pytest.raises(RuntimeError, match=where + expected):
        env.step(action)
    assert not any(p.is_alive() for p in processes)  # Every worker is ended.
    with pytest.raises(RuntimeError, match="failed and was closed"):
        env.step(action)
    env.close()


@pytest.mark.parametrize("suite", ["gymnasium", "pettingzoo"])
def test_workers_and_this_thread_give_the_same_timesteps_for_the_same_seeds_and_actions(suite):
    """Every leaf of every timestep, over episodes that end (Counter's action 2, MPE's 4-step limit) and restart
    with their random stream continued (Counter's start value and MPE's positions are drawn at every reset)."""
    rng = np.random.default_rng(0)
    if suite == "gymnasium":
        make, actions = functools.partial(GymnasiumEnvironment, COUNTER), rng.integers(0, 3, (30, 3))
        options = [{"autoreset_mode": "next_step"}, {"autoreset_mode": "same_step"}]
    else:
        pytest.importorskip("mpe2")
        pettingzoo_env = pytest.importorskip("podracer.envs.host_suites.pettingzoo_env")
        make, actions = functools.partial(pettingzoo_env.make, "mpe2.simple_spread_v3"), rng.integers(0, 5, (30, 3, 3))
        options = [{"max_cycles": 4}]
    for kwargs in options:
        runs = []
        for mode in ("async", "sync"):
            with make(3, 5, vectorization_mode=mode, **kwargs) as env:
                runs.append([env.reset()] + [env.step(action) for action in actions])
        assert sum(int((t.step_type == FIRST).sum()) for t in runs[0][1:]) >= 3  # Some episodes ended and restarted.
        for in_workers, here in zip(*runs, strict=True):
            chex.assert_trees_all_equal(in_workers, here)


def test_in_this_thread_an_environment_that_raises_ends_the_batch_with_an_error_naming_it():
    env = GymnasiumEnvironment("PodracerCrashing-v0", 2, 0, how="raise", crash_seed=1, vectorization_mode="sync")
    env.reset()
    env.step(np.zeros(2, np.int64))
    with pytest.raises(RuntimeError, match=r"'PodracerCrashing-v0': an environment raised in step: ValueError: boom"):
        env.step(np.zeros(2, np.int64))
    with pytest.raises(RuntimeError, match="failed and was closed"):
        env.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="vectorization_mode must be one of"):
        GymnasiumEnvironment(COUNTER, 1, 0, vectorization_mode="threads")


def test_workers_import_neither_podracer_nor_jax_and_leave_ctrl_c_to_the_main_process(ctrl_c_raises_keyboard_interrupt):
    # Spawned from this process, the workers start with its handling of Ctrl-C, as in a terminal, however the suite
    # was launched (forkserver's would start with their server's, fixed by whichever test started it).
    with GymnasiumEnvironment(COUNTER, 2, seed=0, context="spawn") as env:
        assert env._pool.vec.call("imported", "gymnasium") == (True, True)
        assert env._pool.vec.call("imported", "podracer") == env._pool.vec.call("imported", "jax") == (False, False)
        env.reset()
        for process in env._pool.vec.processes:
            os.kill(process.pid, signal.SIGINT)
        assert env.step(np.array([1, 1])).step_type.tolist() == [MID, MID]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # The main process still takes Ctrl-C.


def test_a_class_defined_in_a_function_travels_by_value():
    """As a class defined in a notebook cell does: the workers cannot import it, cloudpickle sends it whole."""

    class Doubled(Counter):
        def step(self, action):
            observation, reward, terminated, truncated, info = super().step(action)
            return observation, 2 * reward, terminated, truncated, info

    gymnasium.register("PodracerLocal-v0", entry_point=Doubled)
    with GymnasiumEnvironment("PodracerLocal-v0", 1, seed=0) as env:
        env.reset()
        assert env.step(np.array([1])).reward[0] == 22
        assert env._pool.vec.call("imported", "tests.envs.test_worker_pool") == (False,)


def test_pettingzoo_workers_do_not_import_jax():
    """Their code (`pettingzoo_worker`, `worker_env`) travels by value: imported by name, it would import podracer,
    and JAX with it. JAX's compiled library is mapped into every process that imported it, this one included."""
    pettingzoo_env = pytest.importorskip("podracer.envs.host_suites.pettingzoo_env")
    if not os.path.exists(f"/proc/{os.getpid()}/maps"):
        pytest.skip("reads /proc/PID/maps")
    assert _maps_jaxlib(os.getpid())
    with pettingzoo_env.make(LEAVERS, 2, 0, context="spawn") as env:
        env.reset()
        assert not any(_maps_jaxlib(process.pid) for process in env._pool.vec.processes)


def _maps_jaxlib(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as maps:
        return "/jaxlib/" in maps.read()
