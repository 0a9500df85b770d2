"""The PNG of a calibration (demo): ``D_o`` / ``D_e`` histograms, densities and τ* of every distance.
Only :func:`plot_calibration_png` imports matplotlib (when called).
"""

from __future__ import annotations

import math
import os

import numpy as np

from agreement.methods.kalos.calibration.results import CalibrationResult

# --------------------------------------------------------------------------
# PNG (demo)
# --------------------------------------------------------------------------


def plot_calibration_png(result: CalibrationResult, path: str | os.PathLike, dpi: int = 110) -> str:
    """Writes the ``D_o`` / ``D_e`` histograms, densities and τ* of every
    distance of ``result`` to a PNG file (one panel per distance).

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend
    change); matplotlib is imported here only.

    Args:
        result (CalibrationResult): From :func:`calibrate`.
        path (str or PathLike): Output file (``.png``); parent directories must exist.
        dpi (int, default=110): Resolution of the image, in dots per inch.

    Returns:
        str: The path written.

    References:
        Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (the D_o/D_e
        distribution plot of the principled configuration).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    items = list(result.per_distance.values())
    fig = Figure(figsize=(4.8 * max(len(items), 1), 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(len(items), 1), squeeze=False)[0]
    for ax, c in zip(axes, items, strict=False):  # one axis even when there is no item
        p = c.plot
        centres = 0.5 * (p.bin_edges[:-1] + p.bin_edges[1:])
        width = np.diff(p.bin_edges)
        ax.bar(centres, p.hist_observed, width=width, alpha=0.45, color="tab:blue", label="$D_o$ (observed)")
        ax.bar(centres, p.hist_expected, width=width, alpha=0.45, color="tab:orange", label="$D_e$ (expected)")
        if np.all(np.isfinite(p.density_observed)):
            ax.plot(p.grid, p.density_observed, color="tab:blue", lw=1.5)
        if np.all(np.isfinite(p.density_expected)):
            ax.plot(p.grid, p.density_expected, color="tab:orange", lw=1.5)
        if math.isfinite(p.tau):
            ax.axvline(p.tau, color="black", ls="--", lw=1.2, label=f"τ* = {p.tau:.3f} ({c.tau_method})")
        ks = "n/a" if not math.isfinite(c.ks_one_sided) else f"{c.ks_one_sided:.3f}"
        star = " (best)" if c.distance == result.best_distance else ""
        ax.set_title(f"{c.distance}{star}: KS⁺ = {ks}", fontsize=10)
        ax.set_xlim(-0.01, 1.01)
        ax.set_xlabel("distance (1 − similarity)")
        ax.set_ylabel("density")
        ax.legend(fontsize=8)
        if c.reason:
            ax.text(0.5, 0.5, c.reason, ha="center", va="center", wrap=True, fontsize=8, transform=ax.transAxes)
    if not items:
        axes[0].text(0.5, 0.5, "no distances", ha="center", va="center")
    path = os.fspath(path)
    fig.savefig(path, format="png", dpi=dpi)
    return path
