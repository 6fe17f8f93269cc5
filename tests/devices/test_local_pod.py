"""`podracer.devices.local_pod`: a pod's processes see their index, coordinator and forced devices; failures end it."""

import io
import sys

from podracer.devices import local_pod

PRINT_ENV = (
    "import os; print(os.environ['PODRACER_PROCESS_ID'], os.environ['PODRACER_COORDINATOR_ADDRESS'], "
    "os.environ['XLA_FLAGS'].split()[-1])"
)


def test_each_process_runs_the_command_with_its_index_and_the_lines_come_back_prefixed():
    output = io.StringIO()
    assert local_pod.run([sys.executable, "-c", PRINT_ENV], processes=2, devices_per_process=3, output=output) == 0
    lines = sorted(output.getvalue().splitlines())
    assert [line.split()[:2] for line in lines] == [["[0]", "0"], ["[1]", "1"]]
    assert len({line.split()[2] for line in lines}) == 1  # One coordinator address, 127.0.0.1:PORT.
    assert all(line.split()[2].startswith("127.0.0.1:") for line in lines)
    assert all(line.endswith("--xla_force_host_platform_device_count=3") for line in lines)


def test_a_failing_process_stops_the_others_and_gives_the_pod_its_status():
    command = [
        sys.executable,
        "-c",
        "import os, sys, time\nif os.environ['PODRACER_PROCESS_ID'] == '1': sys.exit(3)\ntime.sleep(60)",
    ]
    assert local_pod.run(command, processes=2, devices_per_process=1, output=io.StringIO()) == 3
