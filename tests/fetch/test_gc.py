"""The collector pause around fetches: counted, and restoring what it found."""

from __future__ import annotations

import gc
import threading

import pytest

from feeslab.fetch._gc import gc_paused


@pytest.fixture(autouse=True)
def _collector_on():
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_resumed_after():
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_resumed_after_an_error():
    with pytest.raises(KeyError), gc_paused():
        raise KeyError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_in_threads_resume_only_when_all_end():
    inside, release = threading.Event(), threading.Event()

    def worker():
        with gc_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(10)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the worker's fetch is still decoding
    release.set()
    thread.join(10)
    assert gc.isenabled()


@pytest.mark.parametrize("value", ["0", "off"])
def test_the_pause_can_be_turned_off_by_the_environment(monkeypatch, value):
    monkeypatch.setenv("FEESLAB_GC_PAUSE", value)
    assert gc.isenabled()
    with gc_paused():
        assert gc.isenabled()  # left alone: the process's own setting holds
    assert gc.isenabled()
    monkeypatch.setenv("FEESLAB_GC_PAUSE", "1")
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
