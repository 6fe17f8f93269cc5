"""A run's step budget: `total_steps` as a whole number of updates, and how many updates go between log records.

Both architectures learn in whole updates, each taking a fixed number of
environment steps over the whole job (Anakin: `num_envs x unroll_length`;
Sebulba: every actor thread's batch x `unroll_length`). A budget that is not
a multiple of that runs the next whole number of updates: never fewer steps
than asked for, and fewer than one update's worth more. The run says so in
one line (`rounding_note`), so that a budget is never silently changed.
"""

import math

from podracer.config.errors import count


def whole_updates(total_steps: int, steps_per_update: int) -> int:
    """The updates that cover `total_steps`: `ceil(total_steps / steps_per_update)`, at least one."""
    return max(1, math.ceil(total_steps / steps_per_update))


def rounding_note(total_steps: int, steps_per_update: int, update: str) -> str | None:
    """The line that says how `total_steps` was rounded to whole updates; None where it needed no rounding.

    `update` says what one update's steps are, e.g. "64 environments x 16 steps".
    """
    updates = whole_updates(total_steps, steps_per_update)
    if updates * steps_per_update == total_steps:
        return None
    return (
        f"podracer: total_steps={total_steps:,} is not a whole number of updates of {steps_per_update:,} steps "
        f"({update}); running {count(updates, 'update')}, {updates * steps_per_update:,} steps"
    )


def updates_between_records(num_updates: int, records: int) -> int:
    """How many updates to run between two log records so that a run of `num_updates` writes about `records`.

    `ceil(num_updates / records)`: at most `records` records, the last one
    after a possibly shorter stretch.
    """
    return max(1, math.ceil(num_updates / records))


def next_stretch(update: int, num_updates: int, length: int) -> int:
    """How many updates to run next, from `update`, in stretches of at most `length` ending on multiples of it.

    The last stretch ends at `num_updates`, so it may be shorter; so may the
    first of a run resumed from an update between two multiples.
    """
    return min(length - update % length, num_updates - update)
