"""A rank that dies (killed, or of an uncaught exception) stops the others within a bounded
time with an error naming it (``distributed/peers.py``), not gloo's "Connection closed by
peer" reported as a failure of an op "traced at an unknown line", and not a hang. Two
ranks on loopback run ``rank_death_worker.py`` through ``launch.run`` (bounded, killed in
a ``finally``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from . import launch

HERE = Path(__file__).resolve().parent
TIMEOUT = 180.0  # the launcher's bound; a survivor stops within seconds of the death
STOPPED = re.compile(r"stopped after ([\d.]+) s: (\w+): (.*)")


def _survivor_stops(
    how: str, dying: int, cause: str, *extra: str, error: str = "RankFailedError"
) -> str:
    argv = [str(HERE / "rank_death_worker.py"), how, str(dying), *extra]
    env = {"LAZYGEN_BACKEND": "torchscript", "LAZYGEN_GC_FREEZE": "0"}
    result = launch.run(argv, nproc=2, timeout=TIMEOUT, env=env)
    survivor = 1 - dying
    assert None not in result.returncodes, "a rank hung:\n" + result.report()
    assert result.returncodes[survivor] == 3, result.report()
    found = STOPPED.search(result.outputs[survivor])
    assert found, result.report()
    seconds, kind, message = float(found[1]), found[2], found[3]
    assert kind == error, result.report()
    assert cause in message, message
    assert "unknown line" not in message and "Connection closed by peer" not in message
    assert seconds < 30.0, message  # the death plus at most the survivor's own delay (8 s)
    if error == "RankFailedError":
        assert message.startswith(f"lazygen: rank {dying} "), message
        assert f"This rank ({survivor} of 2)" in message, message
    return message


@pytest.mark.multiprocess
def test_a_rank_killed_mid_step_is_named():
    _survivor_stops("kill_mid_step", 1, "its process")


@pytest.mark.multiprocess
def test_a_rank_killed_inside_a_collective_is_named():
    _survivor_stops("kill_in_collective", 1, "its process")


@pytest.mark.multiprocess
@pytest.mark.slow
def test_a_rank_that_dies_of_an_exception_is_named_with_it():
    _survivor_stops("raise_mid_step", 1, "died of ValueError: rank 1's data loader failed at ")


@pytest.mark.multiprocess
@pytest.mark.slow
def test_a_rank_killed_while_another_waits_in_a_collective_is_named():
    _survivor_stops("killed_while_waited_for", 1, "its process")


@pytest.mark.multiprocess
@pytest.mark.slow
def test_rank_0_which_hosts_the_store_killed_mid_step_is_named():
    _survivor_stops("kill_mid_step", 0, "the store does not answer")


@pytest.mark.multiprocess
@pytest.mark.slow
def test_a_rank_killed_is_named_where_collectives_cut_the_graph():
    """A backend that runs collectives outside its graphs (each a graph cut) says the same."""
    _survivor_stops("kill_mid_step", 1, "its process", "cut")


@pytest.mark.multiprocess
def test_a_read_on_one_rank_alone_times_out_with_what_to_do():
    """Not a death: a collective traced and read on rank 0 alone while rank 1 lives. Past the
    group's timeout (5 s), rank 0 is told why and what to do, not gloo's "Timed out waiting
    5000ms for recv operation"."""
    message = _survivor_stops(
        "read_alone", 1, "this rank (0 of 2) waited past", error="CollectiveTimeoutError"
    )
    assert "Compute it on every rank" in message and "dist.barrier()" in message
