"""The wiring of the validation matrix's 'video_classes' part: its designs are what they claim to be
(random raters independent, invariance variants really different corpora), so that a passing cell means
something. Fast: designs only, no statistic."""

from __future__ import annotations

import numpy as np

from validation_matrix import vc_classes, vc_temporal, vc_temporal_data as D


def test_random_class_raters_are_independent():
    for het in (False, True):
        codes = vc_classes.random_codes(0, het)
        both = (codes[:, :, None] >= 0) & (codes[:, None, :] >= 0)
        same = (codes[:, :, None] == codes[:, None, :]) & both
        off = ~np.eye(codes.shape[1], dtype=bool)
        share = same[:, off].sum() / max(both[:, off].sum(), 1)
        assert share < 0.9, f"random raters agree on {share:.0%} of shared items: one stream?"


def test_random_segment_raters_are_independent():
    for het in (False, True):
        clips = D.random_clips(0, het)
        copies = sum(np.array_equal(a[0], b[0]) for _, d in clips for a, b in zip(list(d.values()),
                                                                               list(d.values())[1:]))
        assert copies <= len(clips) // 20, f"{copies} clips where two random raters drew the same segments"


def test_frame_rate_variants_resample():
    truth = D.true_clips(0)
    base, variants = vc_temporal.segment_invariance(truth)
    b = np.concatenate([np.concatenate([x[0] for x in d.values()]) for _, d in base])
    for name in ("×0.5 frame rate",):
        v = np.concatenate([np.concatenate([x[0] for x in d.values()]) for _, d in variants[name][0]])
        assert b.shape == v.shape and not np.array_equal(b, v), f"{name}: the same corpus as the original"
    halves = D.resampled(D.jittered(truth, 0.2), 0.5)
    assert [n for n, _ in halves] != [n for n, _ in D.jittered(truth, 0.2)]


def test_the_matrix_names_shared_methods_as_the_images_part():
    """One table per method on the page: the temporal part names OT, KαLOS and geometry statistics exactly as
    the images part does."""
    from validation_matrix.images_stats import STATS

    assert set(vc_temporal.METHODS.values()) <= {s.method for s in STATS.values()}


# ----------------------------------------------------------------------------- semantic masks and tracks


def test_random_mask_raters_are_independent():
    from validation_matrix import vc_masks
    for het in (False, True):
        samples = vc_masks.random_masks(0, het)
        same = [np.array_equal(a, b) for row in samples for a, b in zip([m for m in row if m is not None],
                                                                        [m for m in row if m is not None][1:])]
        assert sum(same) <= len(same) // 20, f"{sum(same)} of {len(same)} rater pairs drew the same mask"


def test_heterogeneous_masks_are_heterogeneous():
    from validation_matrix import vc_masks
    samples = vc_masks.random_masks(0, True)
    sides = np.array([next(m for m in row if m is not None).shape for row in samples])
    raters = np.array([sum(m is not None for m in row) for row in samples])
    assert sides.min() <= 128 and sides.max() >= 2048, sides
    assert len(samples[0]) == 200 and raters.min() >= 2 and raters.max() <= 5 and raters.max() > raters.min()


def test_mask_noise_is_coupled_and_grows():
    from validation_matrix import vc_masks
    truth = vc_masks.truths(0, S=4)
    assert all(np.array_equal(m, t) for row, t in zip(vc_masks.noisy(truth, 0), truth) for m in row)
    for stage in ("boundary", "pixels"):
        wrong = [np.mean([(m != t).mean() for row, t in zip(vc_masks.noisy(truth, L, stages=(stage,)), truth)
                          for m in row]) for L in (1, 2, 4)]
        assert 0 < wrong[0] < wrong[1] < wrong[2], (stage, wrong)


def test_mask_invariance_variants_change_the_corpus(monkeypatch):
    from validation_matrix import vc_masks
    base = vc_masks.noisy(vc_masks.truths(0, S=6), 2)
    seen = []
    monkeypatch.setattr(vc_masks, "scores", lambda samples, keys=None, **kw: seen.append((samples, kw)) or {})
    for thunk in vc_masks.invariance_designs(base).values():
        thunk()
    perm, rater, renamed, up, sampled = seen
    assert [id(s) for s in perm[0]] != [id(s) for s in base]
    assert np.array_equal(rater[0][0][0], base[0][2]) and not np.array_equal(renamed[0][0][0], base[0][0])
    assert up[0][0][0].shape == (128, 128) and up[1] == {} and sampled[1] == {"n_pixels": 10_000}  # tolerance: relative


def test_random_track_raters_are_independent():
    from validation_matrix import vc_tracks
    for het in (False, True):
        corpus = vc_tracks.random_corpus(0, het)
        copies = sum(np.array_equal(a.boxes, b.boxes) for d in corpus
                     for a, b in zip(list(d.values()), list(d.values())[1:]))
        assert copies == 0, f"{copies} pairs of random raters drew the same tracks"
        same_classes = vc_tracks.random_corpus(0, het, classes_only=True)
        d = same_classes[0]
        a, b = list(d.values())[:2]
        assert np.array_equal(a.boxes, b.boxes) and not np.array_equal(a.labels, b.labels)


def test_heterogeneous_clips_span_lengths_sparsely():
    from validation_matrix import vc_tracks
    corpus = vc_tracks.random_corpus(1, True)
    last = [max(int(t.frames.max()) for t in d.values() if len(t.frames)) for d in corpus]
    frames = [len(np.unique(np.concatenate([t.frames for t in d.values()]))) for d in corpus]
    assert min(last) <= 400 and max(last) >= 1000 and max(frames) <= 60, (last, frames)
    assert all(2 <= len(d) <= 5 for d in corpus)


def test_track_invariance_variants_change_the_corpus():
    from agreement.simulate.video import VideoNoise
    from validation_matrix import vc_tracks
    base = vc_tracks.simulated(VideoNoise.scaled(1.0), videos=2, frames=10)
    v = vc_tracks.invariance_variants(base)
    b, d = base[0]["r0"], v["×2 frame rate"][0]["r0"]
    assert len(d.frames) == 2 * len(b.frames) and set(d.frames.tolist()) == {*(2 * b.frames), *(2 * b.frames + 1)}
    assert set(v["raters renamed"][0]) == {"zoe", "mo", "al"}
    assert not np.array_equal(v["track ids renumbered, boxes shuffled"][0]["r0"].track_ids, b.track_ids)
    assert not np.array_equal(v["classes renamed"][0]["r0"].labels, b.labels)


def test_the_video_classes_part_includes_masks_and_tracks(monkeypatch):
    from validation_matrix import Cell, vc_classes, vc_masks, vc_temporal, vc_tracks, video_classes
    stub = lambda name: lambda: [Cell(name, "k", "identical", "1", True)]  # noqa: E731
    for mod, fn in ((vc_classes, "cells"), (vc_temporal, "segment_cells"), (vc_temporal, "frame_cells"),
                    (vc_masks, "cells"), (vc_tracks, "cells")):
        monkeypatch.setattr(mod, fn, stub(f"{mod.__name__}.{fn}"))
    names = [c.method for c in video_classes.cells()]
    assert "validation_matrix.vc_masks.cells" in names and "validation_matrix.vc_tracks.cells" in names
    assert set(vc_masks.METHODS) == {"alpha", "dice", "iou", "boundary_f1", "sensitivity", "specificity"}
