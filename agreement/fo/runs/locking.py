"""A cross-process lock per dataset, held in FiftyOne's own MongoDB, for schema and run changes.

FiftyOne keeps a dataset's schema and its list of runs in one dataset
document that each process saves whole: two processes that declare fields at
the same time overwrite each other's declarations (last writer wins). Every
change this plugin makes to that document (declaring a run's fields and
label attributes, registering, completing, renaming or deleting a run) is
made under :func:`schema_lock`, after reloading the document, so that
concurrent runs (delegated workers, two people in the App, Dask workers on
other machines) serialise their changes and never lose one.

The lock is a document ``{_id: "<dataset id>", owner, expires}`` in the
collection ``iaa_locks``; a holder that dies leaves it to expire after
``lease`` seconds. It is re-entrant within a thread: a step that takes it
while its caller holds it (registering a run, then declaring its schema)
neither waits nor reloads the document again (nobody else can have changed
it), so a caller may group several changes under one reload.
"""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

from pymongo.errors import DuplicateKeyError

__all__ = ["schema_lock", "LockTimeout"]

COLLECTION = "iaa_locks"


class LockTimeout(RuntimeError):
    """The dataset's schema lock could not be taken in time."""


_held = threading.local()  # ids of the datasets whose lock this thread holds


def _collection():
    import fiftyone.core.odm as foo

    return foo.get_db_conn()[COLLECTION]


@contextmanager
def schema_lock(dataset, timeout: float = 120.0, lease: float = 60.0):
    """Holds the dataset's schema lock; reloads the dataset document once it is held (re-entrant in a
    thread: held already, it neither waits nor reloads).

    Args:
        dataset: a FiftyOne dataset.
        timeout: seconds to wait for the lock before :class:`LockTimeout`.
        lease: seconds after which a lock whose holder died may be taken.
    """
    coll = _collection()
    key = str(dataset._doc.id)
    held = _held.__dict__.setdefault("keys", set())
    if key in held:  # taken by a caller of this thread: its reload is current
        yield
        return
    owner = uuid.uuid4().hex
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        now = datetime.now(timezone.utc)
        try:
            got = coll.find_one_and_update(
                {"_id": key, "$or": [{"owner": None}, {"expires": {"$lt": now}}]},
                {"$set": {"owner": owner, "expires": now + timedelta(seconds=lease)}},
                upsert=True,
            )
            del got
            break
        except DuplicateKeyError:  # held by someone else (the upsert collided with their document)
            if time.monotonic() > deadline:
                raise LockTimeout(
                    f"could not take the schema lock of dataset {dataset.name!r} within {timeout:g} s; "
                    "another agreement run is changing its schema"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
    held.add(key)
    try:
        dataset.reload()
        yield
    finally:
        held.discard(key)
        coll.update_one({"_id": key, "owner": owner}, {"$set": {"owner": None, "expires": None}})
