"""MkDocs hook: the validation experiments' committed results, served from where they are.

mkdocs serves only files under ``docs/``. The experiments write their tables and plots to
``experiments/results/`` and describe them in ``experiments/README.md``; this hook adds those
files to the site at build time (as ``experiments/index.md`` and ``experiments/results/...``),
so the site shows the committed results themselves and no copy is kept by hand. Pages of
``docs/`` link to them as ``../experiments/...`` (which works on GitHub); the hook rewrites
those links to the site's paths.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

_SOURCE = Path(__file__).resolve().parents[2] / "experiments"
_SUFFIXES = {".md", ".png", ".svg", ".csv", ".json"}
# links that leave docs/ for the experiments folder: ](../experiments/...) -> ](experiments/...)
_OUTSIDE = re.compile(r"\]\(\.\./experiments/")


def on_files(files, config):
    """Add ``experiments/README.md`` and every result file to the site's files."""
    readme = _SOURCE / "README.md"
    files.append(File.generated(config, "experiments/index.md", abs_src_path=str(readme)))
    for path in sorted((_SOURCE / "results").iterdir()):
        if path.suffix in _SUFFIXES:
            files.append(File.generated(config, f"experiments/results/{path.name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    """Point a top-level page's ``../experiments/`` links at the generated pages."""
    if "/" in page.file.src_uri:
        return markdown
    return _OUTSIDE.sub("](experiments/", markdown).replace("](experiments/README.md", "](experiments/index.md")
