"""MkDocs hook: the Sphinx roles of the docstrings as links on the API pages.

The docstrings cross-reference in Sphinx's manner (``:func:`agreement.methods.kalos.kalos_alpha```,
``:class:`~agreement.core.data.MultiRaterAnnotations```, ``:mod:``, ``:meth:``, ``:attr:``, ``:data:``,
``:exc:``, ``:obj:``), which mkdocstrings' Google parser leaves as text: ``:func:`` followed by code. After
every page is rendered, and before mkdocs-autorefs resolves cross-references (its ``on_env`` runs at priority
-50, this one at 0), each role becomes an optional autorefs cross-reference to the object it names:

* the display text is the target as written, or its last component for ``~a.b.C`` (Sphinx's rule);
* a dotted or short target (``kalos_alpha``, ``data.AnnotationSet``, ``Class.method``) resolves to the one
  documented object whose identifier ends with it; a target that is not documented, or ambiguous, stays
  code text without the role, so that a reference to an undocumented object never fails ``mkdocs build
  --strict``.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

log = logging.getLogger("mkdocs.hooks.sphinx_roles")

ROLE = re.compile(r":(?:py:)?(mod|func|class|meth|attr|data|exc|obj|const):<code>(~?)([^<]+?)</code>")


def _parent(identifier: str) -> str:
    return identifier.rpartition(".")[0]


def _resolver(known: set[str]) -> Any:
    """A function from a role's target to the documented identifier it names (``None``: none or ambiguous).

    The same object documented twice (``agreement.AnnotationSet``, re-exported from
    ``agreement.core.data.AnnotationSet``) is one target: among candidates whose packages nest, the defining
    one (the longest) for an object, the shortest for a ``:mod:``. A target in a module that is not documented
    (``agreement.geometry.similarity.similarity_matrix``) names the object its package re-exports
    (``agreement.geometry.similarity_matrix``).
    """
    by_last: dict[str, list[str]] = {}
    for identifier in known:
        by_last.setdefault(identifier.rsplit(".", 1)[-1], []).append(identifier)

    def nested(candidates: list[str], module: bool) -> str | None:
        ordered = sorted(candidates, key=len)
        chain = all(_parent(b).startswith(_parent(a)) for a, b in zip(ordered, ordered[1:], strict=False))
        return (ordered[0] if module else ordered[-1]) if chain else None

    def resolve(target: str, module: bool = False) -> str | None:
        if target in known:
            return target
        same_name = by_last.get(target.rsplit(".", 1)[-1], [])
        candidates = [i for i in same_name if i.endswith("." + target)]
        if candidates:
            return candidates[0] if len(candidates) == 1 else nested(candidates, module)
        reexported = [i for i in same_name if "." in target and _parent(target).startswith(_parent(i) + ".")]
        return nested(reexported, module) if reexported else None

    return resolve


def rewrite_roles(text: str, known: set[str]) -> tuple[str, int, int]:
    """``text`` with each role replaced (see the module docstring); returns it and the counts linked and
    left as code."""
    resolve = _resolver(known)
    counts = [0, 0]

    def replace(match: re.Match) -> str:
        short, written = match[2] == "~", html.unescape(match[3]).strip()
        target = written.lstrip(".").removesuffix("()")
        shown = html.escape(target.rsplit(".", 1)[-1] if short else written)
        identifier = resolve(target, module=match[1] == "mod")
        counts[identifier is None] += 1
        if identifier is None:
            return f"<code>{shown}</code>"
        return f'<autoref identifier="{html.escape(identifier)}" optional><code>{shown}</code></autoref>'

    return ROLE.sub(replace, text), counts[0], counts[1]


def on_env(env: Any, /, *, config: Any, files: Any) -> Any:
    """Rewrites the roles of every rendered page (MkDocs' ``on_env`` event, before autorefs')."""
    autorefs = config.plugins.get("autorefs")
    known = set(getattr(autorefs, "_primary_url_map", {})) | set(getattr(autorefs, "_secondary_url_map", {}))
    linked = as_code = 0
    for file in files:
        page = file.page
        if page is not None and page.content and ":<code>" in page.content:
            page.content, n_linked, n_code = rewrite_roles(page.content, known)
            linked, as_code = linked + n_linked, as_code + n_code
    log.info("Sphinx roles: %d linked, %d left as code (not documented or ambiguous)", linked, as_code)
    return env
