"""The README and the documentation pages: what a reader follows must lead somewhere.

The full check is ``make docs`` (``mkdocs build --strict``, run by ``.ci/run``):
every link, anchor and API reference of the site. These tests are the fast part
that needs no documentation tools: the README stays a first page (short, its
links resolve to files of the repository), no page links outside the
repository, and the benchmarks page is what its recorded tables make.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)|<img[^>]*src=\"([^\"]+)\"")


def _relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # links in code blocks are code
    links = [a or b for a, b in LINK.findall(text)]
    return [link for link in links if not re.match(r"[a-z]+:|#", link)]


def test_readme_is_a_first_page_under_300_lines():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: the manual belongs in docs/"


def test_readme_links_resolve_to_files_of_the_repository():
    missing = []
    for link in _relative_links(REPO / "README.md"):
        target = (REPO / link.split("#")[0]).resolve()
        if not target.exists() or REPO not in target.parents:
            missing.append(link)
    assert not missing, f"README.md links to files that do not exist in the repository: {missing}"


def test_readme_links_into_the_docs():
    pages = {link.split("#")[0] for link in _relative_links(REPO / "README.md") if link.startswith("docs/")}
    assert {"docs/getting-started.md", "docs/data-model.md", "docs/method-ot.md"} <= pages


def test_no_page_links_outside_the_repository():
    outside = []
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        for link in _relative_links(page):
            target = (page.parent / link.split("#")[0]).resolve()
            if REPO != target and REPO not in target.parents:
                outside.append(f"{page.relative_to(REPO)}: {link}")
    assert not outside, f"links that leave the repository: {outside}"


def test_benchmarks_page_is_generated_from_the_recorded_tables():
    out = subprocess.run([sys.executable, str(REPO / "bench" / "write_page.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_recorded_table_appears_on_the_page_with_its_machine(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import write_page
    finally:
        sys.path.remove(str(REPO / "bench"))
    monkeypatch.setattr(write_page, "RESULTS", tmp_path)
    monkeypatch.setattr(write_page, "QUICK_RESULTS", tmp_path)  # a quick run's fragments go there
    write_page.record("kalos", ["corpus", "speed-up"], [["LVIS", "22.0"]], about="KαLOS against the reference.",
                      options="kalos_bench.py --quick", quick=True)
    frag = json.loads((tmp_path / "kalos.json").read_text())
    assert frag["machine"]["cores"] and frag["machine"]["python"] and frag["date"]
    page = write_page.page_text()
    assert "| LVIS | 22.0 |" in page and "Quick run" in page and "kalos_bench.py --quick" in page
    assert "not run on this checkout yet" in page  # the other benchmarks, with no fragment in tmp_path
    with pytest.raises(ValueError, match="columns"):
        write_page.record("kalos", ["a", "b"], [["only one cell"]], about="x")
    with pytest.raises(ValueError, match="unknown benchmark"):
        write_page.record("nope", ["a"], [["1"]], about="x")


def _roles_hook():
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import sphinx_roles
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    return sphinx_roles


def test_the_site_builds_with_the_sphinx_roles_hook():
    config = (REPO / "mkdocs.yml").read_text()
    assert "docs/hooks/sphinx_roles.py" in config


def test_sphinx_roles_become_optional_cross_references_or_code():
    """``:func:`~a.b.f``` shows ``f`` and links ``a.b.f``; a short or re-exported target finds its one
    documented object; an undocumented or ambiguous one stays code, without the role, and never fails the
    strict build (autorefs' ``optional``)."""
    hook = _roles_hook()
    known = {"agreement.core.data", "agreement.core.data.AnnotationSet", "agreement.AnnotationSet",
             "agreement.geometry.similarity_matrix", "agreement.methods.ot.alpha_ot",
             "agreement.methods.ot.alpha_ot.alpha_ot", "a.Box.merge", "a.Mask.merge"}
    html = (":mod:<code>agreement.core.data</code>, :class:<code>~agreement.core.data.AnnotationSet</code>, "
            ":class:<code>AnnotationSet</code>, :func:<code>agreement.geometry.similarity.similarity_matrix</code>, "
            ":func:<code>alpha_ot</code>, :meth:<code>merge</code>, :data:<code>agreement.nowhere.THING</code>")
    out, linked, as_code = hook.rewrite_roles(html, known)
    assert (linked, as_code) == (5, 2)
    assert ":mod:" not in out and ":class:" not in out and ":func:" not in out and ":data:" not in out
    assert '<autoref identifier="agreement.core.data" optional><code>agreement.core.data</code></autoref>' in out
    assert '<autoref identifier="agreement.core.data.AnnotationSet" optional><code>AnnotationSet</code>' in out
    assert out.count('identifier="agreement.core.data.AnnotationSet"') == 2  # the defining module, not the re-export
    assert 'identifier="agreement.geometry.similarity_matrix"' in out
    assert 'identifier="agreement.methods.ot.alpha_ot.alpha_ot" optional><code>alpha_ot</code>' in out
    assert "<code>merge</code>" in out and "<code>agreement.nowhere.THING</code>" in out
