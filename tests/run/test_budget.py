"""The step budget: `total_steps` as whole updates, the note when it rounds, and the stretches between records."""

import pytest

from podracer.run import budget


@pytest.mark.parametrize(
    "total_steps, steps_per_update, updates",
    [(1024, 1024, 1), (1025, 1024, 2), (1, 1024, 1), (100_000, 1024, 98), (499_712, 512, 976)],
)
def test_whole_updates_cover_the_budget_and_overshoot_by_less_than_one_update(total_steps, steps_per_update, updates):
    assert budget.whole_updates(total_steps, steps_per_update) == updates


def test_the_note_says_how_the_budget_was_rounded_and_nothing_when_it_was_not():
    note = budget.rounding_note(100_000, 1024, "64 environments x 16 steps")
    assert note == (
        "podracer: total_steps=100,000 is not a whole number of updates of 1,024 steps "
        "(64 environments x 16 steps); running 98 updates, 100,352 steps"
    )
    assert "running 1 update," in budget.rounding_note(1000, 8192, "512 environments x 16 steps")
    assert budget.rounding_note(2048, 1024, "whatever") is None


@pytest.mark.parametrize("num_updates, records, length", [(976, 100, 10), (98, 100, 1), (123, 100, 2), (5, 2, 3)])
def test_updates_between_records_give_at_most_the_records_asked_for(num_updates, records, length):
    assert budget.updates_between_records(num_updates, records) == length


def test_stretches_end_on_multiples_of_their_length_and_the_last_at_the_budget():
    def stretches(update, num_updates, length):
        out = []
        while update < num_updates:
            out.append(budget.next_stretch(update, num_updates, length))
            update += out[-1]
        return out

    assert stretches(0, 32, 7) == [7, 7, 7, 7, 4]
    assert stretches(0, 12, 4) == [4, 4, 4]
    assert stretches(6, 12, 4) == [2, 4]  # Resumed between two multiples: back in step first.
    assert stretches(0, 1, 10) == [1]
