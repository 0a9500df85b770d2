"""The ``@iaa/agreement`` FiftyOne plugin.

FiftyOne imports this file under a synthetic module name and calls
:func:`register`. Operators and panels are imported there, not at module
level, so that ``import agreement`` (the pure library) never starts FiftyOne.

The plugin's ``agreement`` package must also be importable in processes that
have not loaded the plugins: FiftyOne imports its run classes by name
(``agreement.fo.runs.classes.AgreementRunConfig``) whenever it reads an
agreement run, for example in ``dataset.delete_run(key)``, and users script
``import agreement``. So the first time FiftyOne loads the plugin in a Python
environment, :func:`register` records the plugin's directory in a path file
of that environment's ``site-packages`` (``iaa_agreement_plugin.pth``, the
standard mechanism for importable directories), when that directory is
writable. Set ``IAA_AGREEMENT_NO_PTH=1`` to opt out (then load the plugins,
for example with ``fiftyone.operators.get_operator``, before using the
package).
"""

import logging
import os
import sys
import sysconfig

_PLUGIN_DIR = os.path.dirname(os.path.abspath(__file__))
PTH_NAME = "iaa_agreement_plugin.pth"


def record_plugin_path(plugin_dir: str = _PLUGIN_DIR) -> str | None:
    """Writes ``plugin_dir`` into ``<site-packages>/iaa_agreement_plugin.pth`` unless it is there already, the
    directory is read-only or ``IAA_AGREEMENT_NO_PTH`` is set. Returns the path file written, else ``None``."""
    if os.environ.get("IAA_AGREEMENT_NO_PTH"):
        return None
    site = sysconfig.get_paths()["purelib"]
    pth = os.path.join(site, PTH_NAME)
    try:
        with open(pth) as f:
            if f.read().strip() == plugin_dir:
                return None
    except OSError:
        pass
    if not os.access(site, os.W_OK):
        return None
    try:
        with open(pth, "w") as f:
            f.write(plugin_dir + "\n")
    except OSError as e:  # never keep the plugin from loading
        logging.getLogger(__name__).info("could not record the plugin's path in %s: %s", pth, e)
        return None
    return pth


def register(p):
    """Registers the plugin's operators and panels with FiftyOne (called by FiftyOne with the plugin context)."""
    # make the plugin's own `agreement` package importable by its absolute name, here and in later processes
    if _PLUGIN_DIR not in sys.path:
        sys.path.insert(0, _PLUGIN_DIR)
    record_plugin_path()

    from .operators import APP_OPERATORS, OPERATORS
    from .panels import PANELS

    for cls in OPERATORS + APP_OPERATORS + PANELS:
        p.register(cls)
