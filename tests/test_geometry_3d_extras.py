"""3D points, 3D polylines and point-index segments through the registry:
ordering (noisier annotations score lower), KaLOS units, and bad input."""

import numpy as np
import pytest

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.similarity import check_similarity
from agreement.methods.geometry_agreement import geometry_agreement
from agreement.methods.kalos import kalos_alpha


def _corpus(kind: str, noise: float, n_samples: int = 40, n_raters: int = 3, seed: int = 0):
    t, rng = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    rows = {"s": [], "r": [], "geo": []}
    for s in range(n_samples):
        k = int(t.integers(2, 5))
        centres = t.uniform(0, 40, (k, 3))
        for r in range(n_raters):
            for c in centres:
                if kind == "point3d":
                    g = c + rng.normal(0, noise * 4, 3)
                elif kind == "polyline3d_f1":
                    line = c + np.array([[0, 0, 0], [3, 0, 0], [3, 2, 0.5]])
                    g = [line + rng.normal(0, noise * 2, line.shape)]
                else:  # segments of a 1000-point cloud: a contiguous run, edges moved by noise
                    lo = int(c[0] * 20) + int(rng.normal(0, noise * 40))
                    g = np.arange(max(lo, 0), min(lo + 60 + int(abs(rng.normal(0, noise * 40))), 1000))
                rows["s"].append(s)
                rows["r"].append(r)
                rows["geo"].append(g)
    N = len(rows["s"])
    if kind == "point3d":
        kw = {"points3d": np.array(rows["geo"])}
    elif kind == "polyline3d_f1":
        kw = {"polylines3d": rows["geo"]}
    else:
        kw = {"segments": rows["geo"], "num_points": np.full(n_samples, 1000)}
    return MultiRaterAnnotations(
        sample_ids=np.array([f"cloud{s}" for s in range(n_samples)], object),
        raters=tuple(f"r{r}" for r in range(n_raters)), assigned=np.ones((n_samples, n_raters), bool),
        boxes=np.full((N, 4), np.nan), labels=np.array(["obj"] * N, object), label_ids=np.full(N, None, object),
        sample_index=np.array(rows["s"]), rater_index=np.array(rows["r"]), **kw)


@pytest.mark.parametrize("kind", ["point3d", "polyline3d_f1", "segment_jaccard"])
def test_noisier_annotations_score_lower(kind):
    results = [geometry_agreement(_corpus(kind, noise), distance=kind, threshold=0.0, bootstrap=None)
               for noise in (0.05, 0.2, 0.6)]
    for name in ("distance_alpha", "ks_greater"):
        values = [getattr(r, name).value for r in results]
        assert np.all(np.isfinite(values)) and values[0] > values[1] > values[2], (kind, name, values)
    # KaLOS on the same registry: at low noise every object is one unit of all three raters
    low = _corpus(kind, 0.05)
    res = kalos_alpha(low, similarity=kind, tau=0.3)
    assert res.n_units.sum() == len(low) // 3
    assert kalos_alpha(_corpus(kind, 0.6), similarity=kind, tau=0.3).n_units.sum() > res.n_units.sum()


def test_segment_index_out_of_range_is_a_clear_error():
    data = _corpus("segment_jaccard", 0.1)
    bad = MultiRaterAnnotations(data.sample_ids, data.raters, data.assigned, data.boxes, data.labels, data.label_ids,
                                data.sample_index, data.rater_index, segments=data.segments,
                                num_points=np.full(data.num_samples, 50))
    with pytest.raises(Exception, match="out of range|range"):
        check_similarity("segment_jaccard", bad)


def test_missing_3d_geometry_is_named():
    data = _corpus("point3d", 0.1)
    with pytest.raises(ValueError, match="needs polylines3d"):
        check_similarity("polyline3d_f1", data)


def test_3d_parameters_are_explicit_and_validated():
    from agreement.geometry.similarity import SimilarityOptions, similarity_matrix

    data = _corpus("point3d", 0.3)
    rows = np.arange(6)
    default = similarity_matrix("point3d", data, rows[:3], rows[3:6])
    wide = similarity_matrix("point3d", data, rows[:3], rows[3:6], options=SimilarityOptions(point3d_scale=20.0))
    assert np.all(wide >= default) and np.any(wide > default)
    np.testing.assert_allclose(similarity_matrix("point3d", data, rows[:3], rows[3:6]), default)  # no state left
    with pytest.raises(ValueError, match="point3d_scale"):
        SimilarityOptions(point3d_scale=0.0)
