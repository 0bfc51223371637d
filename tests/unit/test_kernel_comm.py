"""Which run a live state sent on the agent kernel's comm is laid over (``kernel/_comm.py``):
the next execute request of the same client for the same cell, in the order they were sent.
The protocol itself (a real kernel, real comm messages) is tests/integration/test_kernel.py."""

from __future__ import annotations

from jupyter_percent_agent.kernel._comm import PENDING_LIMIT, LiveStates, RunOutcome


def sent(states: LiveStates, session: str, cell: str, nonce: str) -> None:
    states.receive(session, "comm", {"cellId": cell, "nonce": nonce, "state": {"n": nonce}})


def test_a_state_is_taken_by_its_own_cells_request_only() -> None:
    states = LiveStates()
    sent(states, "tab", "a", "for-a")
    assert states.take("tab", "b") is None
    taken = states.take("tab", "a")
    assert taken is not None and taken.nonce == "for-a" and taken.state == {"n": "for-a"}
    assert states.take("tab", "a") is None  # once


def test_runs_queued_while_another_runs_each_get_their_own_state() -> None:
    """ipykernel handles comm messages while a cell runs: the states of the runs queued
    behind it are all waiting when the first of them starts."""
    states = LiveStates()
    for nonce, cell in (("a1", "a"), ("b1", "b"), ("a2", "a")):
        sent(states, "tab", cell, nonce)
    assert [states.take("tab", c).nonce for c in ("a", "b", "a")] == ["a1", "b1", "a2"]


def test_a_state_whose_request_never_came_is_dropped_by_a_later_one() -> None:
    states = LiveStates()
    sent(states, "tab", "a", "lost")
    sent(states, "tab", "b", "for-b")
    assert states.take("tab", "b").nonce == "for-b"
    assert states.take("tab", "a") is None


def test_another_clients_state_is_never_taken() -> None:
    states = LiveStates()
    sent(states, "other-tab", "a", "theirs")
    assert states.take("tab", "a") is None
    assert states.take("other-tab", "a").nonce == "theirs"


def test_messages_of_another_shape_are_dropped_and_waiting_states_are_bounded() -> None:
    states = LiveStates()
    for data in (None, [], {"cellId": "a"}, {"cellId": 1, "nonce": "n", "state": {}},
                 {"cellId": "a", "nonce": "n"}):
        states.receive("tab", "comm", data)
    assert states.take("tab", "a") is None
    for i in range(PENDING_LIMIT + 5):
        sent(states, "tab", "a", f"n{i}")
    assert states.take("tab", "a").nonce == "n5"  # the oldest kept


def test_a_closed_comms_states_and_a_clear_drop_everything_waiting() -> None:
    states = LiveStates()
    sent(states, "tab", "a", "n")
    states.forget("comm")
    assert states.take("tab", "a") is None
    sent(states, "tab", "a", "n")
    states.clear()
    assert states.take("tab", "a") is None


def test_an_outcome_says_only_what_happened() -> None:
    assert RunOutcome().data() == {}
    assert RunOutcome(proposed={"after": "a"}).data() == {"proposed": {"after": "a"}}
