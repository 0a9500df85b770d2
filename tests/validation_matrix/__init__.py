"""The validation matrix (issue 47): every compute method x every label type it accepts x the properties a
chance-corrected score must have, measured on simulated raters.

Each part module (``images.py``: instance label types on images; ``video_classes.py``: classes, tag sets,
semantic masks, frame labels, tracks and temporal segments) exposes ``cells() -> list[Cell]``.
``tests/test_validation_matrix.py`` computes every cell once, asserts each applicable one, and writes
``docs/validation.md`` (:func:`render`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The properties, in the order of the page's columns: key -> (column title, what it checks).
PROPERTIES: dict[str, tuple[str, str]] = {
    "identical": ("identical", "identical raters give the perfect value"),
    "chance_homogeneous": ("chance, homogeneous", "independent random raters on a homogeneous corpus score "
                           "chance: |statistic| <= 0.05, or within 3 standard errors on a small corpus"),
    "chance_heterogeneous": ("chance, heterogeneous", "the same on a heterogeneous corpus: image sizes 64 to 4,096 px "
                             "(aspect 1:2 to 2:1), clip lengths 60 to 6,000 frames, 1 to 50 labels per item, rare classes, "
                             "2 to 200 raters with sparse assignment"),
    "monotone": ("monotone in noise", "non-increasing as each of the simulator's noise stages grows"),
    "invariant": ("invariances", "unchanged by the order of samples, raters and labels, by renaming classes and "
                  "raters, by the frame rate and the image resolution"),
    "one_rater": ("one rater", "a single rater: a documented value, or None with its reason"),
    "never_meet": ("raters never meet", "raters who never share an item: None with its reason"),
    "empty_rater": ("a rater with no labels", "a rater who labels nothing: a documented value"),
    "all_empty": ("everything empty", "no rater labels anything: a documented value or None with its reason"),
    "single_class": ("a single class", "one class only: a documented value or None with its reason"),
}


#: Why KαLOS's α (and α over units formed from the annotations, as track presence) is judged one-sided at
#: chance: the property it has is "never above chance", not "0 at chance".
UNITS_CHANCE_NOTE = ("one-sided: never above chance (mean ≤ 0.05 or ≤ 3 s.e.). Units form only where some "
                     "rater drew something, so no unit holds two 'no object' values: independent random "
                     "raters score below 0 by construction, the more so the sparser their labels "
                     "(docs/method-kalos.md, 'At chance'). αOT and detection α are the statistics at 0.")


@dataclass(frozen=True)
class Cell:
    """One cell of the matrix.

    Attributes:
        method: the method and statistic, as the page names it (e.g. ``"OT: αOT"``).
        kind: the label type (e.g. ``"boxes"``, ``"classes (ordinal)"``).
        prop: a key of :data:`PROPERTIES`.
        value: the measured number(s) as the page shows them (e.g. ``"0.012 ± 0.010"``, ``"None: <reason>"``).
        ok: whether the property holds; ``None`` for "not applicable" (``note`` then says why).
        note: the criterion, or why the property does not apply.
    """

    method: str
    kind: str
    prop: str
    value: str
    ok: bool | None
    note: str = ""

    def __post_init__(self) -> None:
        if self.prop not in PROPERTIES:
            raise ValueError(f"unknown property {self.prop!r}; one of {list(PROPERTIES)}")
        if self.ok is None and not self.note:
            raise ValueError(f"{self.method} x {self.kind} x {self.prop}: 'not applicable' needs its reason")

    @property
    def id(self) -> str:
        return f"{self.method} | {self.kind} | {self.prop}"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(cells: list[Cell], header: str) -> str:
    """The page: ``header``, then one table per method (rows: label types; columns: properties) with the
    measured value in each cell (✓ holds, ✗ fails, n/a with its reason in the notes below the table)."""
    out = [header.rstrip(), ""]
    methods: dict[str, list[Cell]] = {}
    for c in cells:
        methods.setdefault(c.method, []).append(c)
    for method, mc in methods.items():
        props = [p for p in PROPERTIES if any(c.prop == p for c in mc)]
        kinds = list(dict.fromkeys(c.kind for c in mc))
        at = {(c.kind, c.prop): c for c in mc}
        out += [f"## {method}", "", "| label type | " + " | ".join(PROPERTIES[p][0] for p in props) + " |",
                "|:---|" + ":---|" * len(props)]
        notes: list[str] = []
        for kind in kinds:
            row = []
            for p in props:
                got = at.get((kind, p))
                if got is None:
                    row.append("")
                    continue
                mark = "n/a" if got.ok is None else ("✓" if got.ok else "✗")
                if got.note:
                    notes.append(f"{len(notes) + 1}. *{kind}, {PROPERTIES[p][0]}*: {got.note}")
                    mark += f" [{len(notes)}]"
                row.append(f"{_escape(got.value)} {mark}".strip())
            out.append(f"| {kind} | " + " | ".join(row) + " |")
        if notes:
            out += ["", *[_escape(n) for n in notes]]
        out.append("")
    return "\n".join(out)
