"""Video benchmark: every compute operator on frame-level boxes and on temporal segments, against a bare read.

A simulated video dataset (:func:`agreement.fo.simulate.video.simulate_video_dataset`): ``--videos``
videos (default 1,000) x ``--frames`` frames (300) x ``--raters`` raters (3) x ``--objects`` boxes (5) per
frame, one frame field per rater (``frames.<rater>``, ``Detections`` with the track id as ``index``) and one
``TemporalDetections`` field per rater. Each operator runs end to end through ``execute_operator`` (copy of
the frames into frame units, read, compute, chance baseline, write-back to the frames, per-video aggregates,
run registration) in a child process that prints its seconds and peak resident memory (``ru_maxrss``).

Printed per operator: seconds, the ratio to a bare ``values()`` read of what the frame operators need (the
frames' ids and the raters' frame labels' ids, boxes, classes and track ids:
``frames.<rater>.detections.bounding_box`` etc.; a read of whole frame label fields builds millions of Label
objects, over 17 GB here) or of the segment fields, measured in the same run (target: within 2x), and the
peak memory (target: under 3 GiB). With ``--read raw`` the frame read is one raw find of the same fields on
the frames collection (for sizes where ``values()`` does not finish). Then, in the operator's process after its
run, a bare write of the run's own values (``scale_bench.bare_write``: one bulk ``UpdateOne`` per frame and per
video, to fresh names) and the ratio to read + write.

Options for iterating: ``--which frames``, ``--operators ...``, ``--profile DIR`` (a cProfile of each
operator's run, its worker threads included, as ``DIR/<operator>_<fields>.prof``), ``--no-record`` (print
only; ``bench/results`` untouched).

Run with ``scripts/with-temp-fiftyone.sh .venv/bin/python bench/video_bench.py [--videos 100]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from write_page import appended, record  # noqa: E402  (bench/ is this script's folder)

#: (operator, parameters, which fields: "frames" or "segments")
OPERATORS: list[tuple[str, dict, str]] = [
    ("compute_kalos", {}, "frames"),
    ("compute_ot_agreement", {}, "frames"),
    ("compute_geometry_agreement", {}, "frames"),
    ("compute_consensus", {}, "frames"),
    ("compute_track_agreement", {}, "frames"),
    ("compute_kalos", {}, "segments"),
    ("compute_ot_agreement", {}, "segments"),
    ("compute_geometry_agreement", {}, "segments"),
    ("compute_consensus", {}, "segments"),
]


def child(dataset: str, name: str, fields: list[str], params: dict, profile: str | None = None) -> None:
    """Runs operator ``name`` on ``dataset`` and prints its seconds and this process's peak memory in GiB
    (with ``profile``, a cProfile of the run is saved there)."""
    import fiftyone as fo
    import fiftyone.operators as foo

    ds = fo.load_dataset(dataset)
    profiles = _profile_threads() if profile else []
    t = time.perf_counter()
    res = foo.execute_operator(f"@iaa/agreement/{name}",
                               ctx=dict(view=ds.view(), params=dict(fields=fields, key="bench", **params)))
    elapsed = time.perf_counter() - t
    if profile and profiles:
        import pstats

        stats = pstats.Stats(profiles[0])
        for p in profiles[1:]:
            stats.add(p)
        stats.dump_stats(profile)
    if res.error:
        raise SystemExit(f"{name} failed: {res.error_message or res.error}")
    peak = _peak_gib()
    from scale_bench import bare_write  # noqa: E402  (bench/ is this script's folder)

    write = bare_write(ds, "bench")["seconds"]  # the run's own values written again by a bare bulk update
    ds.delete_run("bench")
    print(f"{elapsed:.2f} {peak:.2f} {write:.2f}")


def _profile_threads() -> list:
    """cProfiles every task that a thread pool runs from now on (``execute_operator`` runs the operator in one):
    the list fills with one profile per task, to be merged."""
    import cProfile
    from concurrent.futures import thread

    profiles: list = []
    run = thread._WorkItem.run

    def profiled(self):
        prof = cProfile.Profile()
        profiles.append(prof)
        prof.runcall(run, self)

    thread._WorkItem.run = profiled  # type: ignore[method-assign]
    return profiles


def _peak_gib() -> float:
    """This process's peak resident memory: ``VmHWM`` (Linux; reset when a program starts, whereas
    ``ru_maxrss`` keeps the resident size the parent had when it started this process), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def bare_read(ds, paths: list[str], raw: bool = False) -> float:
    """Seconds of ``ds.values(paths)``; with ``raw``, of one find of the same frame paths on the frames
    collection (documents kept, as ``values()`` keeps its lists)."""
    t = time.perf_counter()
    if raw:
        stored = {p[len("frames."):].replace(".id", "._id") for p in paths if p.startswith("frames.")}
        stored = {"_id" if p == "id" else p for p in stored}
        list(ds._frame_collection.find({}, {"_sample_id": 1, **dict.fromkeys(stored, 1)}, batch_size=10_000))
    else:
        ds.values(paths)
    return time.perf_counter() - t


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=1_000)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--objects", type=int, default=5)
    parser.add_argument("--operators", nargs="*", help="only these operators (default: all)")
    parser.add_argument("--which", choices=("frames", "segments"), help="only the operators on these fields")
    parser.add_argument("--profile", metavar="DIR", help="save a cProfile of each operator run in DIR")
    parser.add_argument("--read", choices=("values", "raw"), default="values",
                        help="the frame read measured: FiftyOne's values() (default) or a raw find of the same fields")
    parser.add_argument("--no-record", action="store_true", help="print only: leave bench/results untouched")
    parser.add_argument("--append", action="store_true",
                        help="keep the recorded rows of the operators not measured now (each against the read of "
                             "its own run; the bare-read rows are this run's; the page says which run each came from)")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="5 videos x 20 frames: to check that it works")
    args = parser.parse_args(argv)
    if args.quick and not args.child:
        args.videos, args.frames = 5, 20
    if args.child:
        import json

        dataset, name, fields, params, profile = args.child
        return child(dataset, name, fields.split(","), json.loads(params), profile or None)
    os.environ.setdefault("FIFTYONE_PLUGINS_DIR", ROOT)
    from agreement.fo.simulate.video import simulate_video_dataset, video_field_names

    t = time.perf_counter()
    ds, sim = simulate_video_dataset(num_videos=args.videos, num_frames=args.frames, num_objects=args.objects,
                                     num_raters=args.raters, reference_field=None, persistent=True, seed=0,
                                     media="none")  # the operators read labels only: no rendering
    names = video_field_names(sim.raters)
    frames = [f"frames.{names['frames'][r]}" for r in sim.raters]
    segments = [names["segments"][r] for r in sim.raters]
    n_labels = ds.count(f"{frames[0]}.detections") * len(frames)
    print(f"# {platform.node() or 'machine'}: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"built {args.videos:,} videos x {args.frames} frames x {len(frames)} raters "
          f"({n_labels:,} frame labels) in {time.perf_counter() - t:.1f} s")
    # The frame labels' own values (box, class, track id of every box), not Label objects: FiftyOne's
    # values() of whole frame label fields builds 4.4 M Detection objects (over 17 GB resident and more than
    # 35 minutes here before it was stopped), which no user waits for and which would flatter every ratio.
    paths = ["frames.id"] + [f"{f}.detections.{leaf}" for f in frames for leaf in ("id", "bounding_box", "label", "index")]
    base = {"frames": bare_read(ds, paths, raw=args.read == "raw"),
            "segments": statistics.median(bare_read(ds, segments) for _ in range(3))}
    print(f"bare {args.read} read: frame and label ids, boxes, classes, track ids {base['frames']:.2f} s, "
          f"segment fields {base['segments']:.2f} s")
    print(f"{'operator':<28} {'fields':<9} {'seconds':>8} {'x read':>7} {'write s':>8} {'x r+w':>7} {'peak GiB':>9}")
    read_name = "`values()`" if args.read == "values" else "raw find"
    rows = [[f"bare {read_name} of the frame ids and the frame labels' ids, boxes, classes and track ids", "frames",
             f"{base['frames']:.2f}", "1.00", "", "", ""],
            ["bare `values()` of the segment fields (median of 3)", "segments", f"{base['segments']:.2f}", "1.00",
             "", "", ""]]
    import json

    for name, params, which in OPERATORS:
        if (args.operators and name not in args.operators) or (args.which and which != args.which):
            continue
        profile = os.path.join(args.profile, f"{name}_{which}.prof") if args.profile else ""
        fields = frames if which == "frames" else segments
        out = subprocess.run([sys.executable, __file__, "--child", ds.name, name, ",".join(fields),
                              json.dumps(params), profile], capture_output=True, text=True,
                             env={**os.environ, "FIFTYONE_PLUGINS_DIR": ROOT})
        if out.returncode:
            tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["?"]
            print(f"{name:<28} {which:<9} failed: {tail[0][:200]}", flush=True)
            rows.append([f"`{name}`", which, f"failed: {tail[0][:120]}", "", "", "", ""])
            continue
        seconds, peak, write = map(float, out.stdout.split()[-3:])
        floor = base[which] + write
        print(f"{name:<28} {which:<9} {seconds:8.1f} {seconds / base[which]:7.2f} {write:8.1f} "
              f"{seconds / floor:7.2f} {peak:9.2f}", flush=True)
        rows.append([f"`{name}`", which, f"{seconds:.1f}", f"{seconds / base[which]:.2f}", f"{write:.1f}",
                     f"{seconds / floor:.2f}", f"{peak:.2f}"])
    ds.delete()
    if args.no_record:
        return
    options = " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])
    if args.append and not args.quick:
        rows, options = _appended(rows, options)
    record("video", COLUMNS, rows, options=options,
           about=f"{args.videos:,} simulated videos × {args.frames} frames × {args.raters} raters × "
                 f"{args.objects} boxes ({n_labels:,} frame labels), each operator end to end through "
                 f"`execute_operator` in a fresh process, against a bare {read_name} read of what the operators "
                 f"read (the frames' ids and the frame labels' ids, boxes, classes and track ids; FiftyOne's "
                 f"`values()` of the whole frame "
                 f"label fields builds a `Detection` per box and is far slower at this size); and against that read "
                 f"plus a bare write of the run's own values (one bulk `UpdateOne` per frame and per video, to fresh "
                 f"names, timed in the operator's process after its run).",
           notes=notes(rows), quick=args.quick)


COLUMNS = ["operator", "fields", "seconds", "× that read", "bare write (s)", "× read + write", "peak (GiB)"]


def _appended(rows: list[list[str]], options: str) -> tuple[list[list[str]], str]:
    """``rows`` with the recorded operator rows this run did not measure (``--append``, :func:`write_page.appended`),
    this run's bare reads first, then the operators in :data:`OPERATORS` order."""
    rows, options = appended("video", COLUMNS, rows, options, key=lambda r: (r[0], r[1]),
                             keep=lambda r: not r[0].startswith("bare"))
    order = {(f"`{name}`", which): i for i, (name, _, which) in enumerate(OPERATORS)}
    reads = [r for r in rows if r[0].startswith("bare")]
    return reads + sorted((r for r in rows if not r[0].startswith("bare")),
                          key=lambda r: order.get((r[0], r[1]), 99)), options


def notes(rows: list[list[str]]) -> str:
    """What to read from the table: the targets, and the rows that miss them (from the rows as recorded)."""
    over, heavy = [], []
    for name, which, _seconds, x_read, _write, x_floor, peak in rows:
        if which != "frames" or not x_floor:
            continue
        if float(x_read) > 2:
            over.append(f"{name.strip('`')} {x_read}× ({x_floor}× read + write)")
        if peak and float(peak) >= 3:
            heavy.append(f"{name.strip('`')} {peak} GiB")
    text = ("Targets (issue 51): every frame operator within 2× the read of the frame fields it needs, peak under "
            "3 GiB (consensus included). ")
    text += f"Over 2× the read: {', '.join(over)}. " if over else "Every frame operator is within 2× the read. "
    text += f"Peak at or over 3 GiB: {', '.join(heavy)}. " if heavy else "Every peak is under 3 GiB. "
    return text + ("What a frame run adds to its read and write: it copies the view's frames into temporary frame "
                   "units inside MongoDB (one aggregation, nothing through Python) and reads the units; it writes "
                   "each frame's values once, straight to the frame documents.")


if __name__ == "__main__":
    main()
