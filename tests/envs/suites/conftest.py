"""The tests of the heavy suites are slow as whole files: `-m "not slow"` (make test-fast) does not even import them.

Importing Brax, Craftax, POPGym Arcade, Jumanji with Navix and XLand-MiniGrid, MuJoCo Playground and JaxMARL takes
about 10 s in every test process, before any test runs; each of these files marks all its tests slow, and this
hook skips collecting them where slow tests are deselected.
"""

SLOW_FILES = {
    "test_brax_env.py",
    "test_craftax_env.py",
    "test_popgym_arcade_env.py",
    "test_stoa_suites.py",
    "test_playground_env.py",
    "test_jaxmarl_env.py",
}


def pytest_ignore_collect(collection_path, config):
    return collection_path.name in SLOW_FILES and config.getoption("markexpr") == "not slow"
