"""`adapting.check_settings`, the one check of every suite's settings: each refusal names the setting and the fix."""

import pytest

from podracer.envs.suites.adapting import check_settings, whole_number

DEFAULTS = {"size": 3, "speed": 1.0, "name": "level", "hard": False, "layout": None}


def test_settings_of_their_defaults_types_come_back_sorted_and_hashable():
    settings = check_settings("suite", "task", {"speed": 2, "size": 4, "layout": [[1, 2], [3]]}, DEFAULTS)
    assert settings == (("layout", ((1, 2), (3,))), ("size", 4), ("speed", 2))
    hash(settings)


def test_an_unknown_setting_is_refused_with_what_the_task_accepts():
    with pytest.raises(ValueError, match=r"^suite task has no setting colour, sise: it accepts \['hard', 'layout'"):
        check_settings("suite", "task", {"sise": 4, "colour": "red"}, DEFAULTS)
    with pytest.raises(ValueError, match=r"^suite task has no setting sise: its env params are \['size'\]$"):
        check_settings("suite", "task", {"sise": 4}, DEFAULTS, accepted="its env params are ['size']")


def test_an_unknown_setting_may_be_left_to_the_suite():
    assert check_settings("suite", "task", {"sise": "4"}, DEFAULTS, refuse_unknown=False) == (("sise", "4"),)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"size": "3"}, "suite task's size must be a whole number, got '3'."),
        ({"size": True}, "suite task's size must be a whole number, got True."),
        ({"speed": "fast"}, "suite task's speed must be a number, got 'fast'."),
        ({"name": 1}, "suite task's name must be a string, got 1."),
        ({"hard": 1}, "suite task's hard must be True or False, got 1."),
    ],
)
def test_an_ill_typed_setting_is_refused_with_the_type_of_its_default(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        check_settings("suite", "task", kwargs, DEFAULTS)


def test_counts_and_rules_of_their_own_replace_the_defaults_type():
    with pytest.raises(ValueError, match=r"^suite task's size must be a whole number >= 1, got 0\.$"):
        check_settings("suite", "task", {"size": 0}, DEFAULTS, ("size",))
    checks = {"size": whole_number(0), "name": (lambda value: value in ("a", "b"), "one of ['a', 'b']")}
    assert check_settings("suite", "task", {"size": 0}, DEFAULTS, checks=checks) == (("size", 0),)
    with pytest.raises(ValueError, match=r"^suite task's name must be one of \['a', 'b'\], got 'c'\.$"):
        check_settings("suite", "task", {"name": "c"}, DEFAULTS, checks=checks)
