"""`scripts/launch_tpu.sh`, checked through its dry run: the gcloud commands it would run, and its usage errors.

A fake `gcloud` (and `tar`) on PATH records any call to a marker file, so a dry run that ran anything fails.
"""

import os
import shlex
import signal
import stat
import tarfile

import pytest

from tests.helpers import HANG_SECONDS, ROOT, start, wait_until
from tests.helpers import run as run_command

SCRIPT = os.path.join(ROOT, "scripts", "launch_tpu.sh")
CATCH = "configs/anakin_catch.py"
V4_32 = ["--name", "pr-test", "--zone", "us-central2-b", "--accelerator-type", "v4-32", "--config", CATCH]


@pytest.fixture(scope="module")
def fake_bin(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fake-bin")
    marker = directory / "called"
    for tool in ("gcloud", "tar"):
        path = directory / tool
        path.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{marker}"\n')
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return directory, marker


def script_env(bin_dir, **variables) -> dict:
    """This process's environment with `bin_dir` first on PATH (its fakes shadow the real tools), and `variables`."""
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **variables)


def launch(fake_bin, *args, cwd=ROOT):
    return run_command(["bash", SCRIPT, *args], env=script_env(fake_bin[0]), cwd=cwd)


def dry_run(fake_bin, *args):
    """The commands a dry run prints, each split into its arguments as a shell would."""
    result = launch(fake_bin, "--dry-run", *args)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("+ ") for line in lines), result.stdout
    assert not fake_bin[1].exists(), f"a dry run ran: {fake_bin[1].read_text()}"
    return [shlex.split(line[2:]) for line in lines]


def gcloud(commands, verb):
    return [c for c in commands if c[:5] == ["gcloud", "compute", "tpus", "tpu-vm", verb]]


def option(command, name):
    values = [arg.split("=", 1)[1] for arg in command if arg.startswith(f"{name}=")]
    assert len(values) == 1, (name, command)
    return values[0]


def test_v4_32_creates_copies_installs_runs_on_every_worker_and_fetches_the_logs(fake_bin):
    commands = dry_run(fake_bin, *V4_32, "--spot", "--", "--config.num_envs=4096", "--config.seed=3")
    [create] = gcloud(commands, "create")
    assert create[5] == "pr-test" and commands[0] == create
    assert option(create, "--zone") == "us-central2-b"
    assert option(create, "--accelerator-type") == "v4-32"
    assert option(create, "--version") == "tpu-ubuntu2204-base"
    assert "--spot" in create and "--preemptible" not in create

    [tar] = [c for c in commands if c[0] == "tar"]
    assert "-czf" in tar and "--null" in tar
    [copy, fetch] = gcloud(commands, "scp")
    assert copy[5].endswith("podracer.tar.gz") and copy[6] == "pr-test:podracer.tar.gz"
    assert option(copy, "--worker") == "all" and option(copy, "--zone") == "us-central2-b"

    [setup, run] = gcloud(commands, "ssh")
    for command in (setup, run):
        assert command[5] == "pr-test" and option(command, "--worker") == "all"
    assert "tar -xzf podracer.tar.gz" in option(setup, "--command")
    assert "python3.11 -m venv .venv && .venv/bin/pip install -e" in option(setup, "--command")
    assert "apt-get install -y -q python3.11 python3.11-venv" in option(setup, "--command")
    remote = option(run, "--command")
    assert "podracer train --config configs/anakin_catch.py --config.replicas=4 --workdir runs/anakin_catch" in remote
    assert remote.endswith("--config.num_envs=4096 --config.seed=3")

    assert option(fetch, "--worker") == "0" and "--recurse" in fetch
    assert fetch[-4:-2] == ["pr-test:podracer/runs/anakin_catch", os.path.join(ROOT, "runs") + "/"]
    assert commands.index(setup) < commands.index(run) < commands.index(fetch)
    assert not gcloud(commands, "delete")


@pytest.mark.parametrize("accelerator_type, workers", [("v4-8", 1), ("v2-8", 1), ("v3-32", 4), ("v5p-128", 16)])
def test_replicas_is_the_number_of_hosts(fake_bin, accelerator_type, workers):
    args = ["--name", "pr-test", "--zone", "z", "--accelerator-type", accelerator_type, "--config", CATCH]
    [_, run] = gcloud(dry_run(fake_bin, *args), "ssh")
    assert f"--config.replicas={workers} " in option(run, "--command")


def test_workers_flag_for_types_without_a_known_host_count(fake_bin):
    args = [
        "--name",
        "pr-test",
        "--zone",
        "z",
        "--accelerator-type",
        "v5litepod-16",
        "--workers",
        "4",
        "--config",
        CATCH,
    ]
    [_, run] = gcloud(dry_run(fake_bin, *args), "ssh")
    assert "--config.replicas=4 " in option(run, "--command")


def test_extra_arguments_reach_podracer_intact_through_the_remote_shell(fake_bin, tmp_path):
    extra = ["--config.env.name=four rooms", '--config.note=it\'s "quoted" $HOME `x` ;|&', "--config.empty="]
    [_, run] = gcloud(dry_run(fake_bin, *V4_32, "--workdir", "runs/my run", "--", *extra), "ssh")
    # Run the remote command with bash (the workers' shell) against a stand-in podracer that prints its argv.
    podracer = tmp_path / "podracer" / ".venv" / "bin" / "podracer"
    podracer.parent.mkdir(parents=True)
    podracer.write_text('#!/bin/sh\nfor arg in "$@"; do printf "%s\\n" "$arg"; done\n')
    podracer.chmod(0o755)
    result = run_command(["bash", "-c", option(run, "--command")], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "train",
        "--config",
        CATCH,
        "--config.replicas=4",
        "--workdir",
        "runs/my run",
        *extra,
    ]


def test_delete_adds_a_final_delete_and_preemptible_the_older_flag(fake_bin):
    commands = dry_run(fake_bin, *V4_32, "--preemptible", "--project", "my-project", "--delete")
    [create] = gcloud(commands, "create")
    assert "--preemptible" in create and "--spot" not in create
    assert commands[-1] == [
        "gcloud",
        "compute",
        "tpus",
        "tpu-vm",
        "delete",
        "pr-test",
        "--zone=us-central2-b",
        "--project=my-project",
        "--quiet",
    ]
    assert all(option(c, "--project") == "my-project" for c in commands if c[0] == "gcloud")


def test_skip_create_reuses_the_slice(fake_bin):
    commands = dry_run(
        fake_bin,
        "--name",
        "pr-test",
        "--zone",
        "z",
        "--workers",
        "2",
        "--config",
        CATCH,
        "--skip-create",
        "--no-fetch",
        "--workdir",
        "runs/again",
    )
    assert not gcloud(commands, "create") and not gcloud(commands, "delete")
    assert len(gcloud(commands, "scp")) == 1 and len(gcloud(commands, "ssh")) == 2
    assert "--config.replicas=2 --workdir runs/again" in option(gcloud(commands, "ssh")[1], "--command")


def test_delete_only_prints_only_the_delete(fake_bin):
    commands = dry_run(fake_bin, "--name", "pr-test", "--zone", "us-central2-b", "--delete-only")
    assert commands == [["gcloud", "compute", "tpus", "tpu-vm", "delete", "pr-test", "--zone=us-central2-b", "--quiet"]]


def test_help(fake_bin):
    result = launch(fake_bin, "--help")
    assert result.returncode == 0
    for flag in ("--accelerator-type", "--spot", "--workers", "--skip-create", "--delete-only", "--dry-run"):
        assert flag in result.stdout


BAD_ARGUMENTS = [
    # (arguments, words the error must contain)
    (V4_32[2:], ["--name", "required"]),
    (["--name", "pr-test", "--accelerator-type", "v4-8", "--config", CATCH], ["--zone", "required"]),
    ([*V4_32, "--colour", "red"], ["unknown option --colour"]),
    ([*V4_32, "stray"], ["unexpected argument stray"]),
    (["--name", "pr-test", "--zone", "z", "--config", CATCH], ["--accelerator-type", "required"]),
    (
        ["--name", "pr-test", "--zone", "z", "--accelerator-type", "v5litepod-16", "--config", CATCH],
        ["--workers", "v5litepod-16"],
    ),
    ([*V4_32[:-1], "configs/no_such_config.py"], ["--config", "no such file"]),
    (V4_32[:-2], ["--config", "required"]),
    ([*V4_32, "--workers", "four"], ["--workers", "positive integer"]),
    ([*V4_32, "--spot", "--preemptible"], ["--spot", "--preemptible"]),
    (["--name", "Bad_Name", *V4_32[2:]], ["--name", "lowercase"]),
    ([*V4_32, "--workdir"], ["--workdir needs a value"]),
]


@pytest.mark.parametrize("args, words", BAD_ARGUMENTS)
def test_bad_arguments_exit_2_naming_the_flag(fake_bin, args, words):
    result = launch(fake_bin, "--dry-run", *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    for word in words:
        assert word in result.stderr
    assert not fake_bin[1].exists()


def test_a_config_outside_the_project_is_refused(fake_bin, tmp_path):
    config = tmp_path / "mine.py"
    config.write_text(open(os.path.join(ROOT, CATCH)).read())
    result = launch(fake_bin, "--dry-run", *V4_32[:-1], str(config))
    assert result.returncode == 2 and "not inside the project" in result.stderr


def test_runs_from_another_directory(fake_bin, tmp_path):
    result = launch(fake_bin, "--dry-run", *V4_32[:-1], os.path.join(ROOT, CATCH), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--config configs/anakin_catch.py --config.replicas=4" in result.stdout


# Without --dry-run, against a fake gcloud that logs its arguments (and keeps the tarball it is asked to copy).
FAKE_GCLOUD = r"""#!/bin/bash
printf '%q ' "$@" >> "$FAKE_DIR/log"; echo >> "$FAKE_DIR/log"
for arg in "$@"; do [[ $arg == *.tar.gz && -f $arg ]] && cp "$arg" "$FAKE_DIR/copied.tar.gz"; done
# The flag appears once this very process has become `sleep` (however long that takes on a busy machine): a
# Ctrl-C that came while bash still ran here, between a `touch` and a foreground `sleep`, would only be acted on
# after the whole sleep.
if [[ -n ${FAKE_SLEEP_ON:-} && "$*" == *"$FAKE_SLEEP_ON"* ]]; then
  (
    while [[ -e /proc/$$ && $(cat /proc/$$/comm 2>/dev/null) != sleep ]]; do sleep 0.01; done
    touch "$FAKE_DIR/sleeping"
  ) >/dev/null 2>&1 &
  exec sleep 20
fi
if [[ -n ${FAKE_FAIL_ON:-} && "$*" == *"$FAKE_FAIL_ON"* ]]; then exit 7; fi
exit 0
"""


def real_run(tmp_path, *args, popen=False, **env_overrides):
    """The script run for real against FAKE_GCLOUD; with `popen`, started in a process group of its own instead."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gcloud").write_text(FAKE_GCLOUD)
    (bin_dir / "gcloud").chmod(0o755)
    env = script_env(bin_dir, FAKE_DIR=str(tmp_path), TMPDIR=str(tmp_path), **env_overrides)
    command = ["bash", SCRIPT, *args, "--no-fetch"]
    if popen:
        return start(command, env=env, new_session=True)
    return run_command(command, env=env)


def logged_calls(tmp_path):
    return [shlex.split(line) for line in (tmp_path / "log").read_text().splitlines()]


def test_for_real_with_a_fake_gcloud_ships_the_tracked_files_and_cleans_up(tmp_path):
    result = real_run(tmp_path, *V4_32)
    assert result.returncode == 0, result.stderr
    verbs = [call[3] for call in logged_calls(tmp_path)]
    assert verbs == ["create", "scp", "ssh", "ssh"]
    with tarfile.open(tmp_path / "copied.tar.gz") as tarball:
        names = set(tarball.getnames())
    tracked = run_command(["git", "ls-files"]).stdout.split()
    assert names == {name for name in tracked if os.path.lexists(os.path.join(ROOT, name))}
    assert CATCH in names and "pyproject.toml" in names and not any(n.startswith(".venv/") for n in names)
    assert not list(tmp_path.glob("podracer-launch.*")), "the local staging directory was left behind"


def test_a_failed_run_still_deletes_the_slice_and_keeps_the_exit_status(tmp_path):
    result = real_run(tmp_path, *V4_32, "--delete", FAKE_FAIL_ON="podracer train")
    assert result.returncode == 7
    assert [call[3] for call in logged_calls(tmp_path)] == ["create", "scp", "ssh", "ssh", "delete"]


def test_a_failed_create_never_deletes(tmp_path):
    result = real_run(tmp_path, *V4_32, "--delete", FAKE_FAIL_ON=" create ")
    assert result.returncode == 7
    assert [call[3] for call in logged_calls(tmp_path)] == ["create"]


def test_ctrl_c_during_the_run_deletes_the_slice(tmp_path):
    process = real_run(tmp_path, *V4_32, "--delete", popen=True, FAKE_SLEEP_ON="podracer train")
    wait_until((tmp_path / "sleeping").exists, "the remote run to start", [process])
    os.killpg(process.pid, signal.SIGINT)  # as the terminal does on Ctrl-C: the script and gcloud together
    _, stderr = process.communicate(timeout=HANG_SECONDS)
    assert process.returncode == 130, stderr
    assert [call[3] for call in logged_calls(tmp_path)] == ["create", "scp", "ssh", "ssh", "delete"]
