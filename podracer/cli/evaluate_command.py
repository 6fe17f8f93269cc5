"""`podracer evaluate`: play a trained run's agent from its workdir, print its returns, and optionally film it.

It loads the newest checkpoint (or `--checkpoint UPDATE`) with the config it
was written with (`podracer.experiment.trained`), plays `--episodes`
episodes as a periodic evaluation of the run with the same `--seed` would
(`podracer.experiment.watch`), greedily or sampling, and prints each
episode's return, then their mean and standard error. With `--video`, the
first `--video-episodes` episodes are drawn and written as an MP4 or GIF,
with the returns beside it (`FILE.returns.json`), and sent to the run's
wandb run where its config names one (`logger.wandb`). With `--opponent`, the
run's agent plays a two-player Pgx game instead, against a uniformly random
legal player (`random`) or the agent of another run's workdir, seats
alternating (`podracer.experiment.match`), and the wins, draws and losses are
printed. A workdir without a checkpoint, a bad path, an environment that
cannot be drawn and a match of a game that is not two players' exit 2 before
anything is played or written.
"""

import argparse
import json
import math
import os

from podracer.cli.common import Commands, add_command, checkpoint_error, missing_workdir, report

VIDEO_FORMATS = (".mp4", ".gif")


def register(commands: Commands) -> None:
    """Adds `podracer evaluate`."""
    parser = add_command(
        commands,
        "evaluate",
        evaluate,
        "play a trained run's agent from its workdir, print its returns, optionally write a video",
        "Play episodes with the agent of a run's newest checkpoint (or --checkpoint), rebuilt from the config it "
        "was trained with, and print their returns. --video needs the video extra (imageio).",
    )
    parser.add_argument("workdir", metavar="WORKDIR", help="the --workdir of a podracer train run")
    parser.add_argument("--episodes", type=int, default=10, metavar="N", help="episodes to play (default 10)")
    parser.add_argument("--video", metavar="FILE", help=f"draw episodes into a {' or '.join(VIDEO_FORMATS)} file")
    parser.add_argument(
        "--video-episodes", type=int, default=1, metavar="K", help="how many episodes the video shows (default 1)"
    )
    parser.add_argument("--fps", type=int, default=30, help="the video's frames per second (default 30)")
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument("--greedy", dest="greedy", action="store_true", default=True, help="most likely actions")
    policy.add_argument("--sample", dest="greedy", action="store_false", help="actions sampled from the policy")
    parser.add_argument("--checkpoint", type=int, metavar="UPDATE", help="the checkpoint (its update count)")
    parser.add_argument("--member", type=int, metavar="I", help="a population's member to play")
    parser.add_argument("--seed", type=int, default=0, help="the episodes' keys (evaluation.seed's meaning)")
    parser.add_argument("--max-steps", type=int, default=100_000, help="steps after which an episode is left out")
    parser.add_argument(
        "--opponent",
        metavar="random|WORKDIR",
        help="play a two-player game against a uniformly random legal player or another run's agent, seats "
        "alternating, and print wins, draws and losses",
    )


def evaluate(args: argparse.Namespace) -> int:
    """Plays `args.episodes` episodes of `args.workdir`'s agent; prints their returns, writes the video asked for."""
    problem = _check(args)
    if problem:
        return report(args.prog, problem)
    from podracer.config.errors import ConfigError  # Imports JAX: only once the arguments are known to be good.
    from podracer.envs.frames import CannotRender
    from podracer.experiment import trained, watch
    from podracer.run.evaluation import record_fields

    video_episodes = min(args.video_episodes, args.episodes) if args.video else 0
    try:
        agent = trained.load(args.workdir, args.checkpoint, args.member)
    except ConfigError as error:  # No checkpoint, no such checkpoint or member: the flag it names.
        return report(args.prog, checkpoint_error(error))
    if args.opponent:
        return play_match(agent, args)
    try:
        played = watch.play(agent, args.episodes, args.greedy, args.seed, args.max_steps, video_episodes)
    except CannotRender as error:  # At the first frame, before any step.
        return report(args.prog, f"--video: {agent.config.env.name} cannot be drawn: {error}")
    success_return = agent.config.evaluation.get("success_return", math.inf)  # Runs saved before it had none.
    fields = record_fields(played.returns, played.lengths, played.ended, success_return)
    print(f"{agent.checkpoint}: step {agent.step:,}, {'greedy' if args.greedy else 'sampled'} actions")
    print("returns: " + " ".join(f"{value:g}" for value in played.returns[played.ended]))
    print(
        f"mean return {fields['eval_mean_return']:.6g} +- {fields['eval_return_stderr']:.3g} (standard error) over "
        f"{fields['eval_episodes']} episodes"
        + (
            f"; {fields['eval_unfinished']} still running after --max-steps, left out"
            if fields["eval_unfinished"]
            else ""
        )
    )
    if "eval_success_rate" in fields:
        print(f"success rate {fields['eval_success_rate']:.3f} (a return above {success_return:g})")
    if args.video:
        watch.write_video(played.frames, args.video, args.fps)
        beside = {"returns": played.returns.tolist(), "lengths": played.lengths.tolist(), "drawn": video_episodes}
        with open(args.video + ".returns.json", "w") as f:
            json.dump(beside, f)
        print(f"wrote {args.video}: {len(played.frames)} frames of {video_episodes} episodes, returns beside it")
        send_video(agent, args)
    return 0


def play_match(agent, args: argparse.Namespace) -> int:
    """Plays `args.episodes` games of the run's agent against `args.opponent`; prints the wins, draws and losses."""
    from podracer.config.errors import UsageError
    from podracer.experiment import match

    try:
        env = match.game_of(agent, f"WORKDIR {args.workdir!r}")
        opponent = match.opponent(agent, env, args.opponent, args.greedy)
    except UsageError as error:
        return report(args.prog, error)
    player = match.agent_player(agent, env, args.greedy)
    results = match.play(env, player, opponent, args.episodes, args.seed, args.max_steps)
    actions = "greedy" if args.greedy else "sampled"
    print(f"{agent.checkpoint}: step {agent.step:,}, {actions} actions, {agent.config.env.name}")
    print(f"against {args.opponent}, moving first: {results.line(0)}")
    print(f"against {args.opponent}, moving second: {results.line(1)}")
    unfinished = f"; {results.unfinished} still running after --max-steps, left out" if results.unfinished else ""
    print(f"in all: {results.line()} in {args.episodes} games{unfinished}")
    return 0


def send_video(agent, args: argparse.Namespace) -> None:
    """Logs the video to the run's wandb run, where its config names a project (`logger.wandb`): at the checkpoint's
    step, or just after the last step the wandb run has (wandb keeps only increasing steps)."""
    from podracer.run import wandb_logger

    logger = wandb_logger.start(agent.config, args.workdir)
    if logger is not None:
        with logger:
            logger.log_video(args.video, max(agent.step, logger.run.step))
            print(f"sent {args.video} to wandb run {logger.run.id}")


def _check(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments themselves, before anything is loaded; None if nothing."""
    if problem := missing_workdir(args.workdir):
        return problem
    if args.episodes < 1 or args.video_episodes < 1 or args.fps < 1 or args.max_steps < 1:
        return "--episodes, --video-episodes, --fps and --max-steps must be at least 1"
    if args.opponent is not None:
        if args.video is not None:
            return "--video draws one agent's episodes, not a match: leave it out with --opponent"
        if args.opponent != "random" and not os.path.isdir(args.opponent):
            return f"--opponent {args.opponent!r} is neither random nor a folder; give the --workdir of a train run"
    if args.video is not None:
        if os.path.splitext(args.video)[1].lower() not in VIDEO_FORMATS:
            return f"--video {args.video!r}: name a {' or '.join(VIDEO_FORMATS)} file"
        if not os.path.isdir(os.path.dirname(os.path.abspath(args.video))):
            return f"--video {args.video!r}: its folder does not exist; create it or choose another"
        try:
            import imageio  # noqa: F401
        except ImportError:
            return "--video needs imageio: pip install -e '.[video]'"
    return None
