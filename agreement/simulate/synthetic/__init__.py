"""Synthetic demo data: rendered scenes, their true objects, simulated raters.

Pure numpy / OpenCV (no FiftyOne import). Typical use::

    from agreement.simulate.synthetic import generate_scenes, write_scenes, simulate_demo_raters, ground_truth

    scenes = generate_scenes(300, seed=0)            # true objects, deterministic
    paths = write_scenes(scenes, "/path/to/dataset_dir", seed=0)   # PNG files
    raters = simulate_demo_raters(scenes, seed=0)    # MultiRaterAnnotations, 5 raters
    truth = ground_truth(scenes)                     # single rater "truth"

See :mod:`agreement.simulate.synthetic.scenes` for the classes and the rendering, and
:mod:`agreement.simulate.synthetic.demo_raters` for the rater profiles.
"""

from agreement.simulate.synthetic.demo_raters import (
    DEMO_PROFILES,
    TRUTH_RATER,
    RaterProfile,
    ground_truth,
    simulate_demo_raters,
    simulate_rater,
)
from agreement.simulate.synthetic.scenes import (
    CLASSES,
    SIMILAR_CLASSES,
    Scene,
    box_sizes,
    generate_scenes,
    object_mask,
    render_scene,
    write_scenes,
)

__all__ = [
    "CLASSES",
    "SIMILAR_CLASSES",
    "Scene",
    "box_sizes",
    "generate_scenes",
    "object_mask",
    "render_scene",
    "write_scenes",
    "DEMO_PROFILES",
    "TRUTH_RATER",
    "RaterProfile",
    "ground_truth",
    "simulate_demo_raters",
    "simulate_rater",
]
