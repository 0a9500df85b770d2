"""Parameter objects from the declaration to the kernel: the rater layout and the execution of a run, the
geometry parameters, the EM settings, the correspondence solvers' problem."""

import numpy as np
import pytest

from agreement.simulate.synthetic.crowd import crowd_corpus


def test_rater_layout_converts_a_mapping_once_and_refuses_unknown_names():
    from agreement.fo.runs.options import RaterLayout

    layout = RaterLayout.of({"field": "ground_truth", "raters_field": "raters"})
    assert layout == RaterLayout(field="ground_truth", raters_field="raters")
    assert RaterLayout.of(layout) is layout
    assert layout.names == ["ground_truth"] and RaterLayout(fields=["a", "b"]).names == ["a", "b"]
    assert layout.as_dict() == {"fields": None, "field": "ground_truth", "rater_attr": "annotator",
                                "raters_field": "raters", "box_policy": "clip", "assume_crossed": False}
    with pytest.raises(TypeError):
        RaterLayout.of({"field": "ground_truth", "min_raters": 1})
    with pytest.raises(ValueError, match="box_policy"):
        RaterLayout(field="ground_truth", box_policy="wrap")


def test_execution_checks_its_backend_options():
    from agreement.fo.runs.options import Execution

    Execution().check()
    Execution(shard_size=10).check()
    with pytest.raises(ValueError, match="backend must be one of"):
        Execution(backend="spark").check()
    with pytest.raises(ValueError, match="pass backend='dask'"):
        Execution(workers=2).check()


def test_the_engine_takes_the_layout_and_the_execution_as_objects():
    import inspect

    from agreement.fo.frames.runs import run_on_frames
    from agreement.fo.runs.engine import run_method

    for fn in (run_method, run_on_frames):
        sig = inspect.signature(fn)
        assert {"layout", "execution"} <= set(sig.parameters)
        assert sig.parameters["execution"].kind is inspect.Parameter.KEYWORD_ONLY
        assert not {"shard_size", "backend", "dask_address", "workers"} & set(sig.parameters)


def test_geometry_parameters_travel_as_one_object_with_the_same_numbers():
    from agreement.methods.geometry_agreement import (
        GeometryParams,
        geometry_agreement,
        geometry_shard,
        merge_geometry_shards,
    )

    data, _ = crowd_corpus(30, 6, raters_per_sample=3, seed=3)
    params = GeometryParams(distance="iou", threshold=0.4, bootstrap=20, max_pairs=5_000, seed=2)
    by_object = merge_geometry_shards([geometry_shard(data, params)], lambda idx: (data, idx), params=params)
    by_keywords = merge_geometry_shards(
        [geometry_shard(data, distance="iou", threshold=0.4, max_pairs=5_000)], lambda idx: (data, idx),
        distance="iou", threshold=0.4, bootstrap=20, max_pairs=5_000, seed=2)
    whole = geometry_agreement(data, distance="iou", threshold=0.4, bootstrap=20, max_pairs=5_000, seed=2,
                               strata=None)
    for res in (by_keywords, whole):
        assert res.headline().keys() == by_object.headline().keys()
        for k, v in by_object.headline().items():
            w = res.headline()[k]
            assert v == w or (isinstance(v, float) and np.isnan(v) and np.isnan(w)), k
    with pytest.raises(TypeError, match="not both"):
        geometry_shard(data, params, threshold=0.3)
    with pytest.raises(TypeError, match="GeometryParams"):
        geometry_shard(data, "iou")
    with pytest.raises(ValueError, match="threshold"):
        GeometryParams(threshold=1.5).checked()


def test_em_settings_are_the_fit_defaults():
    from agreement.methods.consensus.em import RATE_PRIOR, EMSettings

    s = EMSettings()
    assert (s.smoothing, s.max_iter, s.tol, s.tail, s.rate_prior) == (1.0, 200, 1e-5, None, RATE_PRIOR)


def test_every_solver_takes_one_problem_object():
    from agreement.geometry.correspondence import solve_units

    raters, classes = [0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1]
    pi, pj, sim = [0, 0, 1, 3, 3, 4], [1, 2, 2, 4, 5, 5], [0.9, 0.8, 0.85, 0.7, 0.6, 0.75]
    for solver in ("greedy", "hungarian", "agglomerative"):
        units = solve_units(raters, classes, pi, pj, sim, tau=0.5, solver=solver)
        assert units.tolist() == [0, 0, 0, 1, 1, 1], solver
    with pytest.raises(TypeError):
        solve_units(raters, classes, pi, pj, sim, 0.5)  # the options are keyword-only
