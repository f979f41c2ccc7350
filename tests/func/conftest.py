"""Fixtures of the transform suites."""
import pytest

from tensorplay import _replay
from tensorplay.func import _pipeline


@pytest.fixture
def replays(monkeypatch):
    """Counts of the replays of a plain transform's last trace (`tensorplay._replay`) taken to the
    end ("replayed") and left on the way ("left")."""
    counts = {"replayed": 0, "left": 0}
    real = _pipeline.replay_keyed

    def counted(*args):
        got = real(*args)
        if got is not None:
            counts["replayed" if got[2].__class__ is _replay.Replayed else "left"] += 1
        return got

    monkeypatch.setattr(_pipeline, "replay_keyed", counted)
    return counts
