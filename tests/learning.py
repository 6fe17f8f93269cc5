"""Learning tests: a seed to train with, thresholds declared where the test is, and each metric reported beside them.

A learning test trains an agent and asserts that what it reached (the mean return of the last 100 episodes, a win
rate) clears a threshold. Float results differ between CPUs (XLA:CPU emits other vector code for AVX2 and AVX-512),
and a run that diverges in its rounding ends like a run of another seed, so a threshold must hold for every seed,
not for the one the suite happens to run. Each learning test therefore

* declares its metrics with the `learning` marker, their thresholds and what a random policy scores:
  `@pytest.mark.learning("last 100 episodes", at_least=0.9, random=-0.6)`, one marker per metric;
* takes the `learning` fixture: `learning.seed` is the seed to train with, and `learning.check(value)` (or
  `learning.check(value, "metric")` where a test has several) records the value and asserts its threshold.

`make test` runs every learning test once, with seed 0, but those marked `extended` (`make test-extended`
runs them). `make test-seeds` runs them over `--learning-seeds` (0-4 by
default), and the summary at the end of either prints each metric against its threshold: the worst seed and its
margin. The thresholds, the measured seeds and the random policy's scores are tabled in docs/testing.md, which a
test keeps in step with these markers.
"""

import dataclasses
import json
import math
import re
from collections.abc import Iterable

import pytest

MARKER = "learning"
SEEDS_OPTION = "--learning-seeds"
DECLARED_OPTION = "--learning-declared"  # With --collect-only: print each collected metric's key cells, as JSON.
DEFAULT_SEED = 0
PROPERTY = "learning-metric"  # The name of the user property a check records, as JSON.


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One metric of a learning test: the bound it must clear, and what a uniformly random policy scores there."""

    metric: str
    at_least: float | None = None
    at_most: float | None = None
    random: float | None = None

    def met_by(self, value: float) -> bool:
        if math.isnan(value):
            return False
        return (self.at_least is None or value >= self.at_least) and (self.at_most is None or value <= self.at_most)

    def margin(self, value: float) -> float:
        """How far `value` is inside the bound (negative outside it)."""
        return value - self.at_least if self.at_least is not None else self.at_most - value

    def bound(self) -> str:
        return f">= {self.at_least:g}" if self.at_least is not None else f"<= {self.at_most:g}"


def thresholds(item: pytest.Item) -> list[Threshold]:
    """The thresholds `item` declares with its `learning` markers, in the order they are written."""
    declared = []
    for marker in reversed(list(item.iter_markers(MARKER))):  # Decorators apply bottom-up; read them top-down.
        (metric,) = marker.args
        threshold = Threshold(metric, **marker.kwargs)
        if (threshold.at_least is None) == (threshold.at_most is None):
            raise pytest.UsageError(f"{item.nodeid}: the learning marker {metric!r} needs one of at_least, at_most")
        declared.append(threshold)
    return declared


class Learning:
    """What a learning test gets from its fixture: the seed to train with, and the check of its thresholds."""

    def __init__(self, item: pytest.Item, seed: int):
        self.seed = seed
        self._item = item
        self._thresholds = {threshold.metric: threshold for threshold in thresholds(item)}
        if not self._thresholds:
            raise pytest.UsageError(f"{item.nodeid} takes the learning fixture but declares no learning marker")

    def check(self, value: float, metric: str | None = None) -> None:
        """Records `value` of `metric` (the test's only one, if left out) for the summary, then asserts its bound."""
        if metric is None:
            (metric,) = self._thresholds  # A test with several metrics names each.
        threshold = self._thresholds[metric]
        value = float(value)
        record = {"metric": metric, "value": value, "seed": self.seed, **dataclasses.asdict(threshold)}
        self._item.user_properties.append((PROPERTY, json.dumps(record)))
        assert threshold.met_by(value), f"{metric} {value:.4g}, seed {self.seed}: expected {threshold.bound()}"


def seeds(config: pytest.Config) -> list[int]:
    """The seeds each learning test runs with: `--learning-seeds`, or the suite's one seed."""
    text = config.getoption(SEEDS_OPTION)
    return [int(seed) for seed in text.replace(",", " ").split()] if text else [DEFAULT_SEED]


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        SEEDS_OPTION,
        metavar="SEEDS",
        help=f"run every learning test once per seed, e.g. '0 1 2 3 4' (default: seed {DEFAULT_SEED} only)",
    )
    parser.addoption(DECLARED_OPTION, action="store_true", help="print what each learning metric declares")


def child_options(config: pytest.Config) -> list[str]:
    """The options a child session that runs one of this session's tests needs to find it: its seeds."""
    text = config.getoption(SEEDS_OPTION)
    return [SEEDS_OPTION, text] if text else []


def print_declared(session: pytest.Session) -> None:
    """With `--learning-declared`, prints the key cells of every metric the collected learning tests declare."""
    if session.config.getoption(DECLARED_OPTION):
        for item in session.items:
            for threshold in thresholds(item):
                print(json.dumps(key_cells(item.nodeid, threshold)))


def parametrize(metafunc: pytest.Metafunc) -> None:
    """Gives a learning test one run per seed where `--learning-seeds` asks for several."""
    if "learning" in metafunc.fixturenames and metafunc.config.getoption(SEEDS_OPTION):
        metafunc.parametrize("learning_seed", seeds(metafunc.config), ids=lambda seed: f"seed{seed}")


def without_seed(nodeid: str) -> str:
    """`nodeid` without the `seedN` part of its parameters that `--learning-seeds` adds."""
    base, bracket, parameters = nodeid.partition("[")
    kept = [part for part in parameters.rstrip("]").split("-") if not re.fullmatch(r"seed\d+", part)]
    return f"{base}[{'-'.join(kept)}]" if bracket and kept else base


def key_cells(test: str, threshold: Threshold) -> list[str]:
    """The cells of a learning metric's row that the code decides: the test, the metric, its bound, random's score."""
    random = "" if threshold.random is None else f"{threshold.random:.4g}"
    return [f"`{test}`", threshold.metric, threshold.bound(), random]


def recorded(reports: Iterable[pytest.TestReport]) -> dict[tuple[str, Threshold], dict[int, float]]:
    """`{(test, threshold): {seed: value}}` for every metric the learning tests' calls recorded."""
    found: dict[tuple[str, Threshold], dict[int, float]] = {}
    for report in reports:
        for name, value in report.user_properties if report.when == "call" else ():
            if name == PROPERTY:
                record = json.loads(value)
                threshold = Threshold(record["metric"], record["at_least"], record["at_most"], record["random"])
                found.setdefault((without_seed(report.nodeid), threshold), {})[record["seed"]] = record["value"]
    return found


def table(found: dict[tuple[str, Threshold], dict[int, float]]) -> list[str]:
    """A Markdown table of `found`: a row per test and metric, its bound, random's score, each seed's value and the
    worst seed's margin inside the bound (negative: outside). docs/testing.md holds the one of seeds 0-4."""
    seeds = sorted({seed for values in found.values() for seed in values})
    header = ["test", "metric", "threshold", "random", *(f"seed {seed}" for seed in seeds), "worst margin"]
    lines = [_row(header), _row(["---"] * 4 + ["---:"] * (len(seeds) + 1))]
    for (test, threshold), values in sorted(found.items(), key=lambda item: (item[0][0], item[0][1].metric)):
        measured = [f"{values[seed]:.4g}" if seed in values else "" for seed in seeds]
        worst = min(threshold.margin(value) for value in values.values())
        lines.append(_row([*key_cells(test, threshold), *measured, f"{worst:.4g}"]))
    return lines


def report(terminal) -> None:
    """Prints the table of every learning metric the session recorded, if any was."""
    reports = [
        report for reports in terminal.stats.values() for report in reports if isinstance(report, pytest.TestReport)
    ]
    if found := recorded(reports):
        terminal.write_sep("=", "learning tests: each metric against its threshold")
        for line in table(found):
            terminal.write_line(line)


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"
