"""A method declared once: its parameters, its engine spec, its outputs, its panel view and results class.

A :class:`MethodDeclaration` is everything the plugin needs to offer a
method: the operator and its App form (:mod:`operators.declared`), the
Python function (:func:`python_function`), the validation
(:meth:`Param.check`), the run info (the validated parameters are what the
run records), the README's parameter table (:func:`parameter_table`), the
panel card (``view``) and the typed results (``results_cls``). Every method
module in :mod:`agreement.fo.methods` that defines a ``DECLARATION`` is
found by the registry there: adding a method means writing its kernel and
its declaration, nothing else.

The parameters every compute operator shares are two objects, not a list
repeated per method: :class:`RaterLayout` (how the raters' labels are read)
and :class:`Execution` (where and in what shards the run computes).
"""

from __future__ import annotations

import inspect
import math
import sys
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping, Sequence

from agreement.fo.runs.engine import MethodSpec, run_method
from agreement.fo.runs.method_spec import MethodHooks
from agreement.fo.runs.options import Execution, RaterLayout

__all__ = ["Param", "FormValues", "RaterLayout", "Execution", "MethodDeclaration", "run_declared", "python_function",
           "parameter_table", "split_kwargs", "run_target", "collection_target", "accepted_types", "check_label_type"]

_KINDS = (float, int, str, bool, list)


@dataclass(frozen=True)
class Param:
    """One method parameter: its type, default, range or choices, label and help, and where it is offered.

    Attributes:
        name: the parameter name (the paper's name where it has one: ``tau``, ``beta``, ...).
        kind: ``float``, ``int``, ``str``, ``bool`` or ``list`` (of ``item``).
        default: the default value (``None``: optional, absent).
        label: the App form's label.
        help: one sentence on what it does.
        low, high: the range of a number; ``low_open``/``high_open`` exclude the end.
        choices: the allowed values of a ``str`` (or of each item of a list; the form's dropdown, in this order).
        choice_help: a description per choice.
        radio: the form shows the choices as radio buttons (else a dropdown).
        item: the type of a list's items (``float`` or ``str``).
        special: values taken as they are besides the type's (e.g. ``"auto"`` for a number chosen from the data).
        form: offered in the App form (else Python only).
        python: a parameter of the method (else a form-only control, e.g. a checkbox that shows another
            parameter; :attr:`MethodDeclaration.from_form` turns the form's values into the method's).
        form_default: the form's default where it differs from the Python one (e.g. a number shown in place
            of the special ``"auto"``).
        show_if: ``params -> bool``: the form shows it only then (the Python call always takes it).
        check: an extra validation ``value -> value`` that raises ``ValueError`` naming the problem.
        form_via: for a parameter not in the form itself, the form-only controls that set it (their names;
            :attr:`MethodDeclaration.from_form` turns them into it), named in the parameter reference.
        label_types: the rater label types it applies to (FiftyOne label classes; empty: every type the method
            reads): the form shows it only when the rater fields chosen hold one of them (the Python call always
            takes it).
        choice_types: choice -> the rater label types it applies to; the form offers a choice only for those
            (choices not listed: for every type).
        form_values: ``(samples, layout, params) -> FormValues``: the values the form offers for a list, read from
            the data (e.g. the classes found in the rater fields, to put in order), its prefilled value and what
            is wrong with the value given so far; ``layout`` holds ``fields`` or ``field`` and ``rater_attr``.
    """

    name: str
    kind: type
    default: Any
    label: str
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple = ()
    choice_help: Mapping[str, str] = field(default_factory=dict)
    radio: bool = False
    item: type = float
    special: tuple = ()
    form: bool = True
    python: bool = True
    form_default: Any = None
    show_if: Callable[[Mapping[str, Any]], bool] | None = None
    check: Callable[[Any], Any] | None = None
    form_via: tuple = ()
    label_types: tuple = ()
    choice_types: Mapping[str, tuple] = field(default_factory=dict)
    form_values: Callable[[Any, Mapping[str, Any], Mapping[str, Any]], FormValues] | None = None

    def applies_to(self, kind: type | None) -> bool:
        """Whether the parameter applies to rater fields of label type ``kind`` (``None``: not known yet: yes)."""
        return kind is None or not self.label_types or kind in self.label_types

    def choices_for(self, kind: type | None) -> tuple:
        """The choices that apply to rater fields of label type ``kind`` (every choice while it is not known)."""
        return tuple(c for c in self.choices if kind is None or kind in self.choice_types.get(c, (kind,)))

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise TypeError(f"parameter {self.name!r}: kind must be one of {_KINDS}, got {self.kind!r}")
        if self.default is not None:
            self.validate(self.default)

    def range_text(self) -> str:
        """The range or the choices, as the docs and the error messages say them."""
        if self.choices:
            return ("each " if self.kind is list else "") + "one of " + ", ".join(repr(c) for c in self.choices)
        if self.low is None and self.high is None:
            return ""
        lo = "(" if self.low_open else "["
        hi = ")" if self.high_open else "]"
        text = f"in {lo}{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}{hi}"
        return text + "".join(f" or {v!r}" for v in self.special)

    def validate(self, value: Any) -> Any:
        """``value`` converted to the parameter's type and checked against its range and choices.

        Raises:
            ValueError: naming the parameter, the value and what is allowed.
        """
        if any(value == v and type(value) is type(v) for v in self.special):
            return value
        if value is None:
            if self.default is None:
                return None
            raise ValueError(f"{self.name} needs a value ({self.range_text() or self.kind.__name__})")
        value = self._converted(value)
        items = value if self.kind is list else [value]
        unknown = [v for v in items if self.choices and v not in self.choices]
        if unknown:
            raise ValueError(f"unknown {self.name} "
                             f"{unknown if self.kind is list else unknown[0]!r}; choose from {list(self.choices)}")
        for v in items:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not self._in_range(v):
                raise ValueError(f"{self.name} must be {self.range_text()}, got {v!r}")
        return self.check(value) if self.check is not None else value

    def _converted(self, value: Any) -> Any:
        also = "".join(f" or {v!r}" for v in self.special if v is not None)
        bad = ValueError(f"{self.name} must be a {self.kind.__name__}{also}, got {value!r}")
        if self.kind is bool:
            if not isinstance(value, bool):
                raise bad
            return value
        if self.kind in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise bad
            if self.kind is int and float(value) != int(value):
                raise bad
            return self.kind(value)
        if self.kind is str:
            if not isinstance(value, str):
                raise bad
            return value
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise bad
        return [Param(self.name, self.item, None, "", "")._converted(v) for v in value]

    def _in_range(self, v: float) -> bool:
        if self.low is not None and (v < self.low or (self.low_open and v == self.low)):
            return False
        return not (self.high is not None and (v > self.high or (self.high_open and v == self.high)))


@dataclass(frozen=True)
class FormValues:
    """What the form offers for a list parameter whose values come from the data (:attr:`Param.form_values`).

    Attributes:
        choices: the values found, in the order the form lists them.
        default: the value the form fills in (``None``: none, the user picks them, e.g. an order that the data
            cannot tell).
        problem: what is wrong with the value given so far (or missing), as the run would refuse it; ``None``:
            nothing.
    """

    choices: tuple
    default: list | None = None
    problem: str | None = None


_LAYOUT_NAMES = tuple(f.name for f in fields(RaterLayout))
_EXECUTION_NAMES = tuple(f.name for f in fields(Execution))


@dataclass(frozen=True)
class MethodDeclaration:
    """A method, declared once (see the module docstring).

    Attributes:
        operator: the operator's name (``compute_<method>``), also the Python function's.
        label, description: the operator's label and one-line description.
        spec: the engine's :class:`agreement.fo.runs.engine.MethodSpec` (kernel, merge, fields owned).
        params: the method parameters.
        outputs: the headline numbers the operator shows: ``(summary key, label, "float" | "int")``.
        key_prefix: the run key the form offers (``kalos``, ``kalos_2``, ...).
        derive: ``validated params -> params`` the run records (defaults filled, derived values added;
            raises ``ValueError`` for a combination that is not allowed).
        records_key: the run key is one of the recorded parameters (``params["key"]``: a method that names
            what it writes inside its own label field after the key).
        view: the panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`); ``None``: its results
            class's ``view``.
        results_cls: its typed results class (:mod:`agreement.fo.runs.results`); ``None``: registered there.
        streams: the form offers the execution options (a method with a kernel).
        label_types: the label types it reads, which the form offers as rater fields (FiftyOne label classes;
            empty: the instance label lists, see :func:`accepted_types`); others are refused by
            :func:`check_label_type`, naming the operators that read them.
        from_form: ``form values -> method keyword arguments`` (form-only controls resolved; the values the
            user left empty are absent).
        hooks: everything method-specific it shows (:class:`agreement.fo.runs.method_spec.MethodHooks`: panel
            cards, sections and figures, rater tables, label explanations, drill-down modes, the conflicts of
            reports, review); the defaults offer none of them.
    """

    operator: str
    label: str
    description: str
    spec: MethodSpec
    params: tuple[Param, ...]
    outputs: tuple[tuple[str, str, str], ...] = ()
    key_prefix: str = "run"
    derive: Callable[[dict], dict] = lambda params: params
    view: dict | None = None
    results_cls: type | None = None
    streams: bool = True
    label_types: tuple = ()
    from_form: Callable[[dict], dict] = lambda values: values
    records_key: bool = False
    hooks: MethodHooks = field(default_factory=MethodHooks)

    @property
    def method(self) -> str:
        """The run's method marker (``iaa.<name>``)."""
        return self.spec.method

    def param(self, name: str) -> Param:
        """The declared parameter called ``name``.

        Args:
            name: A parameter's name.

        Returns:
            The :class:`Param` of that name.

        Raises:
            StopIteration: The declaration has no parameter of that name.
        """
        return next(p for p in self.params if p.name == name)

    @property
    def method_params(self) -> tuple[Param, ...]:
        """The parameters of the method (not the form-only controls)."""
        return tuple(p for p in self.params if p.python)

    def validate(self, given: Mapping[str, Any]) -> dict:
        """Every parameter, validated, defaults filled, then :attr:`derive`."""
        return self.derive({p.name: p.validate(given.get(p.name, p.default)) for p in self.method_params})


def split_kwargs(decl: MethodDeclaration, kwargs: Mapping[str, Any]) -> tuple[RaterLayout, Execution, dict]:
    """The keyword arguments of a call as the rater layout, the execution and the method's own parameters.

    Raises:
        TypeError: a name that is none of them (the message lists what the method takes).
    """
    own = {p.name for p in decl.method_params}
    unknown = sorted(set(kwargs) - own - set(_LAYOUT_NAMES) - set(_EXECUTION_NAMES))
    if unknown:
        raise TypeError(f"{decl.operator}() got parameters it does not take: {unknown}; it takes "
                        f"{sorted(own)}, the rater layout {list(_LAYOUT_NAMES)} and the execution "
                        f"{list(_EXECUTION_NAMES)}")
    layout = RaterLayout(**{k: kwargs[k] for k in _LAYOUT_NAMES if k in kwargs})
    execution = Execution(**{k: kwargs[k] for k in _EXECUTION_NAMES if k in kwargs})
    return layout, execution, {k: v for k, v in kwargs.items() if k in own}


def run_declared(decl: MethodDeclaration, samples, key: str, *, overwrite: bool = False,
                 progress: Callable[[float, str], None] | None = None, target: Mapping[str, Any] | None = None,
                 **kwargs) -> dict:
    """Runs the declared method on ``samples`` as run ``key``: validates everything before reading anything,
    then :func:`agreement.fo.runs.engine.run_method`. Returns the headline numbers (NaN as ``None``).

    ``target`` (the operators give it) is recorded with the run's parameters as ``params["target"]``:
    which samples the run was asked to compute on (see :func:`run_target`)."""
    from agreement.fo.frames.runs import is_frame_layout, run_on_frames

    layout, execution, own = split_kwargs(decl, kwargs)
    frames = is_frame_layout(layout)  # all frame fields, or none (refuses a mix)
    kind = check_label_type(decl, samples, layout)
    if kind is not None and any(p.name == LABEL_TYPE_PARAM for p in decl.method_params):
        own[LABEL_TYPE_PARAM] = kind.__name__  # a method that runs differently per label type is told it
    params = decl.validate(own)
    if decl.records_key:
        params["key"] = key
    if target is not None:
        params["target"] = dict(target)
    if frames:
        return run_on_frames(decl, samples, key, layout, params, execution=execution, overwrite=overwrite,
                             progress=progress)
    return run_method(samples, key, decl.spec, layout, params, execution=execution, overwrite=overwrite,
                      progress=progress)


def accepted_types(decl: MethodDeclaration) -> tuple[type, ...]:
    """The label types the method reads: its declared ``label_types``, else the instance label lists
    (``Detections``, ``Polylines``, ``Keypoints``)."""
    from agreement.fo.storage.projection import LABEL_TYPES

    return tuple(decl.label_types) or tuple(LABEL_TYPES)


#: A method parameter of this name is filled in by :func:`run_declared` with the rater fields' label type.
LABEL_TYPE_PARAM = "label_type"


def check_label_type(decl: MethodDeclaration, samples, layout: RaterLayout) -> type | None:
    """Refuses rater fields of a label type the method does not read, naming the operators that do;
    returns their label type (``None`` without a field named).

    Raises:
        ValueError: e.g. "compute_ot_agreement does not apply to Classification fields ('r1', 'r2'); for
            Classification fields use compute_class_agreement or compute_consensus".
    """
    from agreement.fo.storage.label_schema import field_label_type

    names = list(layout.fields) if layout.fields is not None else [layout.field] if layout.field else []
    types = {name: field_label_type(samples, name) for name in names}
    if len(set(types.values())) > 1:
        raise ValueError("every rater field must hold the same label type; got "
                         + ", ".join(f"{n!r}: {t.__name__}" for n, t in types.items()))
    wrong = {n: t for n, t in types.items() if t not in accepted_types(decl)}
    if not wrong:
        kind = next(iter(types.values()), None)
        if kind is not None and kind.__name__ == "Segmentation":  # streamed: no whole-corpus check sees this
            silent = [n for n in names if not len(samples.exists(n).limit(1))]
            if silent:
                raise ValueError(f"rater field(s) {silent} hold no mask on the {len(samples)} samples of the view: "
                                 "leave them out of the rater fields, or compute on the samples they labelled")
        return kind
    kind = next(iter(wrong.values()))
    # every declaration lives in the registry package, so it is loaded whenever a declaration exists; it is
    # looked up, not imported (the registry imports this module)
    registry = sys.modules.get("agreement.fo.methods")
    found = registry.declarations() if registry is not None else [decl]
    others = [d.operator for d in found if kind in accepted_types(d)]
    where = ", ".join(repr(n) for n in wrong)
    takes = ", ".join(t.__name__ for t in accepted_types(decl))
    raise ValueError(f"{decl.operator} does not apply to {kind.__name__} fields ({where}); it reads {takes}. "
                     + (f"For {kind.__name__} fields use {' or '.join(others)}" if others
                        else f"No operator reads {kind.__name__} fields"))


def collection_target(samples, via: str = "python") -> dict:
    """The target record of a run on ``samples`` given in Python: the ``"dataset"`` (the dataset, or a view
    of all its samples without stages), else a ``"view"``, with its number of samples and the dataset's."""
    dataset = samples._root_dataset
    n, total = samples.count(), dataset.count()
    whole = samples is dataset or (n == total and not samples.view()._serialize())
    return {"target": "dataset" if whole else "view", "n_samples": n, "dataset_samples": total, "via": via}


def python_function(decl: MethodDeclaration) -> Callable[..., dict]:
    """The method as a Python function ``(samples, key, **params) -> headline numbers``, with the declared
    signature and a docstring listing every parameter."""
    def compute(samples, key: str, overwrite: bool = False, progress=None, **kwargs) -> dict:
        return run_declared(decl, samples, key, overwrite=overwrite, progress=progress,
                            target=collection_target(samples), **kwargs)

    K = inspect.Parameter.KEYWORD_ONLY
    sig = [inspect.Parameter("samples", inspect.Parameter.POSITIONAL_OR_KEYWORD),
           inspect.Parameter("key", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str)]
    sig += [inspect.Parameter(f.name, K, default=f.default) for f in fields(RaterLayout)]
    sig += [inspect.Parameter(p.name, K, default=p.default, annotation=p.kind) for p in decl.method_params]
    sig += [inspect.Parameter("overwrite", K, default=False), inspect.Parameter("progress", K, default=None)]
    sig += [inspect.Parameter(f.name, K, default=f.default) for f in fields(Execution)]
    # inspect reads a function's __signature__, an attribute typeshed does not declare on functions
    compute.__signature__ = inspect.Signature(sig)  # type: ignore[attr-defined]
    compute.__name__ = compute.__qualname__ = decl.operator
    compute.__doc__ = (f"{decl.label}: {decl.description}.\n\nStores run ``key`` on ``samples`` (a dataset or view) "
                       f"and returns its headline numbers.\n\nMethod parameters:\n\n{parameter_table(decl)}\n\n"
                       "The rater layout (:class:`agreement.fo.runs.declaration.RaterLayout`) and the execution "
                       "(:class:`agreement.fo.runs.declaration.Execution`) are the shared ones.")
    return compute


def parameter_table(decl: MethodDeclaration) -> str:
    """The method's parameters as a Markdown table: name, type, default, range, what it does."""
    rows = ["| parameter | type | default | range | what it does |", "|---|---|---|---|---|"]
    labels = {q.name: q.label for q in decl.params}
    for p in decl.method_params:
        via = " and ".join(f"*{labels[n]}*" for n in p.form_via)
        where = "" if p.form else f" (in the App form: {via})" if via else " (Python only)"
        rows.append(f"| `{p.name}` | {p.kind.__name__} | `{p.default!r}` | {p.range_text()} | {p.help}{where} |")
    return "\n".join(rows)


def run_target(dataset_or_info, key: str | None = None) -> str:
    """Which samples a run was computed on, as the panel shows it: ``"current view (73 of 200 samples)"``,
    ``"whole dataset (200 samples)"``, ``"selected samples (5 of 200 samples)"``, ``"view (5 of 200 samples)"``
    (a view given in Python).

    Args:
        dataset_or_info: the run's info (:func:`agreement.fo.runs.store.get_agreement_run_info`), its ``params``, or
            the recorded target itself; or a dataset or view, with ``key``.
        key: the run, when a dataset is given.

    Returns:
        The sentence; ``"not recorded"`` for a run from before the target was recorded.
    """
    info = dataset_or_info
    if not isinstance(info, Mapping):
        from agreement.fo.runs.store import get_agreement_run_info

        if key is None:
            raise TypeError("run_target(dataset, key): give the run key with a dataset")
        info = get_agreement_run_info(dataset_or_info, key)
    params = info["params"] if isinstance(info.get("params"), Mapping) else info
    record = params["target"] if isinstance(params.get("target"), Mapping) else params
    if not isinstance(record, Mapping) or not isinstance(record.get("target"), str):
        return "not recorded"
    n, total = record.get("n_samples"), record.get("dataset_samples")
    if record["target"] == "dataset":
        return f"whole dataset ({n:,} samples)" if isinstance(n, int) else "whole dataset"
    if isinstance(n, int) and isinstance(total, int):
        return f"{record['target']} ({n:,} of {total:,} samples)"
    return record["target"]
