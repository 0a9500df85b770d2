"""Label Studio ``choices`` results: image-level classes and tags, with the project's label config.

A ``Choices`` control of a Label Studio label config asks one question about
the whole image::

    <Choices name="quality" toName="image" choice="single-radio">
      <Choice value="good"/><Choice value="bad"/>
    </Choices>

and each annotation answers it with at most one result
``{"type": "choices", "from_name": "quality", "value": {"choices": ["good"]}}``
(its own ``id``: a ``choices`` result sharing its ``id`` with a region is a
per-region attribute, not read here). ``choice="single"`` or
``"single-radio"`` (Label Studio's default is single) is one class per
annotator and image; ``choice="multiple"`` a set of tags.

Absence: an annotation that gave no choice of a control is **missing** for a
single class (no class: a missing value, as for an annotator who was not
assigned the task) and **explicit absence** for tags (the annotator looked and
ticked none: the empty set).

Without the label config (the JSON export does not include it), a control is
read as tags when some annotation gave several choices of it, else as one
class, and its classes are the values seen, sorted. With it (``label_config``:
the XML, or a path to it, from the project's *Settings > Labeling Interface >
Code*), the control's ``choice`` decides, its ``Choice`` values (or their
``alias``) are the classes in the config's order (an ordinal scale's order),
and a value the config does not list, a control it does not declare, or
several choices on a single-choice control are errors naming the task, the
annotation and the annotator. This module does not import FiftyOne.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping
from xml.etree import ElementTree

from agreement.core.validation import AnnotationError

__all__ = ["ChoiceControl", "parse_label_config", "choices_of", "resolve_controls", "CHOICE_TYPES"]

#: The ``type`` of an image-level choices result.
CHOICE_TYPES = ("choices",)


@dataclass(frozen=True)
class ChoiceControl:
    """One ``Choices`` control: its name, whether it takes several choices, its classes.

    Attributes:
        name: the control's ``name`` (the results' ``from_name``).
        multiple: ``True`` for tags (``choice="multiple"``), ``False`` for one class.
        classes: the class names, in the config's order (or sorted, when read from the data).
        source: ``"label config"`` or ``"inferred from the export"``.
    """

    name: str
    multiple: bool
    classes: tuple[str, ...]
    source: str

    @property
    def label_type(self) -> str:
        """``"tags"`` or ``"classification"``."""
        return "tags" if self.multiple else "classification"


def parse_label_config(config: str | os.PathLike) -> dict[str, ChoiceControl]:
    """The image-level ``Choices`` controls of a label config (XML text, or a path to an XML file).

    Controls with ``perRegion="true"`` are left out (they label regions).

    Args:
        config: the label config's XML text, or the path of a file holding it.

    Returns:
        ``{control name: ChoiceControl}``, in the config's order.

    Raises:
        AnnotationError: not XML, a control without ``name``, or a ``choice`` other than
            ``single``, ``single-radio`` or ``multiple``.
    """
    text = os.fspath(config)
    where = "label config"
    if not text.lstrip().startswith("<"):
        where = text
        try:
            with open(text, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise AnnotationError(f"label config {where!r}: not XML and not a readable file ({e})") from e
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as e:
        raise AnnotationError(f"{where}: the label config is not valid XML ({e})") from e
    out: dict[str, ChoiceControl] = {}
    for el in root.iter():
        if el.tag.lower() != "choices" or str(el.get("perRegion", "")).lower() == "true":
            continue
        name = el.get("name")
        if not name:
            raise AnnotationError(f"{where}: a <Choices> control has no name")
        mode = (el.get("choice") or "single").lower()
        if mode not in ("single", "single-radio", "multiple"):
            raise AnnotationError(f"{where}: <Choices name={name!r}> has choice={mode!r}; expected single, "
                                  "single-radio or multiple")
        values = [c.get("alias") or c.get("value") for c in el.iter() if c.tag.lower() == "choice"]
        out[name] = ChoiceControl(name, mode == "multiple", tuple(str(v) for v in values if v), "label config")
    return out


def choices_of(group: list[dict], where: str) -> dict[str, list[str]] | None:
    """``{control: [choices]}`` of a result group that is image-level choices, else ``None``.

    Args:
        group: the results of an annotation sharing one ``id`` (a result without one is a group of its own).
        where: the annotation, as the messages name it.

    Returns:
        Each control's choices (duplicates dropped, in order), or ``None`` when the group holds anything
        other than choices.

    Raises:
        AnnotationError: a ``value.choices`` that is not a list of strings, or one control twice.
    """
    if not group or any(r.get("type") not in CHOICE_TYPES for r in group):
        return None
    out: dict[str, list[str]] = {}
    for res in group:
        name = str(res.get("from_name") or "choices")
        value = res.get("value")
        got = value.get("choices") if isinstance(value, dict) else None
        if not isinstance(got, list) or not all(isinstance(c, str) for c in got):
            raise AnnotationError(f"{where}, result {res.get('id')!r} (choices {name!r}): value.choices must be a "
                                  f"list of strings, got {got!r:.80}")
        if name in out:
            raise AnnotationError(f"{where}: control {name!r} is answered twice in one annotation")
        out[name] = list(dict.fromkeys(got))
    return out


def add_choices(into: dict[str, list[str]], found: Mapping[str, list[str]], where: str) -> None:
    """Adds one result group's ``found`` to an annotation's choices.

    Args:
        into: the annotation's ``{control: [choices]}`` so far (updated in place).
        found: one group's, as :func:`choices_of` gives them.
        where: the annotation, as the messages name it.

    Raises:
        AnnotationError: a control answered twice in one annotation.
    """
    for name, got in found.items():
        if name in into:
            raise AnnotationError(f"{where}: control {name!r} is answered twice in one annotation")
        into[name] = got


def resolve_controls(
    choices: Mapping[Any, Mapping[str, list[str]]],
    where: Mapping[Any, str],
    config: Mapping[str, ChoiceControl] | None,
) -> dict[str, ChoiceControl]:
    """The controls of the export's choices, checked against ``config`` when given.

    Args:
        choices: per submitted annotation (any key), ``{control: [choices]}``.
        where: per annotation key, how to name it in errors (task, annotation, annotator).
        config: the label config's controls (:func:`parse_label_config`), or ``None`` to infer.

    Returns:
        ``{control: ChoiceControl}``: every control of ``config`` (in its order), else every control
        answered, in order of first appearance.

    Raises:
        AnnotationError: with ``config``: an undeclared control, a value it does not list, several
            choices on a single-choice control.
    """
    if config is None:
        seen: dict[str, dict[str, Any]] = {}
        for per in choices.values():
            for name, got in per.items():
                entry = seen.setdefault(name, {"multiple": False, "values": set()})
                entry["multiple"] |= len(got) > 1
                entry["values"].update(got)
        return {n: ChoiceControl(n, e["multiple"], tuple(sorted(e["values"])), "inferred from the export")
                for n, e in seen.items()}
    for key, per in choices.items():
        for name, got in per.items():
            control = config.get(name)
            if control is None:
                raise AnnotationError(f"{where[key]}: control {name!r} is not a <Choices> control of the label "
                                      f"config (its controls: {sorted(config) or 'none'})")
            unknown = [c for c in got if c not in control.classes]
            if unknown:
                raise AnnotationError(f"{where[key]}: {unknown} not listed in the label config's <Choices "
                                      f"name={name!r}> (its choices: {list(control.classes)})")
            if len(got) > 1 and not control.multiple:
                raise AnnotationError(f"{where[key]}: {len(got)} choices {got} on <Choices name={name!r}>, a "
                                      "single-choice control (choice='multiple' takes several)")
    return dict(config)
