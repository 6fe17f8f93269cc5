"""`python -m podracer.cli ARGS...`: the `podracer` command, as the tests and scripts start it in a fresh interpreter."""

from podracer.cli import main

main()
