"""What each figure measures: its points, their devices and processes, and their run lengths. No measuring."""

import pytest

from podracer.bench import figure_configs, launch
from podracer.bench.figures import (
    anakin_scaling,
    evaluation_cost,
    meta_training,
    muzero_scaling,
    pipeline,
    population_scaling,
    sebulba_scaling,
    suite_rates,
)
from podracer.bench.records import EnvpoolRun, Launch, Setup, task_from_json, task_to_json

CPU_QUICK = Setup(quick=True, forced_cpu=True, max_devices=2, sebulba_env="cartpole")
CPU_FULL = Setup(quick=False, forced_cpu=True, max_devices=4, sebulba_env="pong")
ONE_GPU = Setup(quick=False, forced_cpu=False, max_devices=1, sebulba_env="pong")


@pytest.mark.parametrize(("most", "counts"), [(1, [1]), (2, [1, 2]), (6, [1, 2, 4, 6]), (8, [1, 2, 4, 8])])
def test_device_counts_double_up_to_the_most_there_are(most, counts):
    assert anakin_scaling.device_counts(most) == counts


def test_anakin_scaling_keeps_the_batch_per_device_and_runs_whole_dispatches():
    points = anakin_scaling.plan(CPU_FULL)
    assert [(p.benchmark, p.columns["devices"]) for p in points] == [
        (name, n) for name in anakin_scaling.BENCHMARKS for n in (1, 2, 4)
    ]
    catch = [p for p in points if p.benchmark == "anakin_catch"]
    assert [p.task.overrides["num_envs"] for p in catch] == [256, 512, 1024]  # The config's 512 over 2 CPU devices.
    assert [p.launch for p in catch] == [Launch(n, cpu_threads=1) for n in (1, 2, 4)]  # A process per count.
    for point in catch:  # 500K steps per device: 123 updates, logged every 2 (100 records), so 62 dispatches of 2.
        assert point.task.overrides["total_steps"] == 62 * 2 * 16 * 256 * point.columns["devices"]
        assert point.task.overrides["updates_per_dispatch"] == 2  # Fixed, so the point's budget does not change it.


def test_quick_anakin_scaling_is_catch_on_one_and_two_devices_for_three_dispatches():
    points = anakin_scaling.plan(CPU_QUICK)
    assert [(p.benchmark, p.columns["devices"]) for p in points] == [("anakin_catch", 1), ("anakin_catch", 2)]
    assert points[1].task.overrides["total_steps"] == 3 * 2 * 16 * 512  # 3 dispatches of 2 updates, 2 x 256 envs.


def test_sebulba_splits_every_way_with_environments_every_learner_count_divides():
    points = [p for p in sebulba_scaling.plan_scaling(CPU_FULL) if p.sweep == "device_split"]
    assert [(p.columns["actor_devices"], p.columns["learner_devices"]) for p in points] == [(1, 3), (2, 2), (3, 1)]
    assert [p.columns["envs_per_thread"] for p in points] == [33, 32, 32]  # 32, divisible by the learners.
    assert {p.launch for p in points} == {Launch(4, cpu_threads=0)}  # One process for every split.
    assert points[0].task.overrides["learner_device_ids"] == "(1, 2, 3)"
    assert {p.columns["network"] for p in points} == {"mlp(16)"}  # Pong's small network on CPU devices.


def test_sebulba_replicas_run_as_local_pods_of_one_actor_and_one_learner_device():
    points = [p for p in sebulba_scaling.plan_scaling(CPU_FULL) if p.sweep == "replicas"]
    assert [p.launch for p in points] == [Launch(2, cpu_threads=0, processes=r) for r in (1, 2, 4)]
    windows = sebulba_scaling.WARMUP_UPDATES + sebulba_scaling.UPDATES
    for point, replicas, window in zip(points, (1, 2, 4), (4, 2, 1), strict=True):
        steps_per_update = 20 * 32 * 2 * replicas  # Unroll x envs x threads x processes; Pong's 4 frames a step.
        assert window * 4 * steps_per_update >= sebulba_scaling.MIN_WINDOW_FRAMES > (window - 1) * 4 * steps_per_update
        assert point.task.overrides["log_every_updates"] == window
        assert point.task.overrides["total_steps"] == windows * window * steps_per_update


def test_one_accelerator_runs_actors_and_learner_on_it_and_has_no_split():
    batch = sebulba_scaling.plan_actor_batch(ONE_GPU)
    assert len(batch) == 6 and {p.launch for p in batch} == {Launch(None, cpu_threads=0)}
    assert {p.columns["network"] for p in batch} == {"impala_resnet(16,32,32)"}
    assert batch[0].task.overrides["learner_device_ids"] == "()"
    assert [p.sweep for p in sebulba_scaling.plan_scaling(ONE_GPU)] == ["replicas"] * 3  # On forced CPU devices.


def test_pipeline_steps_envpool_alone_like_the_sebulba_runs_it_is_compared_with():
    raw, host, compiled = pipeline.plan(CPU_QUICK)
    # CartPole's updates are 20 x 16 x 2 = 640 steps (frames): 32 to a window of at least 20,000, 3 windows measured.
    assert host.task.overrides["log_every_updates"] == compiled.task.overrides["log_every_updates"] == 32
    assert raw.task == EnvpoolRun(
        "CartPole-v1", threads=2, envs_per_thread=16, steps=20 * 32 * sebulba_scaling.QUICK_UPDATES
    )
    assert raw.launch == host.launch == compiled.launch  # One after the other, in the same process.
    for trained, stepping in ((host, "host"), (compiled, "compiled")):
        assert trained.columns["envs_per_thread"] == 16 and trained.columns["actor_threads"] == 2
        assert trained.columns["env_stepping"] == trained.task.overrides["env_stepping"] == stepping
    full = pipeline.plan(CPU_FULL)
    assert [p.columns["env"] for p in full] == ["Pong-v5"] * 3 + ["CartPole-v1"] * 3 + ["HalfCheetah-v4"] * 2
    assert [p.columns.get("env_stepping") for p in full] == [None, "host", "compiled"] * 2 + [None, "host"]


def test_quick_points_share_few_processes():
    points = [*anakin_scaling.plan(CPU_QUICK), *sebulba_scaling.plan_actor_batch(CPU_QUICK)]
    points += [*sebulba_scaling.plan_scaling(CPU_QUICK), *pipeline.plan(CPU_QUICK)]
    groups = launch.by_launch(points)
    assert [len(group) for group in groups.values()] == [8, 1]  # One process, then a pod of two.
    assert list(groups)[-1] == Launch(2, cpu_threads=0, processes=2)


def test_suites_are_one_device_rows_and_pong_with_its_resnet():
    points = suite_rates.plan(CPU_QUICK)
    assert [p.benchmark for p in points] == [*suite_rates.ANAKIN, "sebulba_pong_impala"]
    assert {p.columns["devices"] for p in points[:-1]} == {1}
    assert points[-1].columns["network"] == "impala_resnet(16,32,32)"


def test_populations_train_catch_on_its_two_devices_in_one_process_for_the_same_dispatches():
    points = population_scaling.plan(CPU_FULL)
    assert [p.label() for p in points] == [f"population anakin_catch members={m}" for m in (1, 8, 64)]
    assert [p.task.overrides["population.seed"] for p in points] == [
        "(0,)",
        str(tuple(range(8))),
        str(tuple(range(64))),
    ]
    assert {p.launch for p in points} == {Launch(2, cpu_threads=1)}  # The config's 2 CPU devices, of 4.
    for point, members in zip(points, (1, 8, 64), strict=True):
        assert point.task.overrides["num_devices"] == 2 and "num_envs" not in point.task.overrides  # 512 per member.
        assert point.task.overrides["total_steps"] == population_scaling.DISPATCHES * 2 * 16 * 512  # Per member.
        assert {key: point.columns[key] for key in ("members", "devices", "num_envs", "env")} == {
            "members": members,
            "devices": 2,
            "num_envs": 512,
            "env": "catch",
        }
        config = figure_configs.load_named(point.benchmark, point.task.overrides)  # As the measuring process loads it.
        assert config.population.seed == tuple(range(members))


def test_quick_populations_are_one_and_eight_members_for_three_dispatches():
    points = population_scaling.plan(CPU_QUICK)
    assert [p.columns["members"] for p in points] == [1, 8]
    assert {p.task.overrides["total_steps"] for p in points} == {anakin_scaling.QUICK_DISPATCHES * 2 * 16 * 512}
    assert {p.launch for p in points} == {anakin_scaling.plan(CPU_QUICK)[-1].launch}  # Measured beside 4a's.


def test_populations_use_every_accelerator_and_at_most_the_devices_allowed():
    assert {p.task.overrides["num_devices"] for p in population_scaling.plan(ONE_GPU)} == {1}
    assert {p.launch for p in population_scaling.plan(ONE_GPU)} == {Launch(None, cpu_threads=1)}
    one_cpu = Setup(quick=False, forced_cpu=True, max_devices=1, sebulba_env="pong")
    assert {p.launch for p in population_scaling.plan(one_cpu)} == {Launch(1, cpu_threads=1)}


def test_only_population_points_have_members():
    assert all("members" not in p.columns for p in [*anakin_scaling.plan(CPU_FULL), *suite_rates.plan(CPU_QUICK)])


def test_tasks_travel_as_json():
    points = [*anakin_scaling.plan(CPU_QUICK), *pipeline.plan(CPU_QUICK), *population_scaling.plan(CPU_FULL)]
    for point in points + evaluation_cost.plan(CPU_QUICK) + meta_training.plan(CPU_FULL):
        assert task_from_json(task_to_json(point.task)) == point.task


def test_meta_training_scales_every_entrys_members_on_the_configs_two_devices_in_one_process():
    points = meta_training.plan(CPU_FULL)
    assert [p.label() for p in points] == [f"meta anakin_lpg_gridworlds members={m}" for m in (16, 64, 256)]
    assert {p.launch for p in points} == {Launch(2, cpu_threads=1)}  # The config's 2 CPU devices, of 4.
    for point, multiple in zip(points, (1, 4, 16), strict=True):
        overrides = point.task.overrides
        assert (overrides["num_devices"], overrides["meta.updates_per_dispatch"]) == (2, 2)
        assert overrides["meta.updates"] == meta_training.DISPATCHES * 2
        config = figure_configs.load_named(point.benchmark, overrides)  # As the measuring process loads it.
        assert [members for _, _, members in config.meta.environments] == [6 * multiple, 4 * multiple, 6 * multiple]
        assert config.meta.environments[0][:2] == ("lpg_tabular", {"variant": "dense"})
        assert config.meta.envs_per_member == 4  # Fixed: the members grow, not their environments.
        assert {key: point.columns[key] for key in ("members", "devices", "num_envs", "unroll_length")} == {
            "members": 16 * multiple,
            "devices": 2,
            "num_envs": 4,
            "unroll_length": 16,
        }
    assert points[0].columns["env"] == "lpg_tabular+lpg_random_grid+lpg_delayed_chain"


def test_quick_meta_training_is_16_and_32_members_for_three_dispatches():
    points = meta_training.plan(CPU_QUICK)
    assert [p.columns["members"] for p in points] == [16, 32]
    assert {p.task.overrides["meta.updates"] for p in points} == {anakin_scaling.QUICK_DISPATCHES * 2}


def test_meta_training_uses_every_accelerator_with_members_each_device_count_divides():
    points = meta_training.plan(ONE_GPU)
    assert [p.columns["members"] for p in points] == [16, 64, 256, 1024]  # The paper's 1K policies.
    assert {p.launch for p in points} == {Launch(None, cpu_threads=1)}
    eight_gpus = Setup(quick=False, forced_cpu=False, max_devices=8, sebulba_env="pong")
    points = meta_training.plan(eight_gpus)  # 6, 4, 6 members: 4 times as many is the least 8 divides.
    assert [p.columns["members"] for p in points] == [64, 256, 1024, 4096]
    for point in points:
        config = figure_configs.load_named(point.benchmark, point.task.overrides)
        assert all(members % 8 == 0 for _, _, members in config.meta.environments)


def test_muzero_scales_like_figure_4c_then_sweeps_the_simulations_learning_from_the_first_updates():
    points = muzero_scaling.plan(CPU_FULL)
    assert [p.label() for p in points] == [
        "muzero sebulba_cartpole_muzero actor_devices=1 learner_devices=3",
        "muzero sebulba_cartpole_muzero actor_devices=2 learner_devices=2",
        "muzero sebulba_cartpole_muzero actor_devices=3 learner_devices=1",
        *[f"muzero sebulba_cartpole_muzero replicas={n}" for n in (1, 2, 4)],
        *[f"muzero sebulba_cartpole_muzero simulations={n}" for n in muzero_scaling.SIMULATIONS],
    ]
    assert all(p.task.overrides["agent.min_replay_size"] == 1 for p in points)
    assert {p.launch for p in points if p.sweep == "simulations"} == {Launch(2, cpu_threads=0)}
    quick = muzero_scaling.plan(CPU_QUICK)
    assert [p.columns["simulations"] for p in quick if p.sweep == "simulations"] == list(
        muzero_scaling.QUICK_SIMULATIONS
    )


def test_evaluation_trains_catch_then_cartpole_evaluating_every_n_records_by_the_wall_clock():
    points = evaluation_cost.plan(CPU_FULL)
    assert [p.label() for p in points] == [
        *[f"evaluation anakin_catch eval_every_records={n}" for n in (0, 10, 1)],
        *[f"evaluation sebulba_cartpole_ppo eval_every_records={n}" for n in (0, 1)],
    ]
    assert all(p.task.wall_clock for p in points)  # Rates over wall time: the evaluations count.
    catch, cartpole = points[:3], points[3:]
    record = 2 * 16 * 512  # A Catch dispatch (one record): 2 updates of 512 envs x 16 steps, on its 2 CPU devices.
    assert [p.task.overrides["evaluation.every_steps"] for p in catch] == [0, 10 * record, record]
    assert {p.task.overrides["total_steps"] for p in catch} == {evaluation_cost.DISPATCHES * record}
    assert {p.launch for p in catch} == {Launch(2, cpu_threads=1)}  # One process: the points interleaved.
    window = 40 * 2 * 16 * 16  # A CartPole log window: 40 updates of 2 threads x 16 envs x 16 steps.
    assert [p.task.overrides["log_every_updates"] for p in cartpole] == [40, 40]
    assert [p.task.overrides["evaluation.every_steps"] for p in cartpole] == [0, window]
    for point in points:  # As the measuring process loads it: the default 32 episodes, greedy.
        config = figure_configs.load_named(point.benchmark, point.task.overrides)
        assert (config.evaluation.episodes, config.evaluation.greedy) == (32, True)


def test_quick_evaluation_runs_a_few_dispatches_and_windows():
    points = evaluation_cost.plan(CPU_QUICK)
    assert {p.task.overrides["total_steps"] for p in points[:3]} == {anakin_scaling.QUICK_DISPATCHES * 2 * 16 * 512}
    assert {p.task.overrides["total_steps"] for p in points[3:]} == {(sebulba_scaling.WARMUP_UPDATES + 3) * 40 * 512}
    assert len(launch.by_launch(points)) == 1  # With XLA's default threads, Catch and CartPole share a process.
