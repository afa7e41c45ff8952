"""`rdqn.runs.unwritten`: final statuses held in memory until the file takes them."""

from rdqn.runs.unwritten import UnwrittenStatuses


def test_a_held_status_is_read_until_written() -> None:
    held = UnwrittenStatuses()
    assert not held
    assert held.get("r", ("running", None)) == ("running", None)
    held.keep("r", "failed", "the disk is full")
    assert held
    assert held.get("r", ("running", None)) == ("failed", "the disk is full")
    assert held.get("other", ("paused", None)) == ("paused", None)
    held.keep("r", "stopped", None)  # a later one replaces it
    assert held.copy() == {"r": ("stopped", None)}
    held.written("r")
    assert not held
    assert held.get("r", ("stopped", None)) == ("stopped", None)
    held.written("never held")  # nothing to forget


def test_a_copy_does_not_change_with_the_memory() -> None:
    held = UnwrittenStatuses()
    held.keep("a", "finished", None)
    copy = held.copy()
    held.written("a")
    assert copy == {"a": ("finished", None)}
