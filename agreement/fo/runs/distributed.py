"""The Dask backend of streamed runs: shards read, computed and written by the workers of a Dask cluster.

A streamed run (:func:`agreement.fo.runs.engine.run_method` with ``backend="dask"``)
plans the corpus and registers the run in this process (the driver), then
submits one task per shard (:class:`agreement.fo.runs.engine.ShardJob`). Each task,
on a worker, connects to the same FiftyOne database (its URI and database
name travel with the task, so a worker needs no configuration of its own),
rebuilds the run's view from its serialised stages, and runs
:func:`agreement.fo.runs.engine.process_shard`: it reads its samples, computes,
writes its per-sample and per-label values, and sends back the method's
statistics. The driver gathers them in shard order and finishes the run, so
the numbers are bit-identical to a serial run.

Two ways to get a cluster:

* ``dask_address="tcp://scheduler:8786"``: an existing scheduler, whose
  workers the user started (``dask scheduler`` and ``dask worker ...``, or
  ``dask-kubernetes``, ``dask-jobqueue`` on SLURM/PBS, ``dask-yarn``). Every
  worker needs the core library installed (``pip install <plugin folder>``,
  the install's third step, gives the ``iaa-agreement`` package) and FiftyOne,
  and must reach the database: FiftyOne must then use a MongoDB
  that every machine reaches (``FIFTYONE_DATABASE_URI`` on the driver), not
  the database FiftyOne starts on localhost.
* ``workers=N`` (default 2): a ``LocalCluster`` of N single-threaded worker
  processes on this machine, started for the run and closed after it. They
  import the same ``agreement`` as this process: spawned processes inherit
  ``sys.path`` but not ``sys.modules``, so when this process's ``agreement``
  is not the one ``sys.path`` leads to (the plugin loaded its own copy, see
  the plugin's root ``__init__.py``), a temporary directory holding only a
  symbolic link ``agreement`` to it is put on the workers' path for the run
  (:func:`library_on_workers_path`).

Why Dask: it is Python-native (the kernels are plain numpy/scipy functions,
shipped as they are), it moves numpy arrays cheaply, it runs the same code on
a laptop's local cluster and on Kubernetes, SLURM or YARN, and it needs no
JVM. Spark would serialise every shard's arrays through the JVM; Ray would
do as well but adds its own object store and runtime for what is a
map-and-merge; FiftyOne's Beam utilities (``fiftyone.utils.beam``) parallelise
imports and merges of samples, not a computation whose corpus statistics
must merge exactly.

Only this module imports Dask, and only when the backend is used: Dask stays
an optional dependency (``pip install "dask[distributed]"``).

What a run on the cluster cost, per shard (the seconds of its task on the
worker, the pickled bytes of the job sent to it and of the statistics it sent
back), is kept for the last run of this process in :data:`SHARD_TIMINGS` and
logged at debug level: what the benchmarks report as the work that more
machines would share and the bytes each shard moves.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
import logging
import os
import pickle
import shlex
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from agreement.fo.runs.errors import RunError

__all__ = ["dask_available", "database_env", "run_shards", "dask_client", "library_on_workers_path", "BACKENDS",
           "check_backend", "ShardTiming", "SHARD_TIMINGS"]

BACKENDS = ("serial", "dask")

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ShardTiming:
    """What one shard of a run on the cluster cost.

    Attributes:
        index: the shard's position in the run.
        seconds: its task's time on the worker (connect, rebuild the view, read, compute, write).
        sent_bytes: the pickled size of its job (the method's shared state is sent once, not counted here).
        returned_bytes: the pickled size of what it sent back (the method's mergeable statistics).
    """

    index: int
    seconds: float
    sent_bytes: int
    returned_bytes: int


#: The shards of this process's last run on a cluster (:func:`run_shards`), in shard order.
SHARD_TIMINGS: list[ShardTiming] = []


@dataclasses.dataclass(frozen=True)
class _Timed:
    """A shard task's result with its time on the worker and its pickled size."""

    result: Any
    seconds: float
    nbytes: int


def dask_available() -> bool:
    """Whether ``dask.distributed`` can be imported (the App form offers the backend only then)."""
    return importlib.util.find_spec("distributed") is not None


def check_backend(backend: str, *, dask_address: str | None = None, workers: int | None = None) -> None:
    """Validates the execution options before anything is read (raises ``ValueError`` naming the problem)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "serial":
        if dask_address is not None or workers is not None:
            raise ValueError("dask_address and workers choose a Dask cluster: pass backend='dask' with them")
        return
    if not dask_available():
        raise ValueError('backend="dask" needs Dask\'s distributed scheduler: pip install "dask[distributed]"')
    if dask_address is not None and workers is not None:
        raise ValueError("give either dask_address (an existing scheduler) or workers (a local cluster), not both")
    if dask_address is not None and (not isinstance(dask_address, str) or not dask_address.strip()):
        raise ValueError(f"dask_address must be a scheduler address such as 'tcp://host:8786', got {dask_address!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive number of worker processes, got {workers!r}")


def database_env() -> dict[str, str]:
    """The environment a worker needs to reach this process's FiftyOne database: its URI and name.

    The URI is FiftyOne's ``database_uri`` when one is configured, else the
    address of the database service FiftyOne started for this process (on
    localhost: reachable by the workers of a local cluster only).
    """
    import fiftyone as fo
    import fiftyone.core.odm.database as fod

    fod.get_db_conn()  # connects (and starts the service) if nothing has yet
    uri = fo.config.database_uri
    if not uri:
        host, port = fod._client.address
        uri = f"mongodb://{host}:{port}"
    env = {"FIFTYONE_DATABASE_URI": uri, "FIFTYONE_DATABASE_NAME": fo.config.database_name,
           "FIFTYONE_DO_NOT_TRACK": "true"}
    if os.environ.get("FIFTYONE_DATABASE_VALIDATION"):
        env["FIFTYONE_DATABASE_VALIDATION"] = os.environ["FIFTYONE_DATABASE_VALIDATION"]
    return env


@contextmanager
def dask_client(dask_address: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """A Dask client: of the scheduler at ``dask_address``, or of a local cluster of ``workers`` processes
    (default 2, one thread each) started here and closed on exit."""
    from distributed import Client, LocalCluster

    if dask_address is not None:
        client = Client(dask_address)
        try:
            yield client
        finally:
            client.close()
        return
    with library_on_workers_path():
        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()


@contextmanager
def library_on_workers_path() -> Iterator[str | None]:
    """Makes this process's ``agreement`` package, and no other name, importable by the processes it spawns.

    When ``sys.path`` already leads to the package this process imported,
    nothing changes. Otherwise (the plugin loaded its folder's copy by file,
    see the plugin's root ``__init__.py``) a temporary directory holding one
    symbolic link, ``agreement`` -> the package, is put first on ``sys.path``
    (which spawned processes inherit) and removed on exit.

    Yields:
        The temporary directory, or ``None`` when none was needed.

    Raises:
        RunError: the link cannot be made (the message names the command that installs the library instead).
    """
    import agreement

    package_dir = os.path.dirname(os.path.abspath(agreement.__file__ or ""))
    found = importlib.machinery.PathFinder.find_spec("agreement")
    if found is not None and found.origin and os.path.exists(found.origin) \
            and os.path.samefile(os.path.dirname(found.origin), package_dir):
        yield None
        return
    directory = tempfile.mkdtemp(prefix="iaa-agreement-workers-")
    link = os.path.join(directory, "agreement")
    try:
        os.symlink(package_dir, link, target_is_directory=True)
    except OSError as e:
        os.rmdir(directory)
        install = f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(os.path.dirname(package_dir))}"
        raise RunError(f"the Dask workers cannot import `agreement` from {package_dir} (a symbolic link to it in "
                       f"{directory} failed: {e}); install the library into this environment: {install}") from e
    sys.path.insert(0, directory)
    try:
        yield directory
    finally:
        if directory in sys.path:
            sys.path.remove(directory)
        os.unlink(link)
        os.rmdir(directory)


@dataclasses.dataclass(frozen=True)
class _ViewOnCluster:
    """Where a worker finds the run's view: the database environment (:func:`database_env`), the dataset's
    name and the view's serialized stages (empty: the whole dataset)."""

    env: dict
    dataset_name: str
    stages: list


def _shard_task(where: _ViewOnCluster, job, state: Any, spec, process: Callable) -> Any:
    """One shard on a worker: connect to the run's database, rebuild its view, ``process(view, job, spec)``.
    ``state`` is the method's prepared state, sent to the cluster once for every shard (see :func:`run_shards`);
    ``spec`` and ``process`` travel with the task (functions by reference: the worker imports their modules)."""
    env, dataset_name, stages = where.env, where.dataset_name, where.stages
    os.environ.update(env)
    job = dataclasses.replace(job, state=state)
    import fiftyone as fo
    import fiftyone.core.view as fov

    started = time.perf_counter()
    dataset = fo.load_dataset(dataset_name)
    view = fov.DatasetView._build(dataset, stages) if stages else dataset
    result = process(view, job, spec)
    seconds = time.perf_counter() - started
    return _Timed(result, seconds, len(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)))


def run_shards(samples, jobs: Sequence, report: Callable[[float, str], None], spec, process: Callable,
               *,
               dask_address: str | None = None, workers: int | None = None) -> list:
    """Runs ``process(view, job, spec)`` for every shard job on a Dask cluster; returns the results in shard order.

    The jobs' common ``state`` (what the method's ``prepare`` returned, e.g. OT's
    chance plan: 50 MB at 1,000,000 samples) is sent to the cluster once and
    passed to every task by reference; inside each job it would be pickled
    once per shard and held by the scheduler until that shard ran (50 shards:
    2.5 GB in the driver).
    """
    from distributed import as_completed

    import fiftyone.core.view as fov

    where = _ViewOnCluster(env=database_env(), dataset_name=samples._root_dataset.name,
                          stages=samples._serialize() if isinstance(samples, fov.DatasetView) else [])
    with dask_client(dask_address, workers) as client:
        state = client.scatter(jobs[0].state, broadcast=False) if jobs and jobs[0].state is not None else None
        futures = [client.submit(_shard_task, where, dataclasses.replace(job, state=None), state, spec, process,
                                 key=f"iaa-shard-{job.index}-{os.getpid()}-{id(job)}", pure=False) for job in jobs]
        done = 0
        for _ in as_completed(futures):
            done += 1
            report(0.05 + 0.9 * done / len(jobs), f"shard {done} of {len(jobs)} done on the cluster")
        timed = client.gather(futures)
    SHARD_TIMINGS[:] = [ShardTiming(job.index, t.seconds, _pickled_size(dataclasses.replace(job, state=None)),
                                    t.nbytes) for job, t in zip(jobs, timed, strict=True)]
    for t in SHARD_TIMINGS:
        logger.debug("shard %d on the cluster: %.2f s, %d bytes sent, %d bytes back", t.index, t.seconds,
                     t.sent_bytes, t.returned_bytes)
    return [t.result for t in timed]


def _pickled_size(obj: Any) -> int:
    """The pickled size of ``obj`` in bytes (0 when it does not pickle: the cluster would have refused it)."""
    try:
        return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # noqa: BLE001 - a measure only
        return 0
