"""Runs under interruption and concurrency: nothing is left without an owner, no declaration is lost.

Both tests start real processes against the test run's database (the
environment, including ``FIFTYONE_DATABASE_URI``, is inherited).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.fiftyone

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _crowd_dataset(fo, name: str, samples: int = 300):
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(samples, 4, raters_per_sample=4, min_objects=2, max_objects=6, seed=5)
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name, persistent=True)
    ds.add_samples(samples_from_corpus(corpus, [f"/d/{i}.jpg" for i in range(samples)], layout="fields",
                                       raters_field=None), progress=False)
    return ds, list(corpus.raters)


def _spawn(script: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _leftovers(ds, key: str) -> list[str]:
    """Every document path holding a value of run ``key`` (sample fields or label attributes)."""
    found = []
    coll = ds._sample_collection
    for doc in coll.find({}, limit=50):
        for name, value in doc.items():
            if name.startswith(f"{key}_"):
                found.append(name)
            if isinstance(value, dict) and isinstance(value.get("detections"), list):
                for det in value["detections"]:
                    found += [f"{name}.{a}" for a in det if a.startswith(f"{key}_")]
    return sorted(set(found))


def test_killed_run_is_listed_incomplete_and_can_be_overwritten_and_deleted(fo):
    from agreement.fo import runs

    ds, raters = _crowd_dataset(fo, "iaa-lifecycle-kill")
    flag = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"iaa-kill-{os.getpid()}")
    try:
        proc = _spawn(f"""
            import time, fiftyone as fo
            import agreement.fo.storage.writing as w
            from agreement.fo.methods.ot_agreement import compute_ot_agreement
            real = w._bulk
            def hang(dataset, ops, *args):
                w.BATCH = 10                       # several batches: the first ones land, then the process hangs
                ops = list(ops)
                real(dataset, ops[:len(ops) // 2])
                open({flag!r}, "w").close()
                time.sleep(600)
            w._bulk = hang
            compute_ot_agreement(fo.load_dataset("iaa-lifecycle-kill"), "kt", fields={raters!r})
        """)
        deadline = time.time() + 240
        while not os.path.exists(flag):
            assert proc.poll() is None, proc.stdout.read()
            assert time.time() < deadline, "the run never reached its write-back"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        ds.reload()
        assert "kt" in runs.list_agreement_runs(ds)
        assert runs.get_agreement_run_info(ds, "kt")["status"] == "incomplete"
        assert _leftovers(ds, "kt")  # it did write before it died
        with pytest.raises(runs.RunError, match="overwrite=True"):
            runs.prepare_run(ds, "kt", "iaa.ot_agreement", ["ot"], check_only=True)
        from agreement.fo.methods.ot_agreement import compute_ot_agreement

        compute_ot_agreement(ds, "kt", fields=raters, overwrite=True)
        assert runs.get_agreement_run_info(ds, "kt")["status"] == "complete"
        runs.delete_agreement_run(ds, "kt")
        assert _leftovers(ds, "kt") == []
        assert not any(f.startswith("kt_") for f in ds.get_field_schema())
    finally:
        if os.path.exists(flag):
            os.remove(flag)
        ds.delete()


def test_concurrent_runs_keep_every_declaration_and_delete_cleanly(fo):
    from agreement.fo import runs

    ds, raters = _crowd_dataset(fo, "iaa-lifecycle-concurrent", samples=150)
    try:
        procs = [_spawn(f"""
            import fiftyone as fo
            from agreement.fo.methods.kalos import compute_kalos
            compute_kalos(fo.load_dataset("iaa-lifecycle-concurrent"), "k{i}", fields={raters!r})
        """) for i in range(4)]
        for p in procs:
            out, _ = p.communicate(timeout=600)
            assert p.returncode == 0, out
        ds.reload()
        schema = ds.get_field_schema()
        for i in range(4):
            key = f"k{i}"
            info = runs.get_agreement_run_info(ds, key)
            assert info["status"] == "complete"
            for f in info["sample_fields"]:
                assert f in schema, (key, f)
            for lf, attr in info["label_attrs"]:
                assert ds.get_field(f"{lf}.detections.{attr}") is not None, (key, lf, attr)
        for i in range(4):
            runs.delete_agreement_run(ds, f"k{i}")
            assert _leftovers(ds, f"k{i}") == []
    finally:
        ds.delete()


def test_schema_lock_is_reentrant_in_a_thread_and_exclusive_across_threads(fo, monkeypatch):
    import threading

    from agreement.fo.runs import locking

    ds = fo.Dataset()
    reloads = []
    monkeypatch.setattr(type(ds), "reload", lambda self: reloads.append(1))
    order = []
    try:
        with locking.schema_lock(ds):
            with locking.schema_lock(ds):  # held by this thread: no wait, no second reload
                order.append("inner")
            assert reloads == [1]

            def other():
                with locking.schema_lock(ds, timeout=30):
                    order.append("other")

            t = threading.Thread(target=other)
            t.start()
            t.join(0.3)
            assert t.is_alive(), "another thread took the lock while this one held it"
            order.append("outer done")
        t.join(30)
        assert order == ["inner", "outer done", "other"]
        assert reloads == [1, 1]
    finally:
        ds.delete()
