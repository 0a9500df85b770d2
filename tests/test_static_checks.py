"""The static checks stay one set of checks: `make lint` (which `make test` runs first), the pre-commit
hooks and the API pages agree on the tools, their versions, their invocations and the docstring convention.

The checks themselves (ruff, mypy) run in `make lint`, not here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _make_recipe(target: str) -> tuple[list[str], list[str]]:
    """``(prerequisites, commands)`` of a Makefile rule."""
    text = (REPO / "Makefile").read_text()
    match = re.search(rf"^{target}:([^\n]*)\n((?:\t[^\n]*\n)*)", text, flags=re.M)
    assert match, f"no `{target}` rule in the Makefile"
    return match.group(1).split(), [line.strip() for line in match.group(2).splitlines()]


def _hook_entries() -> dict[str, str]:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert all(repo["repo"] == "local" for repo in config["repos"]), "hooks run offline, from .venv"
    assert all(hook["language"] == "system" and hook.get("pass_filenames") is False for hook in hooks)
    return {hook["id"]: hook["entry"] for hook in hooks}


def test_make_test_runs_lint_first_and_lint_runs_ruff_and_mypy():
    test_deps, _ = _make_recipe("test")
    assert "lint" in test_deps
    _, commands = _make_recipe("lint")
    assert commands == ["$(VENV)/bin/ruff check .", "$(VENV)/bin/mypy"]


def test_pre_commit_hooks_are_the_lint_commands():
    entries = _hook_entries()
    _, commands = _make_recipe("lint")
    assert sorted(entries) == ["mypy", "ruff"]
    assert [c.replace("$(VENV)", ".venv") for c in commands] == [entries["ruff"], entries["mypy"]]


def test_the_tools_are_pinned_for_the_test_environment():
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (REPO / "requirements-test.txt").read_text(), flags=re.M))
    assert {"ruff", "mypy", "pre-commit"} <= set(pins)


def test_one_docstring_convention_for_ruff_and_the_api_pages():
    config = _pyproject()
    lint = config["tool"]["ruff"]["lint"]
    assert lint["pydocstyle"]["convention"] == "google"
    assert {"F", "B", "I", "D"} <= set(lint["select"])
    assert re.search(r"^\s+docstring_style: google\s*$", (REPO / "mkdocs.yml").read_text(), flags=re.M)


def test_mypy_is_strict_on_the_lowest_layers_and_checks_the_rest():
    mypy = _pyproject()["tool"]["mypy"]
    assert set(mypy["files"]) == {"agreement", "operators", "panels"}
    strict = [o for o in mypy["overrides"] if o.get("disallow_untyped_defs")]
    assert len(strict) == 1
    override = strict[0]
    assert set(override["module"]) == {"agreement.core.*", "agreement.geometry.*", "agreement.methods.*"}
    flags = ("disallow_subclassing_any", "disallow_untyped_calls", "disallow_untyped_defs",
             "disallow_incomplete_defs", "check_untyped_defs", "disallow_untyped_decorators",
             "warn_unused_ignores", "warn_return_any", "strict_equality", "extra_checks")
    assert all(override[flag] is True for flag in flags), [f for f in flags if override.get(f) is not True]
    assert override["implicit_reexport"] is False
    assert mypy["warn_redundant_casts"] is True  # a global option of --strict


def test_the_ignored_ruff_rules_each_say_why():
    """Every rule switched off in [tool.ruff.lint] ``ignore`` has a comment line just above it."""
    text = (REPO / "pyproject.toml").read_text()
    block = re.search(r"^ignore = \[\n(.*?)^\]", text, flags=re.M | re.S).group(1).splitlines()
    for k, line in enumerate(block):
        if line.strip().startswith('"'):
            assert k > 0 and block[k - 1].strip().startswith("#"), f"ignored without a reason: {line.strip()}"
