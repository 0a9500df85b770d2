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
    assert "agreement.geometry.boxes" in modules and "agreement.io.coco" in modules
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


# ---------------------------------------------------------------------------- size and import circles
import ast  # noqa: E402

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100  # the body, without its docstring
#: Modules still over the limit, with the size they may not exceed (a ratchet: lower it as they shrink).
MODULE_ALLOWANCE: dict[str, int] = {}
FUNCTION_ALLOWANCE: dict[str, int] = {}


def _sources() -> dict[str, Path]:
    """Every module of the plugin: the library, the bridge, the operators and the panels, by dotted name."""
    out = {}
    for top in ("agreement", "operators", "panels"):
        for path in (REPO / top).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _imports(name: str, path: Path, tree: ast.AST, modules: set) -> set:
    """The plugin modules ``name`` imports anywhere in its source (inside functions too)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


def _function_body_lines(node) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return 0 if not body else body[-1].end_lineno - body[0].lineno + 1


def test_no_module_over_600_lines_and_no_function_body_over_100():
    long_modules, long_functions = {}, {}
    for name, path in _sources().items():
        text = path.read_text()
        n = len(text.splitlines())
        if n > MODULE_ALLOWANCE.get(name, MAX_MODULE_LINES):
            long_modules[name] = n
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{name}.{node.name}"
                lines = _function_body_lines(node)
                if lines > FUNCTION_ALLOWANCE.get(qual, MAX_FUNCTION_LINES):
                    long_functions[qual] = lines
    assert not long_modules, f"modules over {MAX_MODULE_LINES} lines: {long_modules}"
    assert not long_functions, f"function bodies over {MAX_FUNCTION_LINES} lines: {long_functions}"


def test_no_import_circle_even_through_imports_inside_functions():
    sources = _sources()
    modules = set(sources)
    graph = {name: _imports(name, path, ast.parse(path.read_text()), modules) for name, path in sources.items()}
    # a module imports its package's __init__ implicitly: not an edge worth reporting
    graph = {n: {m for m in deps if not n.startswith(m + ".")} for n, deps in graph.items()}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_the_library_is_laid_out_by_role():
    """``agreement/`` holds folders by role, no flat modules: the data model and what every method shares
    (``core``), geometry and correspondence (``geometry``), one folder per method (``methods``), formats
    (``io``), simulated raters (``simulate``), what reports derive from results (``reporting``) and the
    FiftyOne bridge (``fo``)."""
    root = REPO / "agreement"
    entries = {p.name for p in root.iterdir() if p.name != "__pycache__"}
    assert entries == {"__init__.py", "core", "geometry", "methods", "io", "simulate", "reporting", "fo"}, entries
    methods = {p.name for p in (root / "methods").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert methods == {"ot", "kalos", "geometry_agreement", "consensus", "classes", "semantic", "tracks",
                       "planning"}, methods


# ---------------------------------------------------------------------------- method knowledge in one place
import re  # noqa: E402

#: A method marker spelled out in code: a string starting ``"iaa.<letter>``, or an f-string building one
#: (``f"iaa.{name}"``). Docstrings may name the pattern as ``"iaa.<name>"``.
_METHOD_LITERAL = re.compile(r"""["']iaa\.[a-z{]""")


def _method_literals(roots=("agreement", "operators", "panels"), files=("__init__.py",)) -> dict[str, list]:
    """Every method marker literal outside ``agreement/fo/methods/``: ``{path: [(line, text)]}``."""
    paths = [p for top in roots for p in (REPO / top).rglob("*.py")] + [REPO / f for f in files]
    found = {}
    for path in paths:
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("agreement/fo/methods/"):
            continue
        hits = [(n, line.strip()) for n, line in enumerate(path.read_text().splitlines(), 1)
                if _METHOD_LITERAL.search(line)]
        if hits:
            found[rel] = hits
    return found


def test_no_method_marker_literal_outside_the_method_declarations():
    """Issue 49: a method declares all it shows (its hooks, :class:`agreement.fo.runs.method_spec.MethodHooks`);
    the shared modules look the hooks up from a run's method marker and never test a method's name, so no
    ``"iaa.<method>"`` literal sits outside ``agreement/fo/methods/``."""
    found = _method_literals()
    assert not found, f"method marker literals outside agreement/fo/methods/ (use the method's hooks): {found}"


def test_the_method_literal_check_finds_a_marker_and_an_f_string():
    """The check above is not blind: it flags a marker compared in code and one built by an f-string, and
    not the ``"iaa.<name>"`` of a docstring."""
    assert _METHOD_LITERAL.search('if info["method"] == "iaa.kalos":')
    assert _METHOD_LITERAL.search("marker = f'iaa.{name}'")
    assert not _METHOD_LITERAL.search('the method marker (``"iaa.<name>"``)')
    assert not _METHOD_LITERAL.search('plugin="@iaa/agreement"')


# ---------------------------------------------------------------------------- layers, private names, pure code
#: The layers of the plugin, lowest first: a module imports only from its own layer and the ones below
#: it. The data model and what every method shares, geometry and correspondence, the methods, then the
#: formats, simulated raters and what reports derive (and the package's own ``agreement/__init__.py``),
#: then the FiftyOne bridge, then the App's operators and panels. A module is in the layer of the longest
#: prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("agreement.core",),
    ("agreement.geometry",),
    ("agreement.methods",),
    ("agreement.io", "agreement.simulate", "agreement.reporting", "agreement"),
    ("agreement.fo",),
    ("operators", "panels"),
)


def _layer(module: str) -> int:
    """Rank in :data:`LAYERS` of the longest prefix that names ``module``."""
    found = [(len(p), rank) for rank, prefixes in enumerate(LAYERS) for p in prefixes
             if module == p or module.startswith(p + ".")]
    assert found, f"{module} is in no layer"
    return max(found)[1]


def _import_nodes(name: str, path: Path, tree: ast.AST):
    """``(line, module, names)`` of every import of ``name`` (inside functions too), relative ones resolved."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            yield node.lineno, base, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def test_layers_import_only_downwards():
    """core < geometry < methods < (io, simulate, reporting) < fo < (operators, panels), imports inside
    functions included: a lower layer never reaches up, so each can be read, tested and installed
    without the ones above it."""
    assert [_layer(m) for m in ("agreement.core.data", "agreement.geometry.boxes", "agreement.methods.ot",
                                "agreement.io.coco", "agreement", "agreement.fo.runs", "panels.agreement_panel")] \
        == [0, 1, 2, 3, 3, 4, 5]
    sources = _sources()
    modules = set(sources)
    upward = []
    for name, path in sorted(sources.items()):
        for dep in sorted(_imports(name, path, ast.parse(path.read_text()), modules)):
            if _layer(dep) > _layer(name):
                upward.append(f"{name} -> {dep}")
    assert not upward, f"imports from a higher layer: {upward}"


def _private_imports(sources: dict[str, Path]) -> list[str]:
    """``from m import _name`` in one module of another module's private name (a private submodule
    imported from its package is a module, not a name, and does not count)."""
    found = []
    for name, path in sorted(sources.items()):
        for line, base, names in _import_nodes(name, path, ast.parse(path.read_text())):
            for imported in names:
                private = imported.startswith("_") and not imported.startswith("__")
                if private and base != name and f"{base}.{imported}" not in sources:
                    found.append(f"{name}:{line} imports {imported} from {base}")
    return found


def test_no_module_imports_another_modules_private_name(tmp_path):
    """A leading underscore says "only this module uses it": a name another module needs is public, with a
    docstring, or the two modules are one."""
    (tmp_path / "m.py").write_text("from .n import _hidden, shown\nfrom . import _private_module\n")
    probe = {"p.m": tmp_path / "m.py", "p._private_module": tmp_path / "m.py"}
    assert _private_imports(probe) == ["p._private_module:1 imports _hidden from p.n", "p.m:1 imports _hidden from p.n"]
    offenders = _private_imports(_sources())
    assert not offenders, f"{len(offenders)} imports of another module's private name: {offenders}"


def _defines_code(tree: ast.AST) -> bool:
    """Whether a module defines a function or a class other than an exception (an exception class declares
    what the bridge raises; it computes nothing)."""
    def is_exception(node: ast.ClassDef) -> bool:
        names = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]
        return bool(names) and all(n.endswith(("Error", "Exception", "Warning")) for n in names)

    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               or (isinstance(node, ast.ClassDef) and not is_exception(node)) for node in ast.walk(tree))


def test_pure_code_lives_outside_the_bridge():
    """Every module of ``agreement/fo/`` that defines a function or a class imports FiftyOne, directly or
    through another ``agreement.fo`` module that does: numpy-only code belongs in the pure library (or
    beside the panels), where it is tested without FiftyOne. Package ``__init__`` files without code are
    exempt."""
    sources = _sources()
    modules = set(sources)
    bridge = {n for n in sources if n == "agreement.fo" or n.startswith("agreement.fo.")}
    trees = {n: ast.parse(sources[n].read_text()) for n in bridge}
    reaches = {n for n in bridge if any(base == "fiftyone" or base.startswith("fiftyone.")
                                        for _, base, _ in _import_nodes(n, sources[n], trees[n]))}
    deps = {n: _imports(n, sources[n], trees[n], modules) & bridge for n in bridge}
    grew = True
    while grew:
        new = {n for n in bridge - reaches if deps[n] & reaches}
        reaches |= new
        grew = bool(new)
    assert "agreement.fo.runs" in reaches
    pure = sorted(n for n in bridge - reaches if _defines_code(trees[n]))
    assert not pure, f"modules of agreement/fo/ that never reach FiftyOne (move them out of the bridge): {pure}"


MAX_POSITIONAL_ARGUMENTS = 6


def _long_positional_calls(tree: ast.AST, where: str) -> list[str]:
    """``where:line callee count`` for each call in ``tree`` passing more than
    :data:`MAX_POSITIONAL_ARGUMENTS` positional arguments (``*args`` unpacking is not counted)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            n = sum(not isinstance(arg, ast.Starred) for arg in node.args)
            if n > MAX_POSITIONAL_ARGUMENTS:
                found.append(f"{where}:{node.lineno} {ast.unparse(node.func)} {n}")
    return found


def test_no_call_passes_more_than_six_positional_arguments():
    """Seven or more arguments in a row are read (and swapped) by position: pass them by keyword, or
    gather them in a parameter object (issue 49)."""
    probe = "f(1, 2, 3, 4, 5, 6, 7)\ng(1, 2, 3, 4, 5, 6, *rest)\nh(1, 2, 3, 4, 5, 6, a=7, b=8)\n"
    assert _long_positional_calls(ast.parse(probe), "probe") == ["probe:1 f 7"]
    offenders = []
    for _, path in sorted(_sources().items()):
        offenders += _long_positional_calls(ast.parse(path.read_text()), str(path.relative_to(REPO)))
    assert not offenders, f"calls passing more than {MAX_POSITIONAL_ARGUMENTS} positional arguments: {offenders}"


#: Public functions of the pure library whose parameter with a default stays positional, by design: a CLI
#: entry point's ``argv`` is its data (``main(["--flag"])``).
POSITIONAL_DEFAULTS_ALLOWED = {"agreement.simulate.noise.fit.main"}


def test_the_public_library_is_keyword_only_after_the_data():
    """Every public function of the pure library (named in its module's ``__all__``) takes the parameters
    that have defaults by keyword only: the data positional, the options after a ``*`` (issue 49)."""
    import importlib
    import inspect

    offenders = []
    for name in _pure_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            f = getattr(module, attr, None)
            if not inspect.isfunction(f) or f.__module__ != name or f"{name}.{attr}" in POSITIONAL_DEFAULTS_ALLOWED:
                continue
            if any(p.kind == p.POSITIONAL_OR_KEYWORD and p.default is not p.empty
                   for p in inspect.signature(f).parameters.values()):
                offenders.append(f"{name}.{attr}")
    assert not offenders, f"public functions taking options positionally (put a * before them): {offenders}"
