#!/usr/bin/env bash
# Launch a podracer experiment on a Cloud TPU VM slice (one host or many).
#
# usage: scripts/launch_tpu.sh --name NAME --zone ZONE --accelerator-type TYPE --config CONFIG
#                              [options] [-- EXTRA_PODRACER_ARGS...]
#
# Steps, each a gcloud command run from this machine:
#   1. create the slice:  gcloud compute tpus tpu-vm create NAME --accelerator-type=TYPE ...
#   2. copy this checkout to every worker: a tarball of the files git tracks, as they are in the
#      working tree (uncommitted edits included; .venv, runs/ and other untracked files left out),
#      sent with `tpu-vm scp --worker=all` and unpacked into ~/podracer
#   3. install on every worker: python3.11 (from apt if missing) -m venv .venv && .venv/bin/pip install -e ".[tpu]"
#   4. run on every worker at once (`tpu-vm ssh --worker=all`), streaming the output here:
#        .venv/bin/podracer train --config CONFIG --config.replicas=WORKERS --workdir WORKDIR [EXTRA...]
#      podracer joins the workers with jax.distributed when replicas > 1
#   5. copy WORKDIR back from worker 0 (process 0 writes the logs) into ./WORKDIR here
#   6. with --delete, delete the slice
#
# options:
#   --name NAME              TPU VM name: lowercase letters, digits and hyphens       (required)
#   --zone ZONE              e.g. us-central2-b                                        (required)
#   --accelerator-type TYPE  e.g. v4-8, v4-32, v5p-64, v5litepod-16 (required, except with
#                            --delete-only, or with --skip-create when --workers is given)
#   --config CONFIG          a config file tracked by git, e.g. configs/anakin_catch.py
#                            (required, except with --delete-only)
#   --project P              gcloud project (default: the one gcloud is configured with)
#   --version V              TPU VM software version (default tpu-ubuntu2204-base)
#   --spot                   create spot VMs (gcloud --spot); --preemptible for the older flag
#   --workers N              hosts in the slice; the default is computed from TYPE:
#                            v2-N, v3-N, v4-N, v5p-N -> N/8 (at least 1); other types need --workers
#   --workdir DIR            run directory on the workers, relative to ~/podracer
#                            (default runs/<config basename>, e.g. runs/anakin_catch)
#   --python PY              interpreter that creates the workers' venv (default python3.11, which
#                            podracer needs at least; installed with apt, with its venv module,
#                            where the image lacks it, as Ubuntu 22.04 images with 3.10 do)
#   --no-fetch               leave WORKDIR on worker 0 instead of copying it back
#   --skip-create            reuse an existing slice (steps 2-5 only; rerunning re-copies and
#                            reinstalls over the previous copy, keeping .venv and runs/)
#   --delete                 delete the slice when the script ends, whether the run succeeded,
#                            failed or was interrupted (Ctrl-C); a slice whose creation failed is
#                            never deleted, as the name may belong to one that already existed
#   --delete-only            only delete the slice (needs just --name and --zone)
#   --dry-run                print every command it would run, one per line, prefixed with "+ ",
#                            and run nothing
#   -h, --help               show this help
#
# Everything after `--` is passed on to `podracer train`, e.g. -- --config.num_envs=4096
#
# examples:
#   scripts/launch_tpu.sh --name podracer-v4-8 --zone us-central2-b --accelerator-type v4-8 \
#       --config configs/anakin_cartpole_ppo.py --delete -- --config.num_envs=2048
#   scripts/launch_tpu.sh --name podracer-v4-32 --zone us-central2-b --accelerator-type v4-32 --spot \
#       --config configs/anakin_catch.py --dry-run
#
# Exit status: 2 for a bad command line (with a message naming the option), otherwise the status of
# the first step that failed, or 0. Ctrl-C during a run may leave `podracer train` running on the
# workers when the slice is kept; stop it with
#   gcloud compute tpus tpu-vm ssh NAME --zone=ZONE --worker=all --command="pkill -f 'podracer train'"

set -euo pipefail

readonly EXIT_USAGE=2
readonly REMOTE_DIR=podracer            # on each worker, relative to the home directory
readonly REMOTE_TARBALL=podracer.tar.gz # likewise
ROOT=$(cd "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
readonly ROOT
export COPYFILE_DISABLE=1               # macOS tar: no ._* AppleDouble files in the tarball

usage() {
    sed -n '2,/^$/{s/^# \{0,1\}//;p;}' "${BASH_SOURCE[0]}"
}

die_usage() {
    printf 'launch_tpu.sh: error: %s\n' "$*" >&2
    printf 'run scripts/launch_tpu.sh --help for usage\n' >&2
    exit "$EXIT_USAGE"
}

note() {
    printf '==> %s\n' "$*" >&2
}

# One shell word for each argument, as a person would type it: bare when it is safe,
# otherwise single-quoted ('--command=' style options keep the option name outside the quotes).
quote_word() {
    local word=$1 prefix=""
    if [[ $word =~ ^(--[A-Za-z0-9-]+=)(.*)$ ]]; then
        prefix=${BASH_REMATCH[1]}
        word=${BASH_REMATCH[2]}
    fi
    if [[ -n $word && $word =~ ^[A-Za-z0-9_./:=@%+,~-]+$ && $word != "~"* ]]; then
        printf '%s%s' "$prefix" "$word"
    else
        local squote="'" escaped="'\\''"
        printf "%s'%s'" "$prefix" "${word//$squote/$escaped}"
    fi
}

quote_command() {
    local word separator=""
    for word in "$@"; do
        printf '%s' "$separator"
        quote_word "$word"
        separator=" "
    done
}

# Runs a command, echoing it first (to stderr); with --dry-run only prints it (to stdout).
run() {
    if (( dry_run )); then
        printf '+ %s\n' "$(quote_command "$@")"
        return 0
    fi
    printf '+ %s\n' "$(quote_command "$@")" >&2
    "$@"
}

need_value() {  # need_value OPTION ARGC
    (( $2 >= 2 )) || die_usage "$1 needs a value"
}

# ---------------------------------------------------------------------------------------------
# Command line

name="" zone="" accelerator_type="" config="" project="" version="tpu-ubuntu2204-base"
workers="" workdir="" python="python3.11"
spot=0 preemptible=0 skip_create=0 delete=0 delete_only=0 dry_run=0 fetch=1
extra=()

while (( $# )); do
    case $1 in
        -h|--help) usage; exit 0 ;;
        --name) need_value "$1" $#; name=$2; shift 2 ;;
        --name=*) name=${1#*=}; shift ;;
        --zone) need_value "$1" $#; zone=$2; shift 2 ;;
        --zone=*) zone=${1#*=}; shift ;;
        --accelerator-type) need_value "$1" $#; accelerator_type=$2; shift 2 ;;
        --accelerator-type=*) accelerator_type=${1#*=}; shift ;;
        --config) need_value "$1" $#; config=$2; shift 2 ;;
        --config=*) config=${1#*=}; shift ;;
        --project) need_value "$1" $#; project=$2; shift 2 ;;
        --project=*) project=${1#*=}; shift ;;
        --version) need_value "$1" $#; version=$2; shift 2 ;;
        --version=*) version=${1#*=}; shift ;;
        --workers) need_value "$1" $#; workers=$2; shift 2 ;;
        --workers=*) workers=${1#*=}; shift ;;
        --workdir) need_value "$1" $#; workdir=$2; shift 2 ;;
        --workdir=*) workdir=${1#*=}; shift ;;
        --python) need_value "$1" $#; python=$2; shift 2 ;;
        --python=*) python=${1#*=}; shift ;;
        --spot) spot=1; shift ;;
        --preemptible) preemptible=1; shift ;;
        --no-fetch) fetch=0; shift ;;
        --skip-create) skip_create=1; shift ;;
        --delete) delete=1; shift ;;
        --delete-only) delete_only=1; shift ;;
        --dry-run) dry_run=1; shift ;;
        --) shift; extra=("$@"); break ;;
        -*) die_usage "unknown option $1" ;;
        *) die_usage "unexpected argument $(quote_word "$1"); arguments for podracer go after --" ;;
    esac
done

[[ -n $name ]] || die_usage "--name is required (the TPU VM name, e.g. --name podracer-v4-32)"
[[ $name =~ ^[a-z]([-a-z0-9]*[a-z0-9])?$ ]] \
    || die_usage "--name $(quote_word "$name"): use lowercase letters, digits and hyphens, starting with a letter"
[[ -n $zone ]] || die_usage "--zone is required (e.g. --zone us-central2-b)"

common=(--zone="$zone")
[[ -z $project ]] || common+=(--project="$project")
delete_command=(gcloud compute tpus tpu-vm delete "$name" "${common[@]}" --quiet)

if (( delete_only )); then
    run "${delete_command[@]}"
    exit 0
fi

(( spot && preemptible )) && die_usage "--spot and --preemptible exclude each other; pick one"

if [[ -n $workers ]]; then
    [[ $workers =~ ^[1-9][0-9]*$ ]] || die_usage "--workers $(quote_word "$workers"): expected a positive integer"
fi
if [[ -z $accelerator_type ]]; then
    (( skip_create )) && [[ -n $workers ]] \
        || die_usage "--accelerator-type is required (e.g. --accelerator-type v4-32)"
elif [[ -z $workers ]]; then
    if [[ $accelerator_type =~ ^(v2|v3|v4|v5p)-([1-9][0-9]*)$ ]]; then
        # N counts TensorCores; a v2/v3/v4/v5p host has 8 of them.
        workers=$(( BASH_REMATCH[2] / 8 ))
        (( workers >= 1 )) || workers=1
    else
        die_usage "--workers is required for --accelerator-type $(quote_word "$accelerator_type"):" \
            "the number of hosts is computed only for v2-N, v3-N, v4-N and v5p-N (N/8)"
    fi
fi

[[ -n $config ]] || die_usage "--config is required (e.g. --config configs/anakin_catch.py)"
[[ -f $config ]] || die_usage "--config $(quote_word "$config"): no such file"
config_dir=$(cd "$(dirname -- "$config")" && pwd -P)
config_abs=$config_dir/$(basename -- "$config")
case $config_abs in
    "$ROOT"/*) config_rel=${config_abs#"$ROOT"/} ;;
    *) die_usage "--config $(quote_word "$config"): not inside the project ($ROOT), so it would not be copied to the workers" ;;
esac
git -C "$ROOT" ls-files --error-unmatch -- "$config_rel" >/dev/null 2>&1 \
    || die_usage "--config $(quote_word "$config"): not tracked by git, so it would not be copied to the workers; git add it first"

if [[ -z $workdir ]]; then
    config_base=$(basename -- "$config_rel")
    workdir=runs/${config_base%.py}
fi

# ---------------------------------------------------------------------------------------------
# Cleanup: fetch the run directory, delete the slice (with --delete), remove the local tarball.
# Runs on every exit, so a failed or interrupted run is cleaned up too.

stage=""               # local directory holding the tarball
run_started=0          # the experiment was launched, so worker 0 may have written WORKDIR
delete_armed=0         # the slice exists (created by us, or reused with --skip-create)

fetch_workdir() {
    if [[ $workdir == /* ]]; then
        (( dry_run )) || note "the run directory stays on worker 0: $workdir (fetch it with tpu-vm scp --recurse --worker=0)"
        return 0
    fi
    local local_parent
    local_parent=$(dirname -- "$ROOT/$workdir")
    (( dry_run )) || note "copying $workdir back from worker 0 into $ROOT/$workdir"
    run mkdir -p "$local_parent"
    run gcloud compute tpus tpu-vm scp --recurse "$name:$REMOTE_DIR/$workdir" "$local_parent/" \
        "${common[@]}" --worker=0
}

cleanup() {
    local status=$?
    set +e
    # Ctrl-C during the copy back stops only the copy; the slice is still deleted after it.
    trap 'note "interrupted"' INT TERM
    if (( run_started && fetch )); then
        fetch_workdir || note "could not copy $workdir back from worker 0 (see above)"
    fi
    if (( delete && delete_armed )); then
        trap '' INT TERM  # a deletion cut short would leave the slice up (and billing)
        (( dry_run )) || note "deleting the slice $name (Ctrl-C is ignored until this finishes)"
        run "${delete_command[@]}" || {
            note "DELETING $name FAILED: it may still be running and billing; retry with"
            note "  $(quote_command "${delete_command[@]}")"
            (( status )) || status=1
        }
    fi
    [[ -z $stage ]] || rm -rf -- "$stage"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# 1. Create the slice

if (( ! skip_create )); then
    (( dry_run )) || note "[1/4] creating $name ($accelerator_type, $workers host(s)) in $zone"
    create=(gcloud compute tpus tpu-vm create "$name" --zone="$zone" --accelerator-type="$accelerator_type"
            --version="$version")
    [[ -z $project ]] || create+=(--project="$project")
    (( ! spot )) || create+=(--spot)
    (( ! preemptible )) || create+=(--preemptible)
    run "${create[@]}"
fi
delete_armed=1

# ---------------------------------------------------------------------------------------------
# 2. Copy the project. The tarball holds the files `git ls-files` lists, read from the working
# tree, rather than `git archive HEAD`: what runs on the TPU is what you see and test here,
# uncommitted and staged edits included, while ignored and untracked files (.venv, runs/,
# scratch files) stay behind. Tracked files deleted from the working tree are left out.

(( dry_run )) || note "[2/4] copying the project to every worker of $name"
if (( dry_run )); then
    stage="${TMPDIR:-/tmp}/podracer-launch.XXXXXX"
    printf '+ %s > %s\n' "$(quote_command git -C "$ROOT" ls-files -z)" "$(quote_word "$stage/files")"
    stage_shown=$stage
    stage=""  # nothing to remove
else
    stage=$(mktemp -d "${TMPDIR:-/tmp}/podracer-launch.XXXXXX")
    stage_shown=$stage
    printf '+ %s > %s\n' "$(quote_command git -C "$ROOT" ls-files -z)" "$(quote_word "$stage/files")" >&2
    git -C "$ROOT" ls-files -z > "$stage/all-files"
    while IFS= read -r -d '' file; do
        if [[ -e $ROOT/$file || -L $ROOT/$file ]]; then
            printf '%s\0' "$file"
        fi
    done < "$stage/all-files" > "$stage/files"
fi
run tar -czf "$stage_shown/$REMOTE_TARBALL" -C "$ROOT" --no-recursion --null -T "$stage_shown/files"
run gcloud compute tpus tpu-vm scp "$stage_shown/$REMOTE_TARBALL" "$name:$REMOTE_TARBALL" \
    "${common[@]}" --worker=all

# ---------------------------------------------------------------------------------------------
# 3. Unpack and install on every worker (over a previous copy: its .venv and runs/ are kept)

(( dry_run )) || note "[3/4] installing podracer on every worker of $name"
remote_dir_q=$(printf %q "$REMOTE_DIR")
remote_tarball_q=$(printf %q "$REMOTE_TARBALL")
python_q=$(printf %q "$python")
setup="mkdir -p $remote_dir_q && tar -xzf $remote_tarball_q -C $remote_dir_q && rm -f $remote_tarball_q"
# Ubuntu 22.04 TPU images ship Python 3.10; podracer needs 3.11+, which the image's apt sources carry.
setup+=" && { command -v $python_q >/dev/null || { sudo apt-get update -q && sudo apt-get install -y -q $python_q $python_q-venv; }; }"
setup+=" && cd $remote_dir_q && $python_q -m venv .venv && .venv/bin/pip install -e \".[tpu]\""
run gcloud compute tpus tpu-vm ssh "$name" "${common[@]}" --worker=all --command="$setup"

# ---------------------------------------------------------------------------------------------
# 4. Run on every worker at once. PYTHONUNBUFFERED: stdout is a pipe over ssh, so without it the
# workers' output would arrive in blocks rather than as it is printed.

(( dry_run )) || note "[4/4] running $config_rel on $workers host(s); output follows"
train=(.venv/bin/podracer train --config "$config_rel" --config.replicas="$workers" --workdir "$workdir")
train+=(${extra[@]+"${extra[@]}"})
printf -v train_q '%q ' "${train[@]}"
remote_run="cd $remote_dir_q && PYTHONUNBUFFERED=1 ${train_q% }"
run_started=1
run gcloud compute tpus tpu-vm ssh "$name" "${common[@]}" --worker=all --command="$remote_run"
(( dry_run )) || note "the run finished on every worker"
