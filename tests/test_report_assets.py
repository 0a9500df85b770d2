"""Light reports and one colour convention.

* An export writes plotly.js once, ``<output_dir>/plotly.min.js`` (the installed plotly's), which every run's
  ``report.html`` loads by a relative ``<script src>``: a page under 1 MB, one js file however many runs;
  ``self_contained=True`` inlines it instead (one file, nothing beside it).
* Every figure the plugin builds for the built-in methods, in the panel and in the reports, takes its colours
  from :mod:`agreement.reporting.figures.palette`: blue high agreement, red low (the pair heatmap's high end
  blue, a rater who lowers agreement red), no named plotly colour scale (plotly.js and plotly.py disagree on
  their direction), and no colour literal outside the palette module.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_panel_classes import RATERS as CLASS_RATERS, class_consensus_ds, class_ds  # noqa: F401 - fixtures
from test_panel_masks import mask_ds  # noqa: F401 - fixture

OP = "@iaa/agreement/{}"
ROOT = Path(__file__).resolve().parents[1]
MB = 1_000_000


@pytest.fixture
def crowd(fo, make_dataset):
    """A crowd of boxes with an OT, a KαLOS, a geometry, a calibration and two consensus runs."""
    from conftest import crowd_with_runs

    runs = (("compute_ot_agreement", "ot", {}), ("compute_kalos", "kalos", {}), ("compute_geometry_agreement", "geo", {}),
            ("calibrate_agreement", "cal", {}), ("compute_consensus", "cons", {"method": "majority"}),
            ("compute_consensus", "em", {"method": "em"}))
    return crowd_with_runs(make_dataset, n=40, raters=5, seed=4, folder="/crowd/img", runs=runs)[0]

# ------------------------------------------------------------------------------------------- plotly.js
def _scripts(html: str) -> list[str]:
    return re.findall(r"<script[^>]*\bsrc=['\"]([^'\"]+)['\"]", html)


@pytest.mark.fiftyone
def test_an_export_writes_plotly_js_once_and_each_page_stays_under_1_mb(fo, crowd, tmp_path):
    from plotly.offline import get_plotlyjs

    import fiftyone.operators as foo

    out = tmp_path / "reports"
    r = foo.execute_operator(OP.format("export_agreement_report"),
                             ctx=dict(view=crowd.view(), params=dict(output_dir=str(out), keys=["ot", "kalos", "cons"])))
    assert r.error is None, r.error
    js = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.js"))
    assert js == ["plotly.min.js"]  # one plotly.js for the three runs
    assert (out / "plotly.min.js").read_text(encoding="utf-8") == get_plotlyjs()
    assert str(out / "plotly.min.js") in r.result["files"] and r.result["num_files"] == len(r.result["files"])
    for key in ("ot", "kalos", "cons"):
        page = out / key / "report.html"
        html = page.read_text(encoding="utf-8")
        assert page.stat().st_size < MB, (key, page.stat().st_size)
        assert _scripts(html) == ["../plotly.min.js"], key  # relative: opens offline from the folder
        assert "Plotly.newPlot" in html and html.count('class="plotly-graph-div"') >= 2, key
        assert "function(t,e)" not in html[:200_000] or len(html) < MB  # no plotly.js bundle inlined
        assert (page.parent / _scripts(html)[0]).resolve() == (out / "plotly.min.js").resolve()
        assert "plotly.min.js" in html.split("Files beside this page", 1)[1]  # the page names the file it needs
    # a second export into the same folder: still one plotly.js, unchanged
    before = (out / "plotly.min.js").stat().st_mtime_ns
    foo.execute_operator(OP.format("export_agreement_report"),
                         ctx=dict(view=crowd.view(), params=dict(output_dir=str(out), keys=["geo"])))
    assert sorted(p.name for p in out.rglob("*.js")) == ["plotly.min.js"]
    assert (out / "plotly.min.js").stat().st_mtime_ns == before


@pytest.mark.fiftyone
def test_self_contained_pages_inline_plotly_and_write_no_js(fo, crowd, tmp_path):
    from plotly.offline import get_plotlyjs

    from agreement.fo.reports import export_agreement_report

    written = export_agreement_report(crowd, tmp_path, keys=["ot", "kalos"], self_contained=True)
    assert written["plotly_js"] is None and not list(tmp_path.rglob("*.js"))
    for key in ("ot", "kalos"):
        html = Path(written["runs"][key]["html"]).read_text(encoding="utf-8")
        assert _scripts(html) == [] and get_plotlyjs()[:2000] in html and html.count("window.PlotlyConfig") == 1
    light = export_agreement_report(crowd, tmp_path / "light", keys="ot")
    assert light["plotly_js"] == str(tmp_path / "light" / "plotly.min.js")


def test_render_report_loads_plotly_once_from_the_given_file_or_inline():
    from agreement.reporting.html import render_report

    fig = {"name": "h", "title": "t", "traces": [{"type": "bar", "x": [1], "y": [2]}],
           "layout": {"title": {"text": "t"}}, "config": {}, "click": None}
    head = {"title": "Run", "cards": []}
    sections = [{"title": "A", "figures": [fig, dict(fig, name="g")], "absent": ""}]
    light = render_report(head, sections, plotly_src="../plotly.min.js")
    assert _scripts(light) == ["../plotly.min.js"] and len(light) < 50_000
    assert light.index("../plotly.min.js") < light.index("Plotly.newPlot")  # loaded in the head, before use
    assert "window.Plotly === undefined" in light  # a moved folder says what is missing
    inline = render_report(head, sections)
    assert _scripts(inline) == [] and len(inline) > 3 * MB and inline.count("window.PlotlyConfig") == 1


# ------------------------------------------------------------------------------------------- colours
def _figures(value) -> list[dict]:
    """Every figure dict (``traces`` and ``layout``) inside ``value``."""
    if isinstance(value, dict):
        if "traces" in value and "layout" in value:
            return [value]
        return [f for v in value.values() for f in _figures(v)]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _figures(v)]
    return []


def _colours(value, path: str = "") -> list[tuple[str, str]]:
    """Every colour string inside a trace or layout, with its path (colour scales apart)."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "colorscale":
                continue
            if k in ("color", "fillcolor", "bgcolor") or k.endswith("colour"):
                for c in v if isinstance(v, list) else [v]:
                    if isinstance(c, str):
                        out.append((f"{path}.{k}", c))
            out += _colours(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _colours(v, f"{path}[{i}]")
    return out


def _check_palette(fig: dict) -> None:
    from agreement.reporting.figures import palette as pal

    named = set(pal.SERIES_COLOURS) | set(pal.RATER_COLOURS) | {pal.HIGH, pal.LOW, pal.NEUTRAL, pal.SELECTED,
                                                                  pal.REFERENCE, pal.LOW_SHADE}
    where = fig["name"]
    for t in fig["traces"]:
        scale = t.get("colorscale") or (t.get("marker") or {}).get("colorscale")
        if t.get("type") == "heatmap":
            assert scale in (pal.AGREEMENT_SCALE, pal.SHARE_SCALE), (where, scale)
        elif scale is not None:
            assert scale == pal.AGREEMENT_SCALE, (where, scale)
        assert not t.get("reversescale") and not (t.get("marker") or {}).get("reversescale"), where  # no flip
        if scale == pal.AGREEMENT_SCALE:
            assert scale[-1][1] == pal.HIGH and scale[0][1] == pal.LOW  # high end blue, low end red
            assert (t.get("zmin"), t.get("zmax")) == pal.AGREEMENT_RANGE, where
        colour = (t.get("marker") or {}).get("color")
        by_value = t.get("type") == "bar" and isinstance(colour, list) and (
            colour in (pal.agreement_colours(t["y"]), pal.effect_colours(t["y"])))  # bars coloured by agreement
        for at, c in _colours(t, where) + _colours(fig["layout"], where + ".layout"):
            if not (by_value and at == f"{where}.marker.color"):
                assert c in named, (at, c)
    assert fig["layout"].get("colorway") == pal.SERIES_COLOURS, where


def _check_vitality(fig: dict) -> None:
    from agreement.reporting.figures.palette import HIGH, LOW

    t = fig["traces"][0]
    for y, c in zip(t["y"], t["marker"]["color"], strict=True):
        if y is not None:
            assert c == (LOW if y < 0 else HIGH), (y, c)  # lowers agreement: red; raises it: blue


def _panel_and_report_figures(ds, keys, tmp_path, monkeypatch) -> dict[str, list[dict]]:
    """The figures of each run: the panel's (the run's value and the observed agreement in the heatmap) and
    those its report draws (every figure passed to the page)."""
    import agreement.reporting.html as page
    from agreement.fo.panel.data import run_panel_data
    from agreement.fo.reports import export_agreement_report

    drawn: list[dict] = []
    original = page.figure_html

    def recording(fig: dict, *args, **kwargs) -> str:
        drawn.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(page, "figure_html", recording)
    out = {}
    for key in keys:
        drawn.clear()
        export_agreement_report(ds, tmp_path / "r", keys=key)
        figs = list(drawn)
        for stat in ("value", "observed"):
            figs += _figures(run_panel_data(ds, key, options={"pair_stat": stat, "min_labels": 0}))
        out[key] = figs
    return out


@pytest.mark.fiftyone
def test_every_figure_of_the_built_in_methods_uses_the_palette(fo, crowd, class_consensus_ds, mask_ds,  # noqa: F811
                                                                 tmp_path, monkeypatch):
    from agreement.reporting.figures.palette import AGREEMENT_SCALE, HIGH

    runs = {**_panel_and_report_figures(crowd, ["ot", "kalos", "geo", "cal", "cons", "em"], tmp_path, monkeypatch),
            **_panel_and_report_figures(class_consensus_ds, ["cls", "vote"], tmp_path, monkeypatch),
            **_panel_and_report_figures(mask_ds[0], ["seg"], tmp_path, monkeypatch)}
    names = set()
    for figs in runs.values():
        for fig in figs:
            _check_palette(fig)
            names.add(fig["name"])
            if fig["name"] == "vitality":
                _check_vitality(fig)
            if fig["name"] == "pair_matrix":
                t = fig["traces"][0]
                assert t["colorscale"] == AGREEMENT_SCALE and t["colorscale"][-1][1] == HIGH and t["zmax"] == 1.0
    # the figures the convention is about were all seen
    assert {"pair_matrix", "vitality", "histogram", "classes", "alpha_tau", "confusion", "mask_pairs",
            "mask_classes"} <= names, names


@pytest.mark.fiftyone
def test_video_timeline_and_track_figures_use_the_palette(fo, tmp_path, monkeypatch):
    import fiftyone.operators as foo

    from agreement.fo.simulate.video import simulate_video_dataset

    ds, _ = simulate_video_dataset(num_videos=2, num_frames=12, num_objects=2, num_raters=3, magnitude=3.0, seed=0)
    try:
        fields = [f"frames.r{k}" for k in (1, 2, 3)]
        for op, key in (("compute_kalos", "k"), ("compute_track_agreement", "tr")):
            r = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=dict(fields=fields, key=key)))
            assert r.error is None, r.error
        runs = _panel_and_report_figures(ds, ["k", "tr"], tmp_path, monkeypatch)
        figs = [f for v in runs.values() for f in v]
        assert "video_timeline" in {f["name"] for f in figs}
        for fig in figs:
            _check_palette(fig)
    finally:
        ds.delete()


def test_the_heatmap_and_vitality_builders_follow_the_convention():
    from agreement.reporting.figures.classes import class_vitality_bars
    from agreement.reporting.figures.kalos import kalos_bars
    from agreement.reporting.figures.pair_heatmap import pair_matrix, pair_matrix_figure
    from agreement.reporting.figures.palette import AGREEMENT_SCALE, HIGH, LOW, agreement_colours

    vit = {"raters": ["a", "b", "c"], "vitality": [-0.2, 0.1, None], "alpha_without": [0.8, 0.5, None], "alpha": 0.6}
    for fig in (kalos_bars({"rater_vitality": vit})[0], class_vitality_bars({"rater_vitality": vit})[0]):
        assert fig["traces"][0]["marker"]["color"][:2] == [LOW, HIGH]
    records = [{"rater_a": "a", "rater_b": "b", "value": 1.0, "n_shared_samples": 5},
               {"rater_a": "a", "rater_b": "c", "value": 0.0, "n_shared_samples": 5},
               {"rater_a": "b", "rater_b": "c", "value": -0.3, "n_shared_samples": 5}]
    pm = pair_matrix({"raters": ["a", "b", "c"], "rater_pairs": records}, "value", "α per pair")
    assert pm is not None
    t = pair_matrix_figure(pm, "α", "whole run", clickable=False)["traces"][0]
    assert t["colorscale"] == AGREEMENT_SCALE and (t["zmin"], t["zmax"]) == (0.0, 1.0)
    assert agreement_colours([1.0, 0.0, -0.3]) == [HIGH, LOW, LOW]  # α 1.00 is blue, chance and below red


_FIGURE_CODE = ["agreement/reporting/figures", "agreement/fo/panel", "agreement/fo/methods", "agreement/fo/reports",
                "panels", "operators"]


def test_no_colour_literal_outside_the_palette():
    """Figure code names colours through the palette; a hex colour, an rgb() or a named plotly scale elsewhere
    would start a second convention."""
    bad = re.compile(r"""["']#[0-9a-fA-F]{3,8}["']|rgba?\(|["'](?:Viridis|RdBu|Reds|Blues|Greys|Plasma|Jet)["']""")
    found = []
    for folder in _FIGURE_CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "palette.py":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if bad.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)
