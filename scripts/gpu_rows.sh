#!/usr/bin/env bash
# The GPU rows of docs/benchmarks.md, taken in one go on a one-GPU machine: Anakin Catch and CartPole PPO at
# growing batches, Craftax-Classic PPO-RNN at its paper's batch, Sebulba Pong IMPALA with the machine's cores
# stepping envpool, and LPG meta-training at the Podracer paper's population of about 1K agents. Each line printed
# is a run's own summary ("done: ..."), after its settings; the meta-training rows add their records' steps/s.
#
#   scripts/gpu_rows.sh [python] [ROW ...]   # from the repository root; ROWs among: catch cartpole craftax pong meta
#                                            # meta_compile (not by default: at most 9 minutes)
#
# Needs podracer's dependencies (the craftax extra for its row). The Pong row needs envpool, Pong's ROM and the
# MyoSuite metadata envpool reads whenever it builds a task: without envpool's asset packages (about 600 MB), point
# ENVPOOL_ASSETS_PATH at a folder holding atari/roms/pong.bin, a copy of envpool-assets-mujoco-large's
# mujoco/myosuite/assets/metadata folder, and the (empty) folders envpool lists at import: gfootball/assets,
# mujoco/assets_dmc, procgen/assets and vizdoom/maps. Every run is short (a few seconds to a minute of training after its compilation) and
# bounded by `timeout`, so one failing row does not take the others with it.
set -u
PYTHON=${1:-python3}
shift || true
ROWS=${*:-catch cartpole craftax pong meta}
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3

podracer() {  # podracer SECONDS COMMAND ARGS...: one bounded run of the command line, its summary or last error.
    local seconds=$1
    shift
    timeout "$seconds" "$PYTHON" -c 'import sys; from podracer.cli import main; sys.exit(main())' "$@" 2>&1 |
        tr '\r' '\n' | grep -E "^done:|Error|error:" | tail -2
}

train() {  # train LABEL SECONDS ARGS...
    local label=$1 seconds=$2
    shift 2
    echo "== $label"
    podracer "$seconds" train --workdir "/tmp/gpu_rows/$label" "$@"
}

meta_train() {  # meta_train LABEL SECONDS ARGS...: also each record's inner environment steps/s.
    local label=$1 seconds=$2
    shift 2
    echo "== $label"
    podracer "$seconds" meta-train --workdir "/tmp/gpu_rows/$label" "$@"
    "$PYTHON" -c 'import json, sys; print("records steps/s:", [round(json.loads(line)["steps_per_second"])
        for line in open(sys.argv[1])])' "/tmp/gpu_rows/$label/metrics.jsonl"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nproc
"$PYTHON" -c 'import jax; print("jax", jax.__version__, jax.devices())'

for row in $ROWS; do
    case $row in
    catch) # Anakin Catch (a 16-step unroll per update), one GPU: steps/s against the batch.
        for envs in 4096 32768 131072; do
            train "catch_${envs}" 120 --config configs/anakin_catch.py --config.num_envs=$envs \
                --config.total_steps=$((envs * 16 * 60)) --config.updates_per_dispatch=20
        done ;;
    cartpole) # Anakin CartPole PPO (CleanRL's update: 128 steps, 4 epochs of 4 minibatches), one GPU.
        for envs in 2048 16384; do
            train "cartpole_ppo_${envs}" 150 --config configs/anakin_cartpole_ppo.py --config.num_envs=$envs \
                --config.total_steps=$((envs * 128 * 30)) --config.updates_per_dispatch=10
        done ;;
    craftax) # Craftax-Classic-Symbolic PPO-RNN at the Craftax paper's batch (1,024 environments x 64 steps).
        train craftax_classic_1024 200 --config configs/anakin_craftax_classic_ppo_rnn.py \
            --config.total_steps=$((1024 * 64 * 100)) --config.updates_per_dispatch=25 ;;
    pong) # Sebulba Pong IMPALA with the ResNet: the GPU acts and learns, the CPU cores step envpool's Atari.
        train pong_impala_4x64 120 --config configs/sebulba_pong_impala.py \
            --config.actor_threads_per_device=4 --config.envs_per_thread=64 --config.total_steps=600000 ;;
    meta) # LPG meta-training, the config's 16 agents times 64 (1,024, each of 4 environments), as `bench --figures
        # meta` scales them: with its LSTM of 32 units, then the paper's 256.
        agents='(("lpg_tabular", {"variant": "dense"}, 384), ("lpg_random_grid", {"variant": "small"}, 256),
            ("lpg_delayed_chain", {"variant": "short"}, 384))'
        for hidden in 32 256; do
            meta_train "lpg_1024_lstm${hidden}" 150 --config configs/anakin_lpg_gridworlds.py \
                --config.meta.environments="$agents" --config.meta.hidden_size=$hidden --config.meta.updates=12 \
                --config.meta.updates_per_dispatch=2 --config.checkpoint.every_updates=0
        done ;;
    meta_compile) # Where the first dispatch at 1,024 agents spends its time: lowering, XLA's compile, the first
        # dispatch (every lifetime starts in it) and the next, at 16 then 1,024 agents (scripts/meta_compile_cost.py),
        # with XLA's autotuning of GEMMs, then without it: compile_s falling with autotune_level=0 convicts autotuning.
        echo "== meta_compile"
        timeout 300 "$PYTHON" -m scripts.meta_compile_cost --members 16 1024 --dispatches 2 2>&1 | grep -v "^W"
        echo "== meta_compile, --xla_gpu_autotune_level=0"
        XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0" timeout 240 "$PYTHON" -m scripts.meta_compile_cost \
            --members 1024 --dispatches 1 2>&1 | grep -v "^W" ;;
    *) echo "unknown row $row (catch cartpole craftax pong meta meta_compile)" >&2; exit 2 ;;
    esac
done
