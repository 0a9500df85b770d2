"""Edge cases of semantic-mask agreement that the validation matrix found (issue 47).

* **Everything background**: raters who mark no foreground pixel agree only on the background; Dice and IoU
  are then undefined (NaN with the reason "no rater marked any foreground pixel"), per sample and over the
  corpus, never the background's silent 1. The per-class arrays keep the background's own Dice.
* **Boundary F1 and the resolution**: the tolerance is a share of the image diagonal (0.75 %, Csurka et al.
  2013) and the boundary is made of cracks between pixels, so a mask upscaled by 2 or 3 (nearest neighbour)
  keeps its boundary F1 within :data:`RESOLUTION_TOL` (measured: 0.001-0.002 on region boundaries, up to
  0.02 on one-pixel speckle; the 3x3 pixel band of before moved by 0.09-0.17 on speckle).
* **Boundary F1 and scattered noise**: documented behaviour, not a defect: monotone in boundary displacement
  (erosion/dilation), not in the density of speckle (two dense random boundary maps lie within the
  tolerance of each other).

These tests do not import FiftyOne.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from agreement.methods.semantic.pixels import BOUNDARY_TOLERANCE, pixel_tolerance, sample_statistics

#: How far boundary F1 may move when the masks are upscaled (module docstring).
RESOLUTION_TOL = 0.025


def corpus_stats(samples, **kw):
    """The merged corpus result of ``samples`` (one list of masks per sample)."""
    total = None
    for i, masks in enumerate(samples):
        st = sample_statistics(masks, sample_key=f"s{i}", **kw).stats
        total = st if total is None else total.merge(st)
    return total.finish()


# ----------------------------------------------------------------------------- everything background


def test_background_only_corpus_has_no_dice_and_says_why():
    empty = [[np.zeros((8, 9), np.uint8) for _ in range(3)] for _ in range(4)]
    res = corpus_stats(empty, class_values=[0, 1, 2])
    o = res.overlap
    assert np.isnan(o.dice) and np.isnan(o.iou)
    assert "no rater marked any foreground pixel" in o.dice_reason and o.dice_reason in o.reason
    # the per-class table still says what class 0 itself scored; the other classes are in no mask
    assert o.class_dice[0] == 1.0 and np.isnan(o.class_dice[1:]).all()
    # boundary F1 and pixel alpha were already undefined, with their reasons
    assert np.isnan(o.boundary_f1) and "boundary" in o.boundary_f1_reason
    assert np.isnan(res.alpha.alpha) and res.alpha.reason


def test_background_only_sample_has_no_dice_and_says_why():
    z = np.zeros((6, 6), np.uint8)
    r = sample_statistics([z, z, None], class_values=[0, 1])
    assert np.isnan(r.dice) and np.isnan(r.iou)
    assert "no rater marked any foreground pixel on this sample" in r.reason
    assert r.pair_dice[0, 0] == 1.0  # the pair's background Dice is kept in the per-class array


def test_foreground_anywhere_defines_the_corpus_dice():
    z = np.zeros((6, 6), np.uint8)
    fg = z.copy()
    fg[1:4, 1:4] = 1
    res = corpus_stats([[z, z], [fg, fg]], class_values=[0, 1])
    assert res.overlap.dice == 1.0 and res.overlap.dice_reason == ""  # they agree on the foreground too
    one_rater = sample_statistics([fg, z], class_values=[0, 1])  # a rater marking foreground the other missed: defined
    assert 0 < one_rater.dice < 1 and "foreground" not in one_rater.reason


def test_no_background_class_counts_background_agreement_as_agreement():
    z = np.zeros((5, 5), np.uint8)
    assert sample_statistics([z, z], class_values=[0, 1], background=None).dice == 1.0
    assert sample_statistics([z, z], class_values=[0, 1]).stats.finish(background=None).overlap.dice == 1.0
    assert corpus_stats([[z, z]], class_values=[0, 1]).overlap.dice != 1.0


def test_ignore_background_still_gives_a_reason():
    z = np.zeros((5, 5), np.uint8)
    r = sample_statistics([z, z], class_values=[0, 1], exclude=(0,))
    assert np.isnan(r.dice) and "Dice and IoU are undefined" in r.reason
    fin = r.stats.finish(exclude=(0,)).overlap
    assert np.isnan(fin.dice) and fin.dice_reason


# ----------------------------------------------------------------------------- boundary F1 and resolution


def _scene(rng: np.random.Generator, size: int = 48) -> np.ndarray:
    """Background with 3-6 ellipses of classes 1-3, a 1-px line and a few 1-px specks."""
    m = np.zeros((size, size), np.uint8)
    for _ in range(int(rng.integers(3, 7))):
        c = (int(rng.integers(4, size - 4)), int(rng.integers(4, size - 4)))
        axes = (int(rng.integers(3, size // 4)), int(rng.integers(3, size // 4)))
        cv2.ellipse(m, c, axes, float(rng.uniform(0, 180)), 0, 360, int(rng.integers(1, 4)), -1)
    cv2.line(m, (2, int(rng.integers(2, size - 2))), (size - 3, int(rng.integers(2, size - 2))), 3, 1)
    m[rng.integers(0, size, 12), rng.integers(0, size, 12)] = rng.integers(1, 4, 12)
    return m


def _raters(truth: np.ndarray, rng: np.random.Generator, speckle: float) -> list[np.ndarray]:
    """Three raters: the truth eroded, dilated or kept (radius 1), with a share ``speckle`` of random pixels."""
    disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
    out = []
    for how in ("erode", "dilate", "keep"):
        m = {"erode": cv2.erode, "dilate": cv2.dilate}.get(how, lambda t, _: t.copy())(truth, disk)
        noise = rng.random(m.shape) < speckle
        m[noise] = rng.integers(0, 4, int(noise.sum()))
        out.append(m)
    return out


def _up(samples, k: int):
    return [[np.repeat(np.repeat(m, k, axis=0), k, axis=1) for m in row] for row in samples]


@pytest.fixture(scope="module", params=[0.0, 0.04], ids=["regions", "speckle"])
def scenes(request):
    rng = np.random.default_rng(7)
    return [_raters(_scene(rng, 144), rng, request.param) for _ in range(8)]


@pytest.mark.parametrize("k", [2, 3])
def test_boundary_f1_does_not_depend_on_the_resolution(scenes, k):
    """The default tolerance (a share of the diagonal) scales by itself; so does the crack boundary."""
    base = corpus_stats(scenes).overlap
    up = corpus_stats(_up(scenes, k)).overlap
    assert abs(up.boundary_f1 - base.boundary_f1) <= RESOLUTION_TOL
    np.testing.assert_allclose(up.class_boundary_f1, base.class_boundary_f1, atol=2 * RESOLUTION_TOL)
    # Dice and IoU count pixels: exactly the same at any resolution
    assert up.dice == pytest.approx(base.dice, abs=1e-12) and up.iou == pytest.approx(base.iou, abs=1e-12)


@pytest.mark.parametrize("tol", [1.0, 2.0])
def test_boundary_f1_with_a_pixel_tolerance_scaled_with_the_image(scenes, tol):
    """A tolerance in pixels multiplied with the resolution: the boundary extraction alone is tested."""
    base = corpus_stats(scenes, tolerance=tol).overlap.boundary_f1
    up = corpus_stats(_up(scenes, 2), tolerance=2 * tol).overlap.boundary_f1
    assert abs(up - base) <= RESOLUTION_TOL


def test_boundary_tolerance_is_a_share_of_the_diagonal():
    assert BOUNDARY_TOLERANCE == 0.0075  # Csurka et al. 2013
    assert pixel_tolerance((300, 400), None, 0.01) == pytest.approx(5.0)
    assert pixel_tolerance((300, 400), 3.0, 0.01) == 3.0  # pixels, when given, win
    rng = np.random.default_rng(3)
    masks = _raters(_scene(rng, 60), rng, 0.02)
    diag = float(np.hypot(60, 60))
    rel = sample_statistics(masks, boundary_tolerance=2.5 / diag)
    px = sample_statistics(masks, tolerance=2.5)
    np.testing.assert_array_equal(rel.pair_boundary_f1, px.pair_boundary_f1)
    with pytest.raises(ValueError, match="boundary_tolerance"):
        sample_statistics(masks, boundary_tolerance=-0.1)


# ----------------------------------------------------------------------------- boundary F1 and noise


def test_boundary_f1_is_monotone_in_boundary_displacement():
    """Erosion/dilation of growing radius moves the boundaries apart: F1 never rises (docs/method-masks.md)."""
    rng = np.random.default_rng(11)
    truths = [_scene(rng) for _ in range(6)]
    values = []
    for radius in range(4):
        disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
        values.append(corpus_stats([[cv2.erode(t, disk), cv2.dilate(t, disk), t] for t in truths],
                                   tolerance=1.0).overlap.boundary_f1)
    assert values[0] == 1.0 and all(b <= a + 1e-12 for a, b in zip(values, values[1:])), values
