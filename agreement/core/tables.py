"""Class judgements in the shapes people hold them, turned into the ``(units × raters)`` codes of the class methods.

The class methods (:mod:`agreement.methods.classes`, :func:`agreement.methods.consensus.class_labels.class_consensus`)
compute on a matrix of class codes ``codes`` of shape ``(S, R)``: units (samples, items, tasks) as rows, raters
as columns, ``0 .. K-1`` or ``-1`` for missing. Users of other tools hold their judgements otherwise:

* **crowd-kit** users: a long ``pandas.DataFrame``, one row per judgement, with the columns ``task``, ``worker``
  and ``label`` (:func:`from_long_frame`; other column names through ``columns={"task": ..., "worker": ...,
  "label": ...}``);
* **krippendorff** users: ``reliability_data``, a ``(raters × units)`` array or list of lists, ``NaN`` or
  ``None`` for missing, numbers or strings as values (:func:`from_reliability_data`): the *transpose* of
  ``codes``.

Both become a :class:`ClassTable`: the codes plus the item ids, the worker ids and the class values, so that
results map back to names. Classes are the sorted distinct labels; numeric labels keep their values
(:attr:`ClassTable.values`), which the interval and ratio levels of Krippendorff's α use.

**The orientation rule** (:func:`class_table`). A bare integer matrix does not say which axis holds the raters.
``codes`` are ``(units × raters)``; a krippendorff user's matrix is ``(raters × units)`` and, with fewer raters
than units, *wider than tall*. So a matrix given as ``codes`` is refused when it

* is float with ``NaN`` (krippendorff's missing value: pass it as ``reliability_data=``), or
* has more columns than rows, at least :data:`AMBIGUOUS_MIN_COLUMNS` (10) columns **and** no missing value
  (``-1``): the shape of complete krippendorff data (a handful of raters × ten or more units).
  A wide matrix *with* ``-1`` uses this library's own missing marker, so it is read as ``codes``; a complete
  design of ten or more raters who all rated fewer units is rare and is confirmed in one keyword. Below ten
  columns the matrix is hand-sized (examples, tests, a pilot), read as ``codes``: a complete krippendorff
  matrix of fewer than ten units passed as ``codes`` is *not* caught, so pass such data as
  ``reliability_data=``.

The caller confirms a wide complete matrix with ``orientation="units_by_raters"`` (or passes
``reliability_data=`` when rows are raters). Nothing is ever transposed silently.

pandas is not a dependency of the library: a DataFrame is recognised by duck typing and pandas is imported only
inside the functions that take or return a DataFrame. This module does not import FiftyOne.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = [
    "AMBIGUOUS_MIN_COLUMNS",
    "ClassTable",
    "DEFAULT_COLUMNS",
    "ORIENTATIONS",
    "check_orientation",
    "class_table",
    "codes_of_labels",
    "consensus_frame",
    "from_long_frame",
    "from_reliability_data",
    "is_dataframe",
    "labelled",
    "to_frame",
]

#: crowd-kit's column names of a long judgement frame, by role.
DEFAULT_COLUMNS: Mapping[str, str] = {"task": "task", "worker": "worker", "label": "label"}
#: A complete bare matrix with more columns than rows is ambiguous from this many columns on (module docstring).
AMBIGUOUS_MIN_COLUMNS = 10
#: The values of ``orientation=``: only the confirmation that a bare matrix is ``(units × raters)``.
ORIENTATIONS = ("units_by_raters",)
_HOW = ("pass a crowd-kit style DataFrame (columns task, worker, label) as the first argument, "
        "a krippendorff (raters × units) matrix as reliability_data=..., "
        "or (units × raters) integer codes with -1 for missing")


@dataclass(frozen=True)
class ClassTable:
    """Class judgements as a ``(units × raters)`` code matrix with the names of its rows, columns and codes.

    Attributes:
        codes: ``(S, R)`` int64, ``codes[s, r]`` the class code ``0 .. K-1`` rater ``r`` gave unit ``s``,
            ``-1`` where it gave none.
        items: the ``S`` unit ids (a DataFrame's tasks, sorted; positions ``0 .. S-1`` otherwise).
        workers: the ``R`` rater ids (a DataFrame's workers, sorted; positions ``0 .. R-1`` otherwise).
        classes: the ``K`` class values, sorted; code ``k`` is ``classes[k]``.
        values: ``(K,)`` float, the numeric value of each class when every label is a number, else None.
        source: ``"codes"``, ``"dataframe"`` or ``"reliability_data"``: what the caller gave.
    """

    codes: np.ndarray
    items: tuple[Any, ...]
    workers: tuple[Any, ...]
    classes: tuple[Any, ...]
    values: np.ndarray | None
    source: str

    @property
    def n_classes(self) -> int:
        """``K``, the number of classes."""
        return len(self.classes)

    @property
    def named(self) -> bool:
        """Whether the caller gave a DataFrame, whose results come back as pandas objects indexed by its ids."""
        return self.source == "dataframe"


def is_dataframe(obj: object) -> bool:
    """Whether ``obj`` is a pandas DataFrame, by duck typing (pandas is not imported)."""
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns") and hasattr(obj, "to_numpy")


def _show(value: Any) -> str:
    """``repr`` of a cell for a message, numpy scalars as the Python values they hold (``0``, not
    ``np.int64(0)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _is_series(obj: object) -> bool:
    """Whether ``obj`` is a pandas Series, by duck typing."""
    return type(obj).__name__ == "Series" and hasattr(obj, "index") and hasattr(obj, "to_numpy")


def _encode(labels: np.ndarray, what: str) -> tuple[np.ndarray, tuple[Any, ...], np.ndarray | None]:
    """Codes ``0 .. K-1`` of the sorted distinct ``labels`` (1-D), the classes and their values."""
    numeric = ([True] * len(labels) if labels.dtype.kind in "iuf" else
               [isinstance(v, numbers.Number) and not isinstance(v, bool) for v in labels])
    if all(numeric):
        vals = labels.astype(np.float64)
        if not np.isfinite(vals).all():
            raise ValueError(f"{what}: label values must be finite numbers, got {vals[~np.isfinite(vals)][0]}")
        uniq, inv = np.unique(vals, return_inverse=True)
        as_int = bool(np.all(uniq == np.round(uniq)))
        classes = tuple(int(u) if as_int else float(u) for u in uniq)
        return inv.reshape(-1).astype(np.int64), classes, uniq.astype(np.float64)
    if any(numeric):
        first = labels[numeric.index(False)] if numeric[0] else labels[numeric.index(True)]
        raise ValueError(f"{what}: labels mix numbers and other values (e.g. {_show(labels[0])} and {_show(first)}); "
                         "make them all numbers or all strings, e.g. with .astype(str)")
    try:
        uniq_o, inv = np.unique(labels.astype(str), return_inverse=True)
    except TypeError as err:  # pragma: no cover (astype(str) accepts any object)
        raise ValueError(f"{what}: labels cannot be compared: {err}") from err
    strings = {str(v): v for v in labels}
    return inv.reshape(-1).astype(np.int64), tuple(strings[u] for u in uniq_o), None


def from_long_frame(frame: Any, *, columns: Mapping[str, str] | None = None) -> ClassTable:
    """A long judgement DataFrame (crowd-kit's format: one row per judgement) as a :class:`ClassTable`.

    Args:
        frame: a pandas DataFrame with a task (unit), a worker (rater) and a label column.
        columns: the column names by role, ``{"task": ..., "worker": ..., "label": ...}`` (default crowd-kit's:
            ``task``, ``worker``, ``label``; a partial mapping overrides only the roles it names).

    Returns:
        :class:`ClassTable` with items and workers sorted (in order of first appearance when they cannot be
        sorted) and classes the sorted distinct labels.

    Raises:
        ValueError: not a DataFrame, a column missing, no row, a missing task, worker or label, or several
            labels of one worker on one task (with how to keep one).
    """
    if not is_dataframe(frame):
        raise ValueError(f"expected a pandas DataFrame, got {type(frame).__name__}; {_HOW}")
    cols = _columns(columns)
    missing = [f"{role}={name!r}" for role, name in cols.items() if name not in frame.columns]
    if missing:
        raise ValueError(f"the DataFrame has no column for {', '.join(missing)} (its columns: "
                         f"{list(frame.columns)}); name yours with columns={{'task': ..., 'worker': ..., "
                         f"'label': ...}}")
    if len(frame) == 0:
        raise ValueError(f"the DataFrame has no rows: nothing to compute; {_HOW}")
    import pandas as pd  # the caller holds a DataFrame: pandas is installed

    task, worker, label = (frame[cols[k]] for k in ("task", "worker", "label"))
    for role, col in (("task", task), ("worker", worker), ("label", label)):
        bad = np.flatnonzero(col.isna().to_numpy())
        if len(bad):
            raise ValueError(f"column {cols[role]!r} ({role}) is missing on {len(bad):,} rows (first: row "
                             f"{_show(frame.index[bad[0]])}); drop them first, e.g. frame.dropna(subset=["
                             f"{cols[role]!r}])")
    dup = frame.duplicated(subset=[cols["task"], cols["worker"]], keep=False).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        n_pairs = int(frame[dup].drop_duplicates(subset=[cols["task"], cols["worker"]]).shape[0])
        raise ValueError(f"{n_pairs:,} (task, worker) pairs have several labels (first: task {_show(task.iloc[i])}, "
                         f"worker {_show(worker.iloc[i])}); agreement needs one label per worker and task: keep one, "
                         f"e.g. frame.drop_duplicates(subset=[{cols['task']!r}, {cols['worker']!r}], keep='last')")
    s, items = _factorize(pd, task)
    r, workers = _factorize(pd, worker)
    lab = label.to_numpy()
    c, classes, values = _encode(lab if lab.dtype.kind in "iuf" else lab.astype(object), f"column {cols['label']!r}")
    codes = np.full((len(items), len(workers)), -1, np.int64)
    codes[s, r] = c
    return ClassTable(codes, items, workers, classes, values, "dataframe")


def _columns(columns: Mapping[str, str] | None) -> dict[str, str]:
    """The column names by role, defaults filled in; a ValueError for an unknown role."""
    cols = dict(DEFAULT_COLUMNS)
    for role, name in (columns or {}).items():
        if role not in DEFAULT_COLUMNS:
            raise ValueError(f"columns: unknown role {role!r}; the roles are {sorted(DEFAULT_COLUMNS)}")
        cols[role] = name
    return cols


def _factorize(pd: Any, col: Any) -> tuple[np.ndarray, tuple[Any, ...]]:
    """Positions of each value among the sorted distinct values of a Series, and those values."""
    try:
        pos, uniq = pd.factorize(col, sort=True)
    except TypeError:  # values that do not sort (mixed types): order of first appearance
        pos, uniq = pd.factorize(col, sort=False)
    return np.asarray(pos, dtype=np.int64), tuple(uniq.tolist())


def _missing_mask(arr: np.ndarray) -> np.ndarray:
    """``NaN`` and ``None`` cells of an object or numeric array."""
    if arr.dtype.kind == "f":
        mask: np.ndarray = np.isnan(arr)
    elif arr.dtype.kind in "iubU":
        mask = np.zeros(arr.shape, dtype=bool)
    else:
        mask = np.frompyfunc(lambda v: v is None or (isinstance(v, float) and v != v), 1, 1)(arr).astype(bool)
    return mask


def from_reliability_data(reliability_data: Any) -> ClassTable:
    """Krippendorff's ``reliability_data`` (raters × units, ``NaN`` or ``None`` missing) as a :class:`ClassTable`.

    The orientation of the ``krippendorff`` package (``krippendorff.alpha(reliability_data=...)``): rows are
    raters (coders), columns units. Values are numbers or strings; numbers keep their values for the interval
    and ratio levels.

    Args:
        reliability_data: a ``(R, S)`` array, or list of ``R`` lists of ``S`` values.

    Returns:
        :class:`ClassTable` with ``codes`` its transpose ``(S, R)``, items ``0 .. S-1`` and workers ``0 .. R-1``.

    Raises:
        ValueError: not two-dimensional (or ragged), empty, no value at all, infinite values, or numbers mixed
            with strings.
    """
    if is_dataframe(reliability_data):
        raise ValueError("reliability_data is a DataFrame: pass a long judgement DataFrame (task, worker, label) "
                         "as the first argument instead, or reliability_data=frame.to_numpy() for a (raters × "
                         "units) table")
    try:
        arr = reliability_data if isinstance(reliability_data, np.ndarray) else np.array(reliability_data,
                                                                                          dtype=object)
    except ValueError as err:  # numpy refuses ragged lists
        raise ValueError(f"reliability_data must be a (raters × units) matrix; its rows differ in length ({err})"
                         ) from err
    if arr.ndim == 1 and arr.dtype.kind == "O" and any(isinstance(v, (list, tuple, np.ndarray)) for v in arr):
        lengths = [len(v) if isinstance(v, (list, tuple, np.ndarray)) else 1 for v in arr]
        raise ValueError(f"reliability_data must be a (raters × units) matrix; its rows differ in length "
                         f"({lengths}): give every rater one cell per unit, NaN or None where it gave none")
    if arr.ndim != 2:
        raise ValueError(f"reliability_data must be a 2-D (raters × units) matrix, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"reliability_data is empty (shape {arr.shape}): nothing to compute")
    if arr.dtype.kind not in "fiubOU":
        raise ValueError(f"reliability_data must hold numbers or strings, got dtype {arr.dtype}")
    missing = _missing_mask(arr)
    if missing.all():
        raise ValueError("reliability_data holds no value (every cell is NaN or None): nothing to compute")
    r, s = np.nonzero(~missing)
    cells = arr[r, s]
    c, classes, values = _encode(cells if cells.dtype.kind in "iuf" else cells.astype(object), "reliability_data")
    R, S = arr.shape
    codes = np.full((S, R), -1, np.int64)
    codes[s, r] = c
    return ClassTable(codes, tuple(range(S)), tuple(range(R)), classes, values, "reliability_data")


def _bare_codes(codes: Any, orientation: str | None) -> ClassTable:
    """A bare matrix given as ``codes``, checked against the orientation rule (module docstring)."""
    arr = np.asarray(codes)
    if arr.ndim == 2 and arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"codes hold NaN: a (raters × units) krippendorff matrix? Pass it as "
                         f"reliability_data=... (rows raters, NaN missing); codes are (units × raters) integers "
                         f"with -1 for missing (shape {arr.shape})")
    if arr.ndim == 2 and arr.dtype.kind == "O":
        raise ValueError("codes hold Python objects (None or strings?): pass a (raters × units) matrix as "
                         "reliability_data=..., or a long DataFrame; codes are integers with -1 for missing")
    if orientation is not None and orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS} (or None), got {orientation!r}; for a "
                         f"(raters × units) matrix pass reliability_data=... instead")
    S, R = arr.shape if arr.ndim == 2 else (0, 0)
    return ClassTable(arr, tuple(range(S)), tuple(range(R)), (), None, "codes")


def check_orientation(codes: np.ndarray, orientation: str | None) -> None:
    """Refuses a bare ``(S, R)`` code matrix whose orientation is ambiguous (the rule of the module docstring).

    Called after the codes themselves are checked, so that a wrong code or level is reported first.

    Args:
        codes: ``(S, R)`` integer class codes, ``-1`` missing.
        orientation: None, or ``"units_by_raters"`` (the caller confirms the orientation).

    Raises:
        ValueError: more columns than rows, at least ``AMBIGUOUS_MIN_COLUMNS`` of them and no ``-1``, without
            ``orientation="units_by_raters"``.
    """
    arr = np.asarray(codes)
    if (orientation is not None or arr.ndim != 2 or arr.shape[1] <= arr.shape[0]
            or arr.shape[1] < AMBIGUOUS_MIN_COLUMNS or (arr == -1).any()):
        return
    S, R = arr.shape
    raise ValueError(f"ambiguous orientation: codes of shape {arr.shape} have more columns than rows and no "
                     f"missing value (-1), the shape of a complete krippendorff (raters × units) matrix. "
                     f"If rows are raters, pass reliability_data=... (or codes.T); if rows really are "
                     f"{S} units rated by {R} raters, pass orientation='units_by_raters'")


def class_table(codes: Any = None, /, *, reliability_data: Any = None, columns: Mapping[str, str] | None = None,
                orientation: str | None = None) -> ClassTable:
    """The one front door of the class methods: codes, a long DataFrame or krippendorff's reliability data.

    Exactly one of ``codes`` (a ``(units × raters)`` integer matrix, ``-1`` missing, or a long DataFrame) and
    ``reliability_data`` (``(raters × units)``, ``NaN``/``None`` missing). A bare matrix is refused here
    when it holds NaN or Python objects; its ``classes`` are left empty (the caller's ``n_classes`` decides
    ``K``), and the caller checks its codes, then :func:`check_orientation`.

    Args:
        codes: ``(S, R)`` class codes, or a pandas DataFrame in long format.
        reliability_data: krippendorff's ``(R, S)`` matrix (:func:`from_reliability_data`).
        columns: a DataFrame's column names by role (:func:`from_long_frame`).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (module docstring).

    Returns:
        :class:`ClassTable`.

    Raises:
        ValueError: both or neither input, ``columns`` without a DataFrame, NaN or object codes, an unknown
            ``orientation``, or any error of :func:`from_long_frame` and :func:`from_reliability_data`.
    """
    if codes is not None and reliability_data is not None:
        raise ValueError("pass either codes (units × raters, or a long DataFrame) or reliability_data= (raters × "
                         "units, krippendorff's orientation), not both")
    if codes is None and reliability_data is None:
        raise ValueError(f"no judgements given: {_HOW}")
    if reliability_data is not None:
        if columns is not None or orientation is not None:
            raise ValueError("columns= and orientation= do not apply to reliability_data (always raters × units)")
        return from_reliability_data(reliability_data)
    if isinstance(codes, ClassTable):
        return codes
    if is_dataframe(codes):
        if orientation is not None:
            raise ValueError("orientation= does not apply to a long DataFrame (one row per judgement)")
        return from_long_frame(codes, columns=columns)
    if columns is not None:
        raise ValueError(f"columns= names the columns of a long DataFrame, but codes is a "
                         f"{type(codes).__name__}; {_HOW}")
    return _bare_codes(codes, orientation)


def to_frame(data: Mapping[str, Any], *, index: Sequence[Any] | None = None, index_name: str | None = None) -> Any:
    """A pandas DataFrame of ``data`` (column name → values) with the given index (pandas imported here).

    Args:
        data: the columns, in order.
        index: the row labels (default ``0 .. n-1``).
        index_name: the name of the index.

    Returns:
        ``pandas.DataFrame``.

    Raises:
        ImportError: pandas is not installed (it is not a dependency of the library).
    """
    try:
        import pandas as pd
    except ImportError as err:  # pragma: no cover (pandas is in every environment that tests this)
        raise ImportError("to_pandas() needs pandas, which the library does not install: pip install pandas"
                          ) from err
    frame = pd.DataFrame(dict(data), index=None if index is None else list(index))
    if index_name is not None:
        frame.index.name = index_name
    return frame


def labelled(values: np.ndarray, table: ClassTable, *, axis: str, name: str) -> Any:
    """``values`` as a pandas Series indexed by the table's ids when the caller gave a DataFrame, else as is.

    Args:
        values: ``(S,)`` per unit (``axis="items"``) or ``(R,)`` per rater (``axis="workers"``).
        table: the input's :class:`ClassTable`.
        axis: ``"items"`` or ``"workers"``.
        name: the Series' name.

    Returns:
        ``values`` unchanged, or a ``pandas.Series`` indexed by task or worker.
    """
    if not table.named:
        return values
    ids = table.items if axis == "items" else table.workers
    frame = to_frame({name: values}, index=ids, index_name="task" if axis == "items" else "worker")
    return frame[name]


def codes_of_labels(labels: Any, table: ClassTable) -> np.ndarray:
    """``(S,)`` codes of per-unit class labels: a pandas Series indexed by task holding class values (aligned to
    ``table.items``; a task it lacks is ``-1``), or an array of codes already in ``table.items`` order.

    Args:
        labels: the per-unit classes.
        table: the input's :class:`ClassTable`.

    Returns:
        ``(S,)`` int64 codes, ``-1`` where there is no label.

    Raises:
        ValueError: a label that is not one of the table's classes.
    """
    if not _is_series(labels):
        return np.asarray(labels, dtype=np.int64).reshape(-1)
    lookup = {c: k for k, c in enumerate(table.classes)}
    aligned = labels.reindex(list(table.items))
    out = np.full(len(table.items), -1, np.int64)
    for i, v in enumerate(aligned.tolist()):
        if v is None or (isinstance(v, float) and v != v):
            continue
        if v not in lookup:
            raise ValueError(f"task {table.items[i]!r}: label {v!r} is not one of the classes {table.classes}")
        out[i] = lookup[v]
    return out


def consensus_frame(result: Any, *, per: str = "sample") -> Any:
    """A class consensus result as a pandas DataFrame (``ClassConsensus.to_pandas``; pandas imported here).

    Args:
        result: a :class:`agreement.methods.consensus.class_labels.ClassConsensus` (its ``labels``,
            ``confidence``, ``posterior``, ``rater_competence`` and optional ``items``, ``raters``, ``classes``).
        per: ``"sample"``: per task, ``label`` (the class value, None without one) and ``confidence``;
            ``"rater"``: per worker, ``competence``; ``"posterior"``: per task, one column per class (as
            crowd-kit's ``probas_``).

    Returns:
        ``pandas.DataFrame`` indexed by task or worker (positions when the input was bare codes).

    Raises:
        ValueError: an unknown ``per``.
    """
    K = result.posterior.shape[1]
    classes = result.classes if result.classes is not None else tuple(range(K))
    items = result.items if result.items is not None else range(len(result.labels))
    if per == "sample":
        labels = [classes[k] if k >= 0 else None for k in result.labels.tolist()]
        return to_frame({"label": labels, "confidence": result.confidence}, index=items, index_name="task")
    if per == "rater":
        raters = result.raters if result.raters is not None else range(len(result.rater_competence))
        return to_frame({"competence": result.rater_competence}, index=raters, index_name="worker")
    if per == "posterior":
        return to_frame({c: result.posterior[:, k] for k, c in enumerate(classes)}, index=items, index_name="task")
    raise ValueError(f"per must be 'sample', 'rater' or 'posterior', got {per!r}")
