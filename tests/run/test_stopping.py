"""Signals during a run: SIGINT and SIGTERM ask it to stop, except a signal the process was started ignoring."""

import os
import signal

import pytest

from podracer.run.stopping import stop_signals


@pytest.fixture
def sigint_as(request):
    """Sets SIGINT's disposition to the test's parameter for the test, whatever the suite was launched with."""
    previous = signal.signal(signal.SIGINT, request.param)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("sigint_as", [signal.default_int_handler], indirect=True)
def test_signals_are_routed_to_the_stop_request_and_the_handlers_restored_afterwards(sigint_as):
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    requests = []
    with stop_signals(requests.append):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
    assert requests == [signal.SIGTERM, signal.SIGINT]
    assert {number: signal.getsignal(number) for number in before} == before


@pytest.mark.parametrize("sigint_as", [signal.SIG_IGN], indirect=True)  # As a shell starts a background command.
def test_a_signal_ignored_on_entry_stays_ignored(sigint_as):
    requests = []
    with stop_signals(requests.append):
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
    assert requests == [signal.SIGTERM]
