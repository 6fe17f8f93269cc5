"""The docs' lists of what ships are checked against the code, so that a new agent, suite, config file or
config field cannot be left out of them, and a removed one cannot stay.

- README.md's "What ships" names every registered agent (`name`), every suite prefix (`prefix:`) and every
  built-in environment;
- docs/what-ships.md holds the one full table of the agents and of the suites: their first columns are exactly
  the registered agents and the suite prefixes (and envpool's bare ids), and it names every built-in environment;
- which agents take a recurrent core is what the code says: What ships' `network.core` column and README's
  memory row against the agents whose configs are refused with an LSTM core;
- docs/getting-started.md gives an install command for every suite's extra;
- docs/configuring.md's table of config files is exactly the files in configs/, and its "Every field" tables
  name every field of `podracer.defaults(agent, architecture)`, for every registered agent on both architectures.

Nothing trains and nothing runs in a subprocess: the docs are read as text, and configs are built and validated.
"""

import itertools
import pathlib
import re
import tomllib

import pytest
from ml_collections import ConfigDict

import podracer
import podracer.agents
from podracer.config.loading import OPEN_FIELDS
from podracer.envs import env_registry
from tests.helpers import ROOT, save_random_rule

REPOSITORY = pathlib.Path(ROOT)
ARCHITECTURES = ("anakin", "sebulba")
BACKTICKED = re.compile(r"`([^`\n]+)`")


def read(page: str) -> str:
    return (REPOSITORY / page).read_text()


def section(text: str, heading: str) -> str:
    """The part of `text` under the Markdown heading `heading` ("## What ships"), up to the next heading of the same
    level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    start = lines.index(heading)  # A ValueError names a heading that is gone.
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(rf"#{{1,{level}}} ", lines[i])),
        len(lines),
    )
    return "\n".join(lines[start + 1 : end])


def backticked(text: str) -> set[str]:
    return set(BACKTICKED.findall(text))


def first_column(text: str, header: str) -> list[str]:
    """The first cells of the Markdown table whose header row starts with `header`, its code spans unwrapped."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    cells = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells.append(line.strip("|").split(" | ")[0].strip().strip("`"))
    return cells


def agents() -> list[str]:
    return podracer.agents.names()


def prefixes() -> list[str]:
    return [f"{suite}:" for suite in env_registry.SUITES]


def environments() -> list[str]:
    return list(env_registry.BUILT_IN)  # Not names(): a test may have registered one of its own in this process.


def missing(names, text: str) -> list[str]:
    named = backticked(text)
    return [name for name in names if name not in named]


def same(listed: list[str], expected: list[str], where: str) -> None:
    """`listed` holds exactly `expected`, once each; the message says what to add and what to remove."""
    absent, extra = sorted(set(expected) - set(listed)), sorted(set(listed) - set(expected))
    assert (absent, extra) == ([], []), f"{where}: add rows for {absent}, remove the rows of {extra}"
    assert len(listed) == len(set(listed)), f"{where}: a row is there twice"


def test_the_names_checked_here_are_the_code_s():
    """A guard on the checks below: they would pass vacuously on empty lists."""
    assert {"actor_critic", "ppo", "dqn", "muzero", "ippo", "learned_rule"} <= set(agents())
    assert {"gymnax:", "jaxmarl:", "pettingzoo:", "gymnasium:"} <= set(prefixes())
    assert {"catch", "cartpole"} <= set(environments())


def test_the_readme_names_every_agent_suite_and_built_in_environment():
    what_ships = section(read("README.md"), "## What ships")
    for kind, names in (("agents", agents()), ("suites", prefixes()), ("environments", environments())):
        unnamed = missing(names, what_ships)
        assert unnamed == [], f"README.md's What ships: name these {kind}, in backticks: {unnamed}"


def test_what_ships_has_the_one_table_of_agents():
    page = section(read("docs/what-ships.md"), "## Agents")
    same(first_column(page, "| `agent.name` |"), agents(), "docs/what-ships.md's agents table")


@pytest.fixture(scope="module")
def refuse_a_core(tmp_path_factory) -> set[str]:
    """The agents whose config is refused, naming `network.core`, with an LSTM core. Each agent is tried on a
    shipped config of its own, valid as it is (a rule given to `learned_rule`), so that no other field's error
    hides the core's."""
    rule = save_random_rule(str(tmp_path_factory.mktemp("rule")))
    configs = {}
    for path in sorted((REPOSITORY / "configs").glob("*.py")):
        overrides = {"agent.rule_checkpoint": rule} if "learned_rule" in path.name else {}
        config = podracer.load_config(str(path), overrides)
        configs.setdefault(config.agent.name, config)
    assert sorted(configs) == sorted(agents()), "every agent has a shipped config"
    refused = set()
    for name, config in configs.items():
        podracer.validate_config(config)  # Valid as it is: an error below is the core's.
        config.network.core = "lstm"
        try:
            podracer.validate_config(config)
        except podracer.ConfigError as error:
            assert error.field == "network.core", error
            refused.add(name)
    return refused


def test_the_agents_that_take_a_recurrent_core_are_the_ones_the_docs_say(refuse_a_core):
    """What ships' `network.core` column says "refused" of exactly the agents that refuse a core, and README's
    memory row names the agents that take one before its ";" and those that refuse one after it."""
    assert {"muzero", "sac"} <= refuse_a_core and "ppo" not in refuse_a_core
    lines = section(read("docs/what-ships.md"), "## Agents").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| `agent.name` |"))
    column = [cell.strip("` ") for cell in lines[header].strip("|").split(" | ")].index("network.core")
    rows = [
        line.strip("|").split(" | ") for line in itertools.takewhile(lambda x: x.startswith("|"), lines[header + 2 :])
    ]
    documented = {row[0].strip("` ") for row in rows if row[column].strip() == "refused"}
    assert documented == refuse_a_core, "docs/what-ships.md's network.core column"
    row = next(
        line for line in section(read("README.md"), "## What ships").splitlines() if line.startswith("| memory |")
    )
    take, refuse = (backticked(part) & set(agents()) for part in row.split(";", 1))
    assert (take, refuse) == (set(agents()) - refuse_a_core, refuse_a_core), "README.md's memory row"


def test_what_ships_has_the_one_table_of_suites_and_names_every_built_in_environment():
    page = read("docs/what-ships.md")
    suites = first_column(section(page, "## Suites"), "| prefix |")
    same(suites, [*prefixes(), "(bare id)"], "docs/what-ships.md's suites table")
    assert missing(environments(), section(page, "## Environments")) == [], "docs/what-ships.md: name these, as `name`"


def test_getting_started_installs_every_suite():
    """Each suite's extra has its own install command, or comes with `.[suites]`."""
    page = read("docs/getting-started.md")
    extras = tomllib.loads(read("pyproject.toml"))["project"]["optional-dependencies"]
    grouped = set(re.findall(r"[a-z_]+", extras["suites"][0].partition("[")[2])) if '".[suites]"' in page else set()
    unnamed = [
        suite.extra
        for suite in env_registry.SUITES.values()
        if f'".[{suite.extra}]"' not in page and suite.extra not in grouped
    ]
    assert unnamed == [], f"docs/getting-started.md: add an install line for these extras: {unnamed}"


def test_the_config_files_table_is_the_files_in_configs():
    page = section(read("docs/configuring.md"), "## The config files")
    shipped = [f"configs/{path.name}" for path in (REPOSITORY / "configs").glob("*.py")]
    same(first_column(page, "| config |"), shipped, "docs/configuring.md's table of config files")


def leaf_fields(config: ConfigDict, prefix: str = "") -> list[str]:
    """Every field of `config` by its dotted path; a group of fields is named by its fields, an empty group (a
    population, an environment's `kwargs`) by itself."""
    fields = []
    for key, value in config.items():
        if isinstance(value, ConfigDict) and len(value):
            fields += leaf_fields(value, f"{prefix}{key}.")
        else:
            fields.append(f"{prefix}{key}")
    return fields


def every_default_field() -> set[str]:
    return {
        field
        for name in agents()
        for architecture in ARCHITECTURES
        for field in leaf_fields(podracer.defaults(name, architecture))
    }


def documented(field: str, page: str) -> bool:
    """Whether docs/configuring.md's "Every field" names `field`: by its whole path (`agent.burn_in`, or
    `population.*` for a group of the user's), or by its path within its group (`burn_in`) in that group's own
    tables ("### Agent fields", "### Network fields") or row (`optimizer.*`)."""
    if {field, f"{field}.*"} & backticked(page):
        return True
    open_group = next((group for group in OPEN_FIELDS if field.startswith(f"{group}.")), None)
    if open_group:  # An environment's own option (AlphaZero's `env.kwargs.self_play`): the open group's row.
        return open_group in backticked(page)
    group, _, within = field.partition(".")
    if not within:
        return False
    own = {"agent": "### Agent fields", "network": "### Network fields"}
    text = section(page, own[group]) if group in own else ""
    rows = [line for line in page.splitlines() if line.startswith(f"| `{group}.*`")]
    return within in backticked("\n".join([text, *rows]))


def test_every_field_of_every_agent_and_architecture_is_in_the_field_tables():
    page = section(read("docs/configuring.md"), "## Every field")
    fields = every_default_field()
    assert {"agent.burn_in", "agent.share_parameters", "agent.critic", "agent.meta_gradient.learn"} <= fields
    undocumented = sorted(field for field in fields if not documented(field, page))
    assert undocumented == [], f"docs/configuring.md's Every field: describe these fields: {undocumented}"


@pytest.mark.parametrize("field", ["agent.burn_in", "network.core", "optimizer.anneal_lr", "checkpoint.keep"])
def test_the_field_check_fails_on_a_field_left_out(field):
    """`documented` is not vacuous: with the field's names taken out of the page, it says so."""
    page = section(read("docs/configuring.md"), "## Every field")
    name = field.partition(".")[2]
    stripped = page.replace(f"`{field}`", "").replace(f"`{name}`", "")
    assert documented(field, page) and not documented(field, stripped)
