"""Exported policies: played in a fresh interpreter that cannot import podracer, they choose the agent's own actions."""

import dataclasses
import errno
import json
import os

import jax
import numpy as np
import pytest

import podracer
from podracer import agents, cli, envs
from podracer.config.errors import UsageError
from podracer.envs.actions import clip_to_spec
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from podracer.experiment import trained as trained_lib
from podracer.experiment.export import export_policy
from tests.helpers import load_config, play_without_podracer

TINY = {"num_envs": 8, "unroll_length": 2, "total_steps": 16, "cpu_devices": 1, "network.hidden_sizes": (8,)}
LSTM = {"network.core": "lstm", "network.core_size": 8, "network.shared_torso": True}
NO_STATISTICS = {"agent.normalize_observations": False, "agent.scale_rewards": False}  # Positive by nature.
STEPS, BATCH = 6, 5


def fresh(config_name: str, overrides: dict) -> trained_lib.TrainedAgent:
    """The agent a config describes, with made-up parameters: the learner state `init` would give (its structure and
    shapes), every float drawn from N(0, 0.5^2). A checkpoint gives arrays as arbitrary; running `init` itself would
    cost a compilation of seconds."""
    config = load_config(config_name, overrides)
    agent = agents.make(config, num_updates=1)
    env = envs.make(config.env.name, **config.env.kwargs)
    like = jax.eval_shape(lambda key: agent.init(key, env.observation_spec(), env.action_spec()), jax.random.key(1))
    rng = np.random.default_rng(1)

    def made_up(leaf):
        floating = np.issubdtype(leaf.dtype, np.floating)
        return (rng.normal(scale=0.5, size=leaf.shape) if floating else np.zeros(leaf.shape)).astype(leaf.dtype)

    learner_state = jax.tree.map(made_up, like)
    specs = (env.observation_spec(), env.action_spec())
    return trained_lib.TrainedAgent(config, agent, learner_state, specs, 0, "fresh")


def inputs(trained: trained_lib.TrainedAgent, steps: int = STEPS, batch: int = BATCH) -> tuple:
    """Observations `[steps, batch, ...]` drawn at random in the spec's dtypes, and `first` `[steps, batch]`: every
    environment starts at step 0, and some start again later."""
    rng = np.random.default_rng(0)
    spec = trained.make_env().observation_spec()
    observations = jax.tree.map(lambda s: rng.uniform(size=(steps, batch, *s.shape)).astype(s.dtype), spec)
    first = rng.uniform(size=(steps, batch)) < 0.25
    first[0] = True
    return observations, first


def own_actions(trained: trained_lib.TrainedAgent, observations, first, greedy: bool) -> tuple[np.ndarray, list]:
    """The agent's own actions `[steps, batch, ...]` with the keys of the export's convention, clipped to the action
    spec as an environment receives them, and the leaves of its last state. Its other timesteps end episodes or not, with rewards, at random: the
    export sees only `first`, as the agent reads only whether a step starts an episode."""
    agent, spec = trained.agent, trained.make_env().action_spec()
    step = jax.jit(lambda *args: agent.act_with_state(trained.acting_params, *args, greedy=greedy))
    rng = np.random.default_rng(1)
    steps, batch = first.shape
    state, actions = agent.state_for(batch), []
    for t in range(steps):
        step_type = np.where(first[t], FIRST, rng.choice([MID, LAST], batch)).astype(np.int32)
        reward, discount = rng.normal(size=batch).astype(np.float32), rng.integers(0, 2, batch).astype(np.float32)
        timestep = TimeStep(step_type, reward, discount, jax.tree.map(lambda x, t=t: x[t], observations))
        keys = jax.random.split(jax.random.key(0 if greedy else t), batch)
        action, _, state = step(timestep, state, keys)
        actions.append(np.asarray(clip_to_spec(action, spec)))
    return np.stack(actions), jax.tree.leaves(state)


def save_inputs(path: str, observations, first: np.ndarray) -> None:
    """`NAME.inputs.npz` as tests/programs/play_exported.py reads it: dict observations under `observation/KEY/...`."""
    flat = jax.tree_util.tree_flatten_with_path(observations)[0]
    named = {"/".join(["observation", *(str(entry.key) for entry in path)]): leaf for path, leaf in flat}
    np.savez(path, first=first, **named)


@pytest.mark.slow  # Trains (a compilation), exports five policies and starts a fresh interpreter: about 15 s.
def test_exported_policies_act_as_the_agent_in_a_process_without_podracer(tmp_path):
    workdir = str(tmp_path / "run")
    podracer.train(load_config("anakin_catch", TINY), workdir=workdir)
    catch, lstm = trained_lib.load(workdir), fresh("anakin_catch", LSTM)
    cases = {  # name: (agent, greedy, batch_size)
        "catch_greedy": (catch, True, None),
        "catch_sample": (catch, False, None),
        "lstm_greedy": (lstm, True, None),
        "lstm_sample": (lstm, False, BATCH),
        "nested_greedy": (fresh("anakin_catch", {"env.name": "nested_catch"}), True, None),
        "gaussian_sample": (fresh("anakin_pendulum_ppo", NO_STATISTICS), False, None),
    }
    folder, expected = tmp_path / "artefacts", {}
    folder.mkdir()
    for name, (trained, greedy, batch_size) in cases.items():
        description = export_policy(trained, str(folder / f"{name}.bin"), greedy=greedy, batch_size=batch_size)
        assert (description["greedy"], description["recurrent"]) == (greedy, trained.agent.recurrent)
        observations, first = inputs(trained)
        save_inputs(str(folder / f"{name}.inputs.npz"), observations, first)
        expected[name] = own_actions(trained, observations, first, greedy)
    assert play_without_podracer(str(folder)) == {"podracer_loaded": False}
    for name, (actions, state) in expected.items():
        exported = np.load(folder / f"{name}.actions.npy")
        exported_state = np.load(folder / f"{name}.state.npz")
        assert len(exported_state.files) == len(state) == (2 if name.startswith("lstm") else 0)  # LSTM: (c, h).
        for i, leaf in enumerate(state):
            np.testing.assert_array_equal(exported_state[f"arr_{i}"], leaf, err_msg=name)
        if name.startswith("gaussian"):
            np.testing.assert_allclose(exported, actions, rtol=1e-5, atol=1e-6)
            assert np.abs(actions).max() == 2.0  # Some samples were clipped to Pendulum's bounds [-2, 2].
        else:
            np.testing.assert_array_equal(exported, actions, err_msg=name)


def test_an_export_acts_on_any_batch_size_and_describes_itself(tmp_path):
    trained = fresh("anakin_catch", {})
    description = export_policy(trained, str(tmp_path / "policy.bin"))
    assert sorted(os.listdir(tmp_path)) == ["policy.bin", "policy.json"]
    assert json.loads((tmp_path / "policy.json").read_text()) == description
    assert description["call"] == "actions = policy.call(observations)" and description["batch_size"] is None
    assert description["observation_spec"] == {"shape": [10, 5], "dtype": "float32"}
    assert description["action_spec"] == {"shape": [], "dtype": "int32", "num_values": 3}
    assert description["env"] == {"name": "catch", "kwargs": {"rows": 10, "columns": 5}}
    policy = jax.export.deserialize(bytearray((tmp_path / "policy.bin").read_bytes()))
    for batch in (1, 7):
        observations, first = inputs(trained, steps=1, batch=batch)
        expected = own_actions(trained, observations, first, greedy=True)[0][0]
        np.testing.assert_array_equal(policy.call(observations[0]), expected)


def test_bad_requests_are_refused_before_anything_is_traced_or_written(tmp_path):
    trained = fresh("anakin_catch", LSTM)
    (tmp_path / "taken").mkdir()
    (tmp_path / "policy.state.bin").mkdir()
    refused = {
        str(tmp_path / "taken"): "--out .*taken is a folder",
        str(tmp_path / "policy.bin"): "--out .*policy.state.bin is a folder",  # The recurrent state's file.
        str(tmp_path / "missing" / "policy.bin"): "--out .*its folder .*missing does not exist",
        str(tmp_path / "policy.json"): "--out .*the policy's description is written as",
    }
    for out, message in refused.items():
        with pytest.raises(UsageError, match=message):
            export_policy(trained, out)
    with pytest.raises(UsageError, match="--batch-size 0: must be a positive integer"):
        export_policy(trained, str(tmp_path / "lstm.bin"), batch_size=0)
    without_greedy = trained_lib.TrainedAgent(
        trained.config,
        dataclasses.replace(trained.agent, greedy_act=None),
        trained.learner,
        trained.specs,
        0,
        "fresh",
    )
    with pytest.raises(UsageError, match="--sample: this agent has no greedy_act"):
        export_policy(without_greedy, str(tmp_path / "lstm.bin"))
    for option in ("self_play", "observe_state"):  # A search from the environment's state, a type export refuses.
        config = trained.config.copy_and_resolve_references()
        with config.unlocked():
            config.env.kwargs[option] = True
        searching = dataclasses.replace(trained, config=config)
        with pytest.raises(UsageError, match=f"with {option}: the agent searches from"):
            export_policy(searching, str(tmp_path / "lstm.bin"))
    assert sorted(os.listdir(tmp_path)) == ["policy.state.bin", "taken"]


def test_a_failed_write_leaves_the_files_as_they_were(tmp_path, monkeypatch):
    (tmp_path / "policy.bin").write_bytes(b"an earlier export")

    def disk_full(source, target):
        raise OSError(errno.ENOSPC, "No space left on device", target)

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError, match="No space left"):
        export_policy(fresh("anakin_catch", {}), str(tmp_path / "policy.bin"))
    assert os.listdir(tmp_path) == ["policy.bin"] and (tmp_path / "policy.bin").read_bytes() == b"an earlier export"


def test_an_export_made_beside_an_accelerator_runs_on_cpu_too(tmp_path, monkeypatch):
    """On a GPU machine the export is lowered for CUDA and for CPU; here, where only CPU runs, the CPU part acts."""
    monkeypatch.setattr(jax.export, "default_export_platform", lambda: "cuda")
    trained = fresh("anakin_catch", {})
    assert export_policy(trained, str(tmp_path / "policy.bin"))["platforms"] == ["cuda", "cpu"]
    policy = jax.export.deserialize(bytearray((tmp_path / "policy.bin").read_bytes()))
    observations, first = inputs(trained, steps=1)
    assert policy.platforms == ("cuda", "cpu")
    np.testing.assert_array_equal(policy.call(observations[0]), own_actions(trained, observations, first, True)[0][0])


@pytest.mark.slow  # Uses the trained run (conftest.catch_run).
def test_podracer_export_writes_the_runs_greedy_policy_and_refuses_a_bad_out(catch_run, tmp_path, capsys):
    workdir, result = catch_run
    out = tmp_path / "policy.bin"
    assert cli.run(["export", workdir, "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out and sorted(os.listdir(tmp_path)) == ["policy.bin", "policy.json"]
    policy = jax.export.deserialize(bytearray(out.read_bytes()))
    observations = jax.random.uniform(jax.random.key(0), (5, 10, 5))
    agent = trained_lib.load(workdir).agent
    keys = jax.random.split(jax.random.key(1), 5)
    expected, _ = agent.greedy_act(result.acting_params, observations, keys)
    np.testing.assert_array_equal(policy.call(observations), expected)
    assert cli.run(["export", workdir, "--out", str(tmp_path / "no" / "policy.bin")]) == 2
    assert "--out" in capsys.readouterr().err and not (tmp_path / "no").exists()
