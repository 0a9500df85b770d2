"""Import benchmark: ``import_judgements`` of the shared AdultContent3 crowd, against FiftyOne's ``add_samples``.

The crowd (``../shared/data/adultcontent3_hcomp2010_labels.tsv``: 44,373
judgements, 496 items, 338 workers, ~35k labels after the categories G, P,
R, X) imported twice per repeat, interleaved: once as the plugin does it
(sample and label documents inserted in bulk,
:mod:`agreement.fo.storage.bulk_insert`), once through FiftyOne objects
(one ``fo.Sample`` and one ``fo.Classification`` per label, then
``dataset.add_samples``: how the import was written before, and the
reference of ``tests/test_bulk_insert.py``). Everything else of the import
(reading and repairing the file, the media type, the info record, the swap)
is the same code in both.

Printed: seconds of each (median of ``--repeat``, default 3), their ratio,
and whether the two datasets are identical (every sample's ``to_dict()``
without ids and timestamps, in order; the field schema; ``dataset.info``).
Target: the bulk import under 10 s. ``--profile`` prints cProfile's top
entries of one bulk import.

Run with ``scripts/with-temp-fiftyone.sh .venv/bin/python bench/import_bench.py``.
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import statistics
import sys
import time
import warnings
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from write_page import BENCHMARKS, record  # noqa: E402  (bench/ is this script's folder)

# the import before the bulk insert, one FiftyOne object per label: the reference the tests compare with
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from test_bulk_insert import reference_insert, reference_samples, strip_volatile  # noqa: E402

TSV = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.pardir, "shared", "data",
                   "adultcontent3_hcomp2010_labels.tsv")


def import_bulk(name: str):
    """The plugin's import."""
    from agreement.fo.importers.judgements import import_judgements

    return import_judgements(TSV, name, categories=["G", "P", "R", "X"], unknown_labels="drop", persistent=False,
                             overwrite=True)[0]


def import_objects(name: str):
    """The same import through FiftyOne objects and ``add_samples``."""
    import agreement.fo.importers.judgements as J

    with mock.patch.object(J, "_sample_docs", reference_samples), \
            mock.patch.object(J, "insert_sample_docs", reference_insert), \
            mock.patch.object(J, "_declare_fields", lambda dataset, field, media_type: None):
        return import_bulk(name)


def identical(a, b) -> bool:
    """Same samples in the same order (``to_dict()`` without ids and timestamps), schema and info."""
    schema = [(k, str(v)) for k, v in a.get_field_schema(flat=True, include_private=True).items()]
    other = [(k, str(v)) for k, v in b.get_field_schema(flat=True, include_private=True).items()]
    return (schema == other and a.info == b.info and a.media_type == b.media_type
            and [strip_volatile(s.to_dict()) for s in a] == [strip_volatile(s.to_dict()) for s in b])


def _timed(fn, name: str):
    t = time.perf_counter()
    ds = fn(name)
    return time.perf_counter() - t, ds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top entries of one bulk import")
    parser.add_argument("--quick", action="store_true", help="one repeat")
    args = parser.parse_args()
    if not os.path.exists(TSV):
        sys.exit(f"shared data not found: {os.path.basename(TSV)} is expected in ../shared/data")
    warnings.simplefilter("ignore")  # the crowd's items have no files: the media type warning, each run
    logging.getLogger("agreement").setLevel(logging.ERROR)
    repeat = 1 if args.quick else args.repeat
    bulk, objects = [], []
    for _ in range(repeat):
        seconds, new = _timed(import_bulk, "bench-import-bulk")
        bulk.append(seconds)
        seconds, old = _timed(import_objects, "bench-import-objects")
        objects.append(seconds)
    same = identical(new, old)
    n_labels = new.count("judgements.classifications")
    fast, slow = statistics.median(bulk), statistics.median(objects)
    print(f"{len(new)} samples, {n_labels} labels; identical datasets: {same}")
    print(f"import_judgements (bulk insert):     {fast:6.2f} s (median of {repeat})")
    print(f"through FiftyOne objects (before):   {slow:6.2f} s (median of {repeat})")
    print(f"speed-up: {slow / fast:.1f}x; target under 10 s: {'met' if fast < 10 else 'MISSED'}")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(import_bulk, "bench-import-profile")
        pstats.Stats(profile).sort_stats("cumulative").print_stats(15)
    if "import" in {name for name, _, _ in BENCHMARKS}:
        rows = [["`import_judgements` (documents in bulk)", f"{fast:.2f}", "1.00"],
                ["the same through FiftyOne objects and `add_samples` (before)", f"{slow:.2f}",
                 f"{slow / fast:.1f}"]]
        record("import", ["import", "seconds", "× bulk"], rows, quick=args.quick,
               about=f"`import_judgements` of the shared AdultContent3 crowd (44,373 judgements; {len(new)} "
                     f"samples, {n_labels} labels), against the same import through FiftyOne objects and "
                     f"`add_samples`, interleaved, medians of {repeat}. Identical datasets: {same}.",
               notes=f"Target: under 10 s ({'met' if fast < 10 else 'missed'}).")
    else:
        print("(not recorded for the benchmarks page: 'import' is not among write_page.BENCHMARKS)")


if __name__ == "__main__":
    main()
