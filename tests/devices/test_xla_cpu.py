"""`config.cpu_threads` sizes XLA:CPU's thread pool and `config.cpu_devices` splits the CPU into devices, and only
where they can."""

import os

import jax
import pytest

import podracer
from podracer.devices.xla_cpu import Shares, child_environment, cpu_device_count, unroll_threefry, with_forced_devices
from tests.helpers import ROOT, run_module

USER_SETTINGS = ("PJRT_NPROC", "JAX_NUM_CPU_DEVICES", "XLA_FLAGS")


def _setup(setting: str, value: int, when: str = "before", **user_settings: str) -> str:
    env = {name: user_settings.get(name) for name in USER_SETTINGS}  # Unset unless given.
    result = run_module("xla_cpu_setup", setting, str(value), when, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cpu_threads_sizes_the_pool_before_jax_starts():
    threads = len(os.sched_getaffinity(0)) + 1  # Not JAX's default of one per core, whatever the machine.
    assert f"pool threads: {threads}" in _setup("threads", threads)


def test_zero_keeps_one_thread_per_core():
    assert f"pool threads: {len(os.sched_getaffinity(0))}" in _setup("threads", 0)


def test_the_users_thread_count_wins():
    assert "pool threads: 2" in _setup("threads", 1, PJRT_NPROC="2")


def test_cpu_devices_splits_the_cpu_before_jax_starts():
    assert "devices: 3" in _setup("devices", 3)


@pytest.mark.parametrize(
    "user_settings",
    [{"JAX_NUM_CPU_DEVICES": "4"}, {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}],
    ids=["environment", "xla-flag"],
)
def test_the_users_device_count_wins(user_settings):
    assert "devices: 4" in _setup("devices", 2, **user_settings)


@pytest.mark.parametrize(
    "setting, field, untouched", [("threads", "cpu_threads", "pool threads"), ("devices", "cpu_devices", "devices")]
)
def test_too_late_is_a_warning_not_a_silent_no_op(setting, field, untouched):
    output = _setup(setting, 3, when="after")
    assert f"warning: config.{field}=3 has no effect" in output
    default = len(os.sched_getaffinity(0)) if setting == "threads" else 1
    assert f"{untouched}: {default}" in output


@pytest.mark.slow  # 11 s: two training runs in fresh processes.
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_one_thread_gives_the_same_parameters_on_one_core_and_on_two():
    outputs = []
    for cores in ("0", ",".join(str(core) for core in sorted(os.sched_getaffinity(0)))):
        result = run_module("train_on_cores", cores, env={"PJRT_NPROC": None})
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]


def test_unrolled_threefry_draws_the_same_numbers_without_a_loop():
    unroll_threefry()
    draw = jax.jit(lambda key: jax.random.randint(key, (6,), 0, 1000))
    assert "stablehlo.while" not in draw.lower(jax.random.key(0)).as_text()
    assert draw(jax.random.key(0)).tolist() == [789, 0, 712, 373, 771, 347]  # JAX's rolled loop draws these.


@pytest.mark.parametrize(
    "counts, smallest, cores, devices",
    [
        ((512,), 64, 2, 2),  # make run's Catch on the CI machine: two devices of 256.
        ((512,), 64, 16, 8),  # No device under 64 environments.
        ((512,), 1, 16, 16),
        ((512,), 1, 12, 8),  # The most devices of whole batches within 12 cores.
        ((4,), 64, 16, 1),  # CleanRL's CartPole PPO: too small to split.
        ((7,), 1, 4, 1),  # A batch that no count but 1 divides.
        ((6, 4, 6), 1, 16, 2),  # Meta-training's members per family: every one must divide.
        ((), 1, 3, 3),
    ],
)
def test_cpu_devices_zero_is_one_per_core_as_many_as_the_batch_divides_into(counts, smallest, cores, devices):
    assert cpu_device_count(podracer.defaults("ppo"), Shares(counts, smallest), cores) == devices


def test_a_set_count_a_replicated_count_or_a_job_of_several_processes_overrides_one_per_core():
    config, shares = podracer.defaults("ppo"), Shares((512,))
    assert config.cpu_devices == 0  # Anakin's default.
    config.num_devices = 2  # The run replicates over no more.
    assert cpu_device_count(config, shares, 16) == 2
    config.num_devices, config.replicas = 0, 2  # Processes that may share one machine.
    assert cpu_device_count(config, shares, 16) == 1
    config.cpu_devices = 4
    assert cpu_device_count(config, shares, 16) == 4
    assert podracer.defaults("ppo", "sebulba").cpu_devices == 1  # Sebulba places actors and learners by position.


@pytest.mark.parametrize("agent", ["dqn", "sac", "td3", "muzero", "alphazero"])
def test_agents_with_a_buffer_per_device_default_to_one_device(agent):
    """Their batch and buffer are per device: a count taken from the machine would change the experiment."""
    assert podracer.defaults(agent).cpu_devices == 1


def test_a_forced_device_count_replaces_the_one_set_and_keeps_the_other_flags():
    flags = "--xla_force_host_platform_device_count=2 --xla_llvm_disable_expensive_passes=true"
    assert with_forced_devices(flags, 4) == (
        "--xla_llvm_disable_expensive_passes=true --xla_force_host_platform_device_count=4"
    )
    assert with_forced_devices("", 1) == "--xla_force_host_platform_device_count=1"
    assert with_forced_devices(flags, 0) == "--xla_llvm_disable_expensive_passes=true"  # No count: the config's.


def test_a_childs_environment_sets_its_threads_and_devices_and_keeps_the_rest():
    """One count, never a second appended; threads 0 is PJRT's own default (one per core), so no PJRT_NPROC."""
    parent = {
        "HOME": "/home/me",
        "PJRT_NPROC": "1",
        "JAX_NUM_CPU_DEVICES": "4",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_cpu_max_isa=AVX2",
    }
    assert child_environment(parent) == parent
    child = child_environment(parent, threads=3, devices=8)
    assert child == {
        "HOME": "/home/me",
        "PJRT_NPROC": "3",
        "XLA_FLAGS": "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=8",
    }
    assert child_environment(parent, threads=0, devices=0) == {
        "HOME": "/home/me",
        "XLA_FLAGS": "--xla_cpu_max_isa=AVX2",
    }
    assert parent["PJRT_NPROC"] == "1"  # The parent's own is left as it was.


@pytest.mark.parametrize("members, in_parallel, devices", [(0, 0, 1), (64, 0, 2), (64, 1, 1), (64, 32, 2), (8, 0, 1)])
def test_a_populations_vmapped_members_count_together_towards_a_devices_batch(members, in_parallel, devices):
    """CleanRL's CartPole PPO (4 environments) is too small to split alone, but 64 trials of it in one program step
    256 environments, 128 a device on 2 cores; 8 members of 4 step only 16 a device."""
    from podracer.anakin import anakin_settings

    config = podracer.load_config(os.path.join(ROOT, "configs", "anakin_cartpole_ppo.py"))
    config.members_in_parallel = in_parallel
    if members:
        config.population.seed = tuple(range(members))
    assert cpu_device_count(config, anakin_settings.device_shares(config), 2) == devices
