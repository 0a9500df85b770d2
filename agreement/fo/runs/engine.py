"""One run lifecycle for every agreement method: validate, read, compute, write, register.

A method declares itself once as a :class:`MethodSpec`: the fields and label
attributes it owns (as suffixes of the run key), how its input is read, and a
``compute`` step that turns the corpus (pure :mod:`agreement` code) into a
:class:`MethodOutput`: per-sample values, per-label values, the headline
summary and the detail. :func:`run_method` does the rest, the same way for
all of them:

1. check the key (fail before reading anything);
2. read the raters' annotations in bulk (:func:`agreement.fo.storage.reading.read_annotations`);
3. check the key again against the fields the run will own, compute;
4. free an overwritten run only now (a failed computation never costs the
   user their previous run), register the new one as ``incomplete`` with
   every field it will own (:func:`agreement.fo.runs.store.prepare_run`);
5. write per-sample values (one bulk call per field) and per-label values
   (one update per sample carrying every attribute of its labels);
6. complete the run with its parameters, input layout, results and warnings
   (:mod:`agreement.core.design_warnings`: degenerate designs, from every shard's
   assignment and label counts merged; undefined headline numbers; the
   method's own ``warnings`` hook).

Adding a method means writing its pure computation and its declaration: see
the ``SPEC`` of :mod:`agreement.fo.methods.kalos` for an example. A method whose
global model is fitted on a window (``MethodSpec.fit_window``: consensus) streams
the rest of a larger view with that fit fixed (:func:`_run_windowed`).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

import numpy as np

from agreement.core.design_warnings import design_stats, merge_design
from agreement.core.gc_pause import gc_paused
from agreement.core.validation import AnnotationError, RepairReport
from agreement.fo.frames.units import chance_groups
from agreement.fo.runs import store as runs
from agreement.fo.runs.distributed import run_shards
from agreement.fo.runs.lifecycle import Outcome, ShardJob, ShardResult, complete_run
from agreement.fo.runs.locking import schema_lock
from agreement.fo.runs.method_spec import FitWindow, MethodOutput, MethodSpec, Progress, StreamContext, clean_summary
from agreement.fo.runs.options import Execution, RaterLayout
from agreement.fo.storage.assignment import plan_corpus
from agreement.fo.storage.reading import ReadResult, current_stamps, join_reads, read_annotations
from agreement.fo.storage.stored_values import label_field_value
from agreement.fo.storage.writing import declare_label_field

__all__ = ["MethodSpec", "MethodOutput", "StreamContext", "ShardJob", "ShardResult", "process_shard", "run_method",
           "clean_summary", "DEFAULT_SHARD_SIZE", "default_shard_size", "check_shard_size",
           "canonical_ids"]

_Fn = TypeVar("_Fn")


def _declared(fn: _Fn | None, spec: MethodSpec, what: str) -> _Fn:
    """The declaration's ``what`` (``compute``, ``kernel``, ``finish``), which the path taken needs."""
    if fn is None:
        raise TypeError(f"method {spec.method!r} declares no {what}")
    return fn


def _column(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Per-label values as an array: numeric ones keep their dtype (fast to clean), others are objects."""
    arr = np.asarray(values) if isinstance(values, np.ndarray) else np.asarray(list(values), dtype=object)
    if arr.dtype == object and len(arr) and all(isinstance(v, (float, np.floating)) for v in arr[:100]):
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError):
            return arr
    return arr


def _write(samples, plan: runs.RunPlan, read: ReadResult, spec: MethodSpec, out: MethodOutput,
           writer: "ShardWriter | None" = None, part: slice | None = None) -> None:
    """Writes the run's object-valued sample fields, then its label fields, plain sample fields and label
    attributes in one pass (:func:`agreement.fo.runs.store.stage_run_columns`: each sample document rewritten once).

    ``part``: only the corpus samples ``part.start .. part.stop - 1`` and their
    labels (a whole-corpus run writes its output in parts, see
    :func:`_write_in_parts`). With a ``writer``, the declarations happen here
    and the updates are sent by the writer's thread (:class:`ShardWriter`);
    else here, and the dataset's samples are reloaded.
    """
    data = read.annotations
    part = part if part is not None else slice(0, data.num_samples)
    sid = data.sample_ids[part]
    names = sid.tolist()
    for suffix in spec.sample_suffixes:
        if suffix in out.sample_objects and suffix not in out.label_fields:
            objects = out.sample_objects[suffix]
            runs.write_sample_values(samples, plan, suffix, {s: objects[s] for s in names if s in objects})
    sample_values = {s: dict(zip(names, _column(out.sample_values[s])[part].tolist(), strict=False))
                     for s in spec.sample_suffixes if s in out.sample_values and s not in out.label_fields}
    for suffix, (container, docs, attrs) in out.label_fields.items():
        if suffix not in spec.sample_suffixes:
            raise runs.RunError(f"label field {suffix!r} is not declared by {spec.method}")
        declare_label_field(runs._dataset(samples), plan.sample_field(suffix), container, attrs)
        docs = docs(part) if callable(docs) else {s: docs[s] for s in names if s in docs}
        with gc_paused():
            sample_values[suffix] = {s: label_field_value(container, d) for s, d in docs.items()}
    columns = {s: _column(out.label_values[s]) for s in spec.label_suffixes if s in out.label_values}
    label_values = {}
    for lf in read.label_fields if columns else ():
        rows = read.rows_of_field(lf, part)
        if len(rows):
            label_values[lf] = (sid[data.sample_index[rows] - part.start], data.label_ids[rows],
                                {s: col[rows] for s, col in columns.items()}, read.stored_ids_of(lf, part))
    stamps = read.stamps_of(part) if label_values else None
    if writer is None:
        runs.write_run_columns(samples, plan, sample_values, label_values, stamps)
    else:
        writer.submit(runs.stage_run_columns(samples, plan, sample_values, label_values, stamps))


def _write_in_parts(samples, plan: runs.RunPlan, read: ReadResult, spec: MethodSpec, out: MethodOutput,
                    part_size: int) -> None:
    """Writes a whole-corpus run's output in parts of ``part_size`` samples, each part's updates sent by
    a writer thread while the next part's are built (:class:`ShardWriter`): the database applies one
    part while this process prepares the next (label documents made per part, see
    :attr:`MethodOutput.label_fields`), as a streamed run's shards do."""
    n = read.annotations.num_samples
    with ShardWriter() as writer:
        for lo in range(0, n, part_size):
            _write(samples, plan, read, spec, out, writer=writer, part=slice(lo, min(n, lo + part_size)))
    runs._dataset(samples).reload()  # the writer thread wrote without reloading


class ShardWriter:
    """Sends one shard's updates in a thread while the next shard is read and computed.

    At most one write is in flight: :meth:`submit` first waits for the one
    before (and raises its error, if it failed). Leaving the ``with`` block
    waits for the last write, also when the block raised, so that nothing is
    written after the run has been discarded. The thread only sends updates
    (:func:`agreement.fo.runs.store.stage_run_columns` declared everything); the
    caller reloads the dataset afterwards.
    """

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(1, thread_name_prefix="iaa-shard-writer")
        self._pending: Future[Any] | None = None

    def submit(self, send: Callable[[], Any]) -> None:
        """Waits for the write in flight, then starts ``send()``."""
        self.wait()
        self._pending = self._pool.submit(send)

    def wait(self) -> None:
        """Waits for the write in flight (raising its error)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.wait()
            elif self._pending is not None:
                self._pending.exception()  # wait; the error already raised is the one to report
        finally:
            self._pool.shutdown(wait=True)


#: Samples per shard of a streamed run: memory grows with it (at 20,000, OT, KαLOS and geometry on
#: 100,000 samples of 3 raters × ~7 boxes peaked at 0.9 to 1.1 GiB in bench/scale_bench.py); smaller
#: shards cost more queries and more fixed work per shard.
DEFAULT_SHARD_SIZE = 20_000
#: A view of fewer than ``SHARDS_TO_OVERLAP * DEFAULT_SHARD_SIZE`` samples is cut into that many shards
#: (of at least ``MIN_DEFAULT_SHARD_SIZE``), so that the database applies one shard's writes while the
#: next is computed: on the crowd benchmark (2,000 samples) shards of 500 instead of one shard of
#: 2,000 took OT from 1.87 to 1.56 s and KαLOS from 1.27 to 1.16 s (medians of 3, end to end).
#: Not for a method whose finish reads samples again (``MethodSpec.finish_rereads``).
SHARDS_TO_OVERLAP = 4
MIN_DEFAULT_SHARD_SIZE = 500


def default_shard_size(n_samples: int) -> int:
    """The shard size of a streamed run of ``n_samples`` samples when none is given.

    ``min(DEFAULT_SHARD_SIZE, max(MIN_DEFAULT_SHARD_SIZE, ceil(n / SHARDS_TO_OVERLAP)))``: large views
    stream in shards of :data:`DEFAULT_SHARD_SIZE` (memory), smaller ones in about
    :data:`SHARDS_TO_OVERLAP` shards (the writes overlap the computation). Results do not depend on it.
    """
    return int(min(DEFAULT_SHARD_SIZE, max(MIN_DEFAULT_SHARD_SIZE, -(-int(n_samples) // SHARDS_TO_OVERLAP))))


def check_shard_size(shard_size: int | None, n_samples: int | None = None) -> int:
    """A shard size is a positive number of samples (``None``: :func:`default_shard_size` of
    ``n_samples``, or :data:`DEFAULT_SHARD_SIZE` when that is not known)."""
    if shard_size is None:
        return DEFAULT_SHARD_SIZE if n_samples is None else default_shard_size(n_samples)
    if isinstance(shard_size, bool) or not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive number of samples, got {shard_size!r}")
    return int(shard_size)


def canonical_ids(samples) -> list[str]:
    """The sample ids of ``samples`` sorted as strings: the corpus order of every streamed run.

    It depends on the samples only, never on the view's order, so that
    results are the same whatever the order and whatever the shard size.
    """
    return sorted(map(str, samples.values("id")))


@dataclass(frozen=True)
class _Run:
    """A run being computed: the view, the key, the method, its rater layout and parameters."""

    samples: Any
    key: str
    spec: MethodSpec
    layout: RaterLayout
    params: dict
    overwrite: bool = False

    def prepare(self, label_fields: Sequence[str], **options: Any) -> runs.RunPlan:
        """:func:`agreement.fo.runs.store.prepare_run` for this run's key, method and the fields it owns."""
        spec = self.spec
        return runs.prepare_run(self.samples, self.key, spec.method, spec.sample_suffixes, label_fields,
                                spec.label_suffixes, overwrite=self.overwrite, **options)


def run_method(
    samples,
    key: str,
    spec: MethodSpec,
    layout: RaterLayout | Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    execution: Execution | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> dict:
    """Runs ``spec`` on ``samples`` as run ``key`` (the lifecycle in the module docstring).

    Args:
        samples: a dataset or view (only its samples are read and written).
        key: the run key.
        spec: the method.
        layout: the rater layout shared by every method (:class:`agreement.fo.runs.options.RaterLayout`;
            a mapping of its field names is converted once, here).
        params: the method's validated parameters (recorded with the run).
        execution: where the shards of a method that streams (``spec.kernel``) run and how large they are
            (:class:`agreement.fo.runs.options.Execution`; default: serially, in shards of
            :func:`default_shard_size` of the view); see :func:`_run_streamed` and
            :mod:`agreement.fo.runs.distributed`.
        overwrite: replace an existing agreement run with this key.
        progress: optional ``callback(fraction, label)``.

    Returns:
        The summary with NaN as ``None``, the repair counts and ``warnings`` (a list of sentences, also
        recorded with the run: ``results.warnings``).
    """
    def report(fraction: float, label: str) -> None:
        if progress is not None:
            progress(fraction, label)

    params = dict(params)
    layout = RaterLayout.of(layout)
    execution = execution if execution is not None else Execution()
    shard_size, backend = execution.shard_size, execution.backend
    runs.validate_key(key)
    execution.check()
    run = _Run(samples, key, spec, layout, params, overwrite=overwrite)
    window = spec.fit_window(params) if spec.fit_window is not None else None
    if window is not None and len(samples) > window:
        if shard_size is not None:
            check_shard_size(shard_size)
        return _run_windowed(run, execution, report, window)
    if window is not None:  # a view of at most the window: fitted whole, as a method without one
        why: str | None = f"it fits views of up to fit_samples={window} samples at once"
    else:
        why = spec.whole_corpus(params) if spec.kernel is not None else "it does not stream"
    if why is None:
        if shard_size is not None:
            check_shard_size(shard_size)
        return _run_streamed(run, execution, report)
    if backend != "serial" or (shard_size is not None and check_shard_size(shard_size) < len(samples)):
        raise ValueError(f"{spec.method} needs the whole view at once ({why}): it cannot run in shards "
                         f"(shard_size={shard_size}, backend={backend!r}) of a view of {len(samples)} samples; "
                         "leave shard_size and backend unset")
    report(0.0, "reading annotations")
    read = read_whole_corpus(samples, layout, spec.read_options(params), report)
    spec.check(read, params)
    return _run_whole(run, read, report)


def _run_whole(run: "_Run", read: ReadResult, report: Progress) -> dict:
    """The rest of a whole-corpus run, from its corpus ``read`` (checked): compute, register, write in parts,
    complete."""
    samples, key, spec, params, overwrite = run.samples, run.key, run.spec, run.params, run.overwrite
    extra = spec.extra(samples, read, params)
    run.prepare(read.label_fields, check_only=True)
    report(0.1, "computing")
    out = _declared(spec.compute, spec, "compute")(read, params, lambda f, label: report(0.1 + 0.75 * f, label),
                                                   extra)
    report(0.85, "writing results")
    plan = _prepare_keeping_stamps(samples, key, overwrite, read,
                                   lambda: run.prepare(read.label_fields, scan_documents=False))
    try:
        _write_in_parts(samples, plan, read, spec, out, DEFAULT_SHARD_SIZE)
    except BaseException:
        runs.discard_incomplete_run(samples, key)
        raise
    summary = {**out.summary, **read.repairs.counts()}
    detail = {"raters": list(read.annotations.raters), **out.detail, "repairs": read.repairs.as_dict()}
    design = design_stats(read.annotations) if spec.rater_design else None
    return complete_run(samples, plan, spec, params, Outcome(read.layout, summary, detail, design), report)


def _prepare_keeping_stamps(samples, key: str, overwrite: bool, read: ReadResult | None,
                            prepare: Callable[[], runs.RunPlan]) -> runs.RunPlan:
    """``prepare()`` (the :func:`agreement.fo.runs.store.prepare_run` that frees an overwritten run and registers
    this one), keeping valid the positional write guards of the samples ``read`` before it.

    Freeing a run deletes its fields, and FiftyOne's field deletion stamps every sample's
    ``last_modified_at``: the stamps read before it would fail every guard, and every sample would be
    written a second time, by label id (a write about twice as long). So the stamps of the samples read
    are read just before and just after the free: a sample whose stamp was still the one read takes its
    new stamp; any other (changed by someone since the read) keeps the one read, its guard fails and its
    labels are written by id, as without an overwrite.
    """
    if not overwrite or read is None or read.stamps is None or key not in runs._dataset(samples).list_runs():
        return prepare()
    ids = [str(i) for i in read.annotations.sample_ids.tolist()]
    before = current_stamps(samples, ids)
    plan = prepare()
    read.refresh_stamps(before, current_stamps(samples, ids))
    return plan


def read_planned(samples, ids: Sequence[str], layout: RaterLayout, options: Mapping[str, Any], plan):
    """The samples ``ids`` of ``samples`` (in that order) as a view, and their annotations read with the
    view's corpus ``plan`` (:func:`agreement.fo.storage.reading.plan_corpus`): how a shard, a part of a
    whole-corpus read or a sample the finish needs again is read."""
    view = samples.select(list(ids), ordered=True)
    return view, read_annotations(view, **layout.as_dict(), **options, plan=plan)


#: Samples per part of a whole-corpus run's read (:func:`read_whole_corpus`); a view of at most this many is read at once.
WHOLE_READ_PART = 100_000


def _read_parts(samples, ids: Sequence[str], layout: RaterLayout, options: Mapping[str, Any], plan,
                report: Progress = lambda f, s: None, part_size: int | None = None) -> list[ReadResult]:
    """The samples ``ids`` (canonical order) read with ``plan`` in parts of ``part_size`` samples (default
    :data:`WHOLE_READ_PART`), to be joined (:func:`agreement.fo.storage.reading.join_reads`)."""
    part_size = WHOLE_READ_PART if part_size is None else part_size
    parts = []
    with gc_paused():  # the parts read so far hold millions of strings that a collection between parts would rescan
        for lo in range(0, len(ids), part_size):
            report(lo / max(len(ids), 1), f"reading annotations ({lo:,} of {len(ids):,} samples)")
            parts.append(read_planned(samples, ids[lo: lo + part_size], layout, options, plan)[1])
    return parts


def read_whole_corpus(samples, layout: RaterLayout, options: Mapping[str, Any],
                      report: Progress = lambda f, s: None, part_size: int | None = None) -> ReadResult:
    """The whole view's corpus for a method that needs it at once, read in parts of ``part_size``
    samples (default :data:`WHOLE_READ_PART`) and joined (:func:`agreement.fo.storage.reading.join_reads`).

    The decoded documents of a read take several times the memory of the
    corpus made from them (about 210 MiB against 60 MiB per 20,000 samples of
    the scale benchmark); read in parts, only one part's are alive at a
    time. A view of at most one part is read at once, in view order; a
    larger one in the canonical order of :func:`canonical_ids`, with one
    :func:`agreement.fo.storage.reading.plan_corpus` plan (the same raters, class
    codes and assignment checks as a streamed run). The plan and the parts'
    queries cost about 5 s per 100,000 samples, which is why a view of up to
    100,000 samples, whose documents fit in about 1.5 GiB, is read at once.
    """
    part_size = WHOLE_READ_PART if part_size is None else part_size
    if len(samples) <= part_size:
        return read_annotations(samples, **layout.as_dict(), **options)
    ids = canonical_ids(samples)
    plan = plan_corpus(samples, **layout.as_dict())
    parts = _read_parts(samples, ids, layout, options, plan, report=lambda f, s: report(0.1 * f, s),
                        part_size=part_size)
    with gc_paused():
        return join_reads(parts)


def process_shard(samples, job: ShardJob, spec: MethodSpec, *, report: Progress = lambda f, s: None,
                  register: Callable[[ReadResult], Any] | None = None, writer: ShardWriter | None = None) -> ShardResult:
    """Reads, computes and writes one shard of ``samples`` (the view of the run): the one step of a
    streamed run, the same in this process and on a Dask worker. ``register`` gives the run plan just
    before the first write when ``job.run_plan`` is ``None``; with a ``writer`` the shard's updates are
    sent in its thread, overlapping the next shard's read and compute."""
    n, k = job.n_shards, job.index
    where = f"shard {k + 1} of {n}: " if n > 1 else ""
    lo = 0.05 + 0.9 * k / n
    report(lo, f"{where}reading" if where else "reading annotations")
    view, read = read_planned(samples, job.ids, job.layout, spec.read_options(job.params), job.plan)
    spec.check(read, job.params)
    extra = {**spec.extra(view, read, job.params), "state": job.state, "sample_offset": job.offset}
    report(lo + 0.3 / n, f"{where}computing" if where else "computing")
    out = _declared(spec.kernel, spec, "kernel")(read, job.params, extra)
    report(lo + 0.6 / n, f"{where}writing" if where else "writing results")
    if job.run_plan is not None:
        _write(samples, job.run_plan, read, spec, out, writer)
    else:  # registered and its schema declared under one lock (one reload of the dataset document)
        if register is None:
            raise TypeError("a shard of a run not registered yet (no run_plan) needs `register`")
        with schema_lock(runs._dataset(samples)):
            _write(samples, register(read), read, spec, out, writer)
    return ShardResult(out.stats, read.repairs, read.layout, read.annotations if job.keep_annotations else None,
                       design_stats(read.annotations) if spec.rater_design else None)


def _shard_jobs(run: _Run, ids: list, shard_size: int, plan, state: Any) -> list[ShardJob]:
    """The shards of a streamed run: consecutive ``shard_size`` samples of ``ids`` (canonical order)."""
    n = -(-len(ids) // shard_size)
    return [ShardJob(method=run.spec.method, ids=ids[i: i + shard_size], index=k, n_shards=n, offset=i,
                     layout=run.layout, params=run.params, plan=plan, state=state)
            for k, i in enumerate(range(0, len(ids), shard_size))]


def _run_streamed(run: _Run, execution: Execution, report: Progress) -> dict:
    """The lifecycle of a method that streams, shard by shard in the canonical corpus order, where
    ``execution`` says (serially or on Dask, in shards of ``execution.shard_size``).

    1. check the key; plan the corpus once (:func:`agreement.fo.storage.reading.plan_corpus`:
       raters, class vocabulary, assignment checks, by aggregations); run the
       method's ``prepare``;
    2. per shard of consecutive samples of :func:`canonical_ids`
       (:func:`process_shard`): read it (projected, with the plan), run the
       method's ``kernel``, write its per-sample and per-label values, keep its
       ``stats`` and release the rest. The run is registered ``incomplete``
       with every field it will own before the first write (serially, after
       the first shard computed: a shard that fails before that costs nothing,
       not even an overwritten run); with ``backend="dask"`` the shards run on
       the workers of a Dask cluster (:mod:`agreement.fo.runs.distributed`), which
       read and write the same database, and their statistics come back in
       shard order;
    3. ``finish`` the merged statistics and complete the run.

    Serially, a shard's updates are sent by a writer thread while the next
    shard is read and computed (:class:`ShardWriter`: one write in flight), so
    that the database applies one shard while the client works on the next.
    Memory is two shards' annotations and values plus the statistics kept. A
    Python error after the first write deletes the incomplete run (nothing is
    left that no run owns); a killed process leaves it listed as incomplete,
    to be deleted or overwritten.
    """
    samples, key, spec, layout, params = run.samples, run.key, run.spec, run.layout, run.params
    shard_size, backend = execution.shard_size, execution.backend
    ids = canonical_ids(samples)
    if not ids:
        raise AnnotationError(f"the view of dataset {samples._dataset.name!r} has no samples")
    if shard_size is None and spec.finish_rereads:
        shard_size = DEFAULT_SHARD_SIZE  # one shard for a small view: its re-reads are served from memory
    if shard_size is None and spec.shard_cap is not None:
        shard_size = min(default_shard_size(len(ids)), spec.shard_cap)
    shard_size = check_shard_size(shard_size, len(ids))
    plan = plan_corpus(samples, **layout.as_dict())
    # the key and the declarations are checked now; the documents are scanned for stray label attributes
    # of the run's names while the run plans and reads its first shard, and waited for before its first write
    check = run.prepare(plan.label_fields, check_only=True, scan_documents="background")
    context = StreamContext(ids, groups=chance_groups(samples, ids))
    if spec.prepare is not None:
        report(0.02, "planning")
        context.state = spec.prepare(samples, plan, ids, layout, params)
    jobs = _shard_jobs(run, ids, shard_size, plan, context.state)
    registered: list = []

    def register(read: ReadResult | None = None):  # ``read``: the shard read before, to be written first
        if not registered:
            check.check_documents()
            registered.append(_prepare_keeping_stamps(samples, key, run.overwrite, read, lambda: run.prepare(
                plan.label_fields, scan_documents=False)))
        return registered[0]

    try:
        # the last shard's write (every write, for a run of one shard) is sent while the statistics
        # merge and finish; it is waited for before the run completes, or before a failed run is discarded
        with ShardWriter() as writer:  # shard k is written while shard k + 1 is read and computed
            if backend == "dask":
                for job in jobs:
                    job.run_plan = register()
                results = run_shards(samples, jobs, report, spec, process_shard,
                                     dask_address=execution.dask_address, workers=execution.workers)
            else:
                results = []
                jobs[0].keep_annotations = len(jobs) == 1  # one shard: a re-read is served from memory
                for job in jobs:
                    job.run_plan = registered[0] if registered else None  # the first shard registers
                    results.append(process_shard(samples, job, spec, report=report, register=register, writer=writer))
            stats, repairs = [r.stats for r in results], RepairReport()
            for r in results:
                repairs.merge(r.repairs)
            record, in_memory = results[-1].layout, results[0].annotations
            design = merge_design([r.design for r in results])
            del results
            report(0.95, "merging shards")

            def read_samples(wanted):  # samples the finish needs again (e.g. a chance sample), in canonical order
                wanted = [str(i) for i in wanted]
                if in_memory is not None:  # the run's only shard, still here: the same corpus, without a query
                    pos = {sid: i for i, sid in enumerate(map(str, in_memory.sample_ids))}
                    return in_memory.select_samples(np.array([pos[i] for i in wanted], dtype=np.intp))
                return read_planned(samples, wanted, layout, spec.read_options(params), plan)[1].annotations

            context.read_samples = read_samples
            summary, detail = _declared(spec.finish, spec, "finish")(stats, params, context)
    except BaseException:
        if registered:
            runs.discard_incomplete_run(samples, key)
        raise
    summary = {**summary, **repairs.counts()}
    detail = {"raters": list(plan.raters), **detail, "repairs": repairs.as_dict(),
              "shards": {"n_shards": len(jobs), "shard_size": shard_size, "backend": backend}}
    # register_run reloads the dataset and its samples under the schema lock: the writer thread wrote
    # without reloading, so no other reload is needed
    return complete_run(samples, registered[0], spec, params, Outcome(record, summary, detail, design), report)


def _run_windowed(run: _Run, execution: Execution, report: Progress, window: int) -> dict:
    """The lifecycle of a method fitted on a window (:attr:`MethodSpec.fit_window`) of a view larger than it.

    1. plan the corpus; read the first ``window`` samples of :func:`canonical_ids` with the plan (in parts of
       :data:`WHOLE_READ_PART`, joined); if the method refuses to fit this corpus on a window
       (``window_refusal``), read the rest too and run it on the whole view (:func:`_run_whole`);
    2. ``compute`` fits on the window (``extra["window"]``: :class:`FitWindow`) and gives the window's values
       and its ``stats``; register the run and write the window in parts (a writer thread);
    3. release the window and stream the rest in shards of ``execution.shard_size`` (default
       :data:`DEFAULT_SHARD_SIZE`; serially or on Dask), each shard's ``kernel`` given the window's ``stats`` as
       ``extra["state"]`` (:func:`process_shard`: read, compute, write, release);
    4. ``finish`` the window's and the shards' statistics, in corpus order; complete.

    Every sample is read once; memory is the window's, then a shard's. A Python error after the run is
    registered deletes the incomplete run.
    """
    samples, key, spec, layout, params = run.samples, run.key, run.spec, run.layout, run.params
    ids = canonical_ids(samples)
    shard_size = check_shard_size(execution.shard_size if execution.shard_size is not None else DEFAULT_SHARD_SIZE)
    plan = plan_corpus(samples, **layout.as_dict())
    check = run.prepare(plan.label_fields, check_only=True, scan_documents="background")
    options = spec.read_options(params)
    parts = _read_parts(samples, ids[:window], layout, options, plan, report=lambda f, s: report(0.1 * f, s))
    with gc_paused():
        read = join_reads(parts)
    del parts
    spec.check(read, params)
    why = spec.window_refusal(read, params)
    if why is not None:  # one fit over every sample: the rest is read too (in parts, as a whole-corpus read)
        rest = _read_parts(samples, ids[window:], layout, options, plan, report=lambda f, s: report(0.1 * f, s))
        with gc_paused():
            read = join_reads([read, *rest])
        del rest
        check.check_documents()
        return _run_whole(run, read, report)
    extra = {**spec.extra(samples, read, params), "window": FitWindow(samples, ids, window, plan)}
    report(0.1, f"fitting on the first {window:,} samples")
    out = _declared(spec.compute, spec, "compute")(read, params, lambda f, label: report(0.1 + 0.3 * f, label),
                                                   extra)
    check.check_documents()
    registered = _prepare_keeping_stamps(samples, key, run.overwrite, read, lambda: run.prepare(
        plan.label_fields, scan_documents=False))
    try:
        with ShardWriter() as writer:
            report(0.4, "writing the fitted samples")
            for lo in range(0, window, DEFAULT_SHARD_SIZE):
                _write(samples, registered, read, spec, out, writer=writer, part=slice(lo, min(window, lo + DEFAULT_SHARD_SIZE)))
            state, record, repairs = out.stats, read.layout, read.repairs
            designs = [design_stats(read.annotations) if spec.rater_design else None]
            del read, out
            jobs = _shard_jobs(run, ids[window:], shard_size, plan, state)
            for job in jobs:
                job.offset, job.run_plan = job.offset + window, registered
            stream = lambda f, label: report(0.45 + 0.5 * f, label)  # noqa: E731
            if execution.backend == "dask":
                results = run_shards(samples, jobs, stream, spec, process_shard,
                                     dask_address=execution.dask_address, workers=execution.workers)
            else:
                results = [process_shard(samples, job, spec, report=stream, writer=writer) for job in jobs]
            for r in results:
                repairs.merge(r.repairs)
            stats, design = [state] + [r.stats for r in results], merge_design(designs + [r.design for r in results])
            del results
            report(0.95, "merging shards")
            summary, detail = _declared(spec.finish, spec, "finish")(stats, params, StreamContext(ids, state=state))
    except BaseException:
        runs.discard_incomplete_run(samples, key)
        raise
    summary = {**summary, **repairs.counts()}
    detail = {"raters": list(plan.raters), **detail, "repairs": repairs.as_dict(),
              "shards": {"n_shards": len(jobs), "shard_size": shard_size, "backend": execution.backend,
                         "fit_samples": window}}
    return complete_run(samples, registered, spec, params, Outcome(record, summary, detail, design), report)
