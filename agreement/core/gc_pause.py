"""Pausing the cyclic garbage collector around bulk conversions of many small objects."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pauses the cyclic garbage collector while bulk-converting values.

    Reading with ``values()`` returns hundreds of thousands of small lists, and
    a bulk write builds as many small dicts; every generation-2 pass would
    rescan them all. None of them form cycles, so reference counting frees
    them anyway. The collector is re-enabled (if it was) on exit. The switch is
    the process's: with pauses in two threads (a shard's write in the writer
    thread, the next shard's read), one may end the other's pause early, which
    costs time, never memory or correctness, and the collector is on again
    once both have left.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
