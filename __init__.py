"""The ``@iaa/agreement`` FiftyOne plugin.

FiftyOne imports this file under a synthetic module name and calls
:func:`register`. Operators and panels are imported there, not at module
level, so that ``import agreement`` (the pure library) never starts FiftyOne.

The operators and panels import the plugin's core library by its absolute
name, ``agreement``. :func:`register` changes neither ``sys.path`` nor
``site-packages``: when ``agreement`` is not imported yet, it loads the plugin
folder's own copy (the code the operators were written against) under that
one name (:func:`load_plugin_library`), so no other name of the plugin's
folder (``operators``, ``panels``, ``tests``) becomes importable.

Processes that never load the plugin need ``agreement`` installed: FiftyOne
imports a run's classes by name (``agreement.fo.runs.classes.AgreementRunConfig``)
to delete, rename or load an agreement run, and scripts ``import agreement``.
The install's third step does that, from the plugin's own folder, as the
``iaa-agreement`` distribution that ``pip uninstall iaa-agreement`` removes::

    pip install "$(python -c 'import fiftyone.plugins as fop; print(fop.find_plugin("@iaa/agreement"))')"

:func:`register` warns once per process when it is missing or its version
differs from the plugin's (:func:`check_installed_library`), and removes the
path file ``iaa_agreement_plugin.pth`` that earlier releases wrote into
``site-packages`` (:func:`remove_legacy_path_file`).
"""

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import os
import re
import shlex
import site
import sys
import sysconfig
from types import ModuleType

_PLUGIN_DIR = os.path.dirname(os.path.abspath(__file__))
LIBRARY = "agreement"
DISTRIBUTION = "iaa-agreement"
LEGACY_PTH_NAME = "iaa_agreement_plugin.pth"
_CHECKED = "_iaa_plugin_checked"  # on the loaded library: the check's outcome, once per process

logger = logging.getLogger(__name__)


def pip_command(plugin_dir: str = _PLUGIN_DIR) -> str:
    """The command that installs the core library from the plugin's folder into this Python environment."""
    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(plugin_dir)}"


def load_plugin_library(plugin_dir: str = _PLUGIN_DIR) -> ModuleType:
    """Returns the ``agreement`` package this process uses, loading the plugin folder's own copy if needed.

    An ``agreement`` already imported is kept. Otherwise, when ``sys.path``
    leads to the plugin folder's own copy (a clone on ``PYTHONPATH``) it is
    imported as usual; in every other case (not installed, or an installed
    copy elsewhere) the plugin folder's copy is loaded from its files and
    entered into ``sys.modules`` under the name ``agreement`` only, without
    touching ``sys.path``.

    Args:
        plugin_dir: the plugin's folder, holding the ``agreement`` package.

    Returns:
        The ``agreement`` module.
    """
    if LIBRARY in sys.modules:
        return sys.modules[LIBRARY]
    package_dir = os.path.join(plugin_dir, LIBRARY)
    init = os.path.join(package_dir, "__init__.py")
    found = importlib.machinery.PathFinder.find_spec(LIBRARY)
    if found is not None and found.origin and os.path.exists(found.origin) and os.path.samefile(found.origin, init):
        return importlib.import_module(LIBRARY)
    spec = importlib.util.spec_from_file_location(LIBRARY, init, submodule_search_locations=[package_dir])
    if spec is None or spec.loader is None:  # pragma: no cover - the plugin's own files
        raise ImportError(f"@iaa/agreement: cannot load its core library from {package_dir}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[LIBRARY] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[LIBRARY]
        raise
    return module


def _plugin_version(plugin_dir: str) -> str | None:
    """The ``__version__`` written in the plugin folder's ``agreement/__init__.py`` (read, not imported)."""
    try:
        with open(os.path.join(plugin_dir, LIBRARY, "__init__.py"), encoding="utf-8") as f:
            match = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", f.read(), flags=re.M)
    except OSError:
        return None
    return match.group(1) if match else None


def check_installed_library(module: ModuleType, plugin_dir: str = _PLUGIN_DIR) -> str | None:
    """Warns (once per process) when processes that do not load the plugin cannot use the same ``agreement``.

    That is when no ``agreement`` is importable from ``sys.path`` (the
    ``iaa-agreement`` distribution is not installed), when the installed
    distribution's version differs from the plugin's, or when this process
    uses a copy whose version differs from the plugin's.

    Args:
        module: the ``agreement`` module this process uses.
        plugin_dir: the plugin's folder.

    Returns:
        The warning's text, or ``None`` when all is well.
    """
    if _CHECKED in module.__dict__:  # FiftyOne runs register() again whenever it rebuilds its plugin contexts
        return module.__dict__[_CHECKED]
    ours = _plugin_version(plugin_dir)
    try:
        installed: str | None = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    used = getattr(module, "__version__", None)
    if importlib.machinery.PathFinder.find_spec(LIBRARY) is None:
        message = (f"@iaa/agreement: its core library `agreement` is not installed in this Python environment. "
                   f"FiftyOne's own delete_run, rename_run and load_run_results on agreement runs, in processes "
                   f"that have not loaded the plugin, need it. Install it with: {pip_command(plugin_dir)}")
    elif installed is not None and installed != ours:
        message = (f"@iaa/agreement: the installed {DISTRIBUTION} is version {installed} but the plugin in "
                   f"{plugin_dir} is version {ours}; processes that have not loaded the plugin (FiftyOne's "
                   f"delete_run, rename_run, load_run_results) use the installed one. "
                   f"Update it with: {pip_command(plugin_dir)}")
    elif used is not None and used != ours:
        message = (f"@iaa/agreement: this process imported `agreement` {used} from {module.__file__} before "
                   f"loading the plugin {ours} in {plugin_dir}; the operators run on the imported copy.")
    else:
        message = None
    module.__dict__[_CHECKED] = message
    if message is not None:
        logger.warning(message)
    return message


def _site_directories() -> list[str]:
    """The site-packages directories of this environment (the system's, the user's, the scheme's)."""
    dirs = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # pragma: no cover - old virtualenv's site module
        pass
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    unique: list[str] = []
    for d in dirs:
        if d and os.path.abspath(d) not in unique:
            unique.append(os.path.abspath(d))
    return unique


def remove_legacy_path_file() -> list[str]:
    """Removes ``iaa_agreement_plugin.pth`` (that exact name), which earlier releases wrote into site-packages.

    Never raises: a file that cannot be removed is logged and kept.

    Returns:
        The paths removed.
    """
    removed = []
    for directory in _site_directories():
        path = os.path.join(directory, LEGACY_PTH_NAME)
        if not os.path.lexists(path):
            continue
        try:
            os.remove(path)
        except OSError as e:
            logger.warning("@iaa/agreement: could not remove %s, written by an earlier release: %s", path, e)
            continue
        logger.info("@iaa/agreement: removed %s, written by an earlier release", path)
        removed.append(path)
    return removed


def register(p):
    """Registers the plugin's operators and panels with FiftyOne (called by FiftyOne with the plugin context)."""
    remove_legacy_path_file()
    check_installed_library(load_plugin_library())

    from .operators import APP_OPERATORS, OPERATORS
    from .panels import PANELS

    for cls in OPERATORS + APP_OPERATORS + PANELS:
        p.register(cls)
