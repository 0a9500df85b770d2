"""Layering: the pure library never imports FiftyOne; only agreement.fo does."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import agreement

REPO = Path(__file__).resolve().parent.parent


def _pure_modules():
    for info in pkgutil.walk_packages(agreement.__path__, "agreement."):
        if info.name == "agreement.fo" or info.name.startswith("agreement.fo."):
            continue
        yield info.name


def test_pure_library_does_not_import_fiftyone():
    modules = sorted(_pure_modules())
    assert "agreement.geometry.boxes" in modules and "agreement.coco" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'fiftyone' or m.startswith('fiftyone.'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_no_fiftyone_import_outside_the_bridge_in_source():
    offenders = []
    for path in (REPO / "agreement").rglob("*.py"):
        if "fo" in path.relative_to(REPO / "agreement").parts[:1]:
            continue
        text = path.read_text()
        if "import fiftyone" in text or "from fiftyone" in text:
            offenders.append(str(path.relative_to(REPO)))
    assert not offenders


def test_plugin_manifest_lists_every_registered_operator():
    import re

    manifest = (REPO / "fiftyone.yml").read_text()
    listed = set(re.findall(r"^\s+- (\w+)$", manifest, flags=re.M))
    names = set()
    for path in (REPO / "operators").glob("*.py"):
        names.update(re.findall(r'name="(\w+)"', path.read_text()))
    assert names and names <= listed, names - listed
