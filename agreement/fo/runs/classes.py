"""Agreement runs as FiftyOne run classes: the config, and the run with its ``cleanup`` and ``rename`` hooks.

FiftyOne stores each run's config with its class name and, to delete or
rename a run, builds the run class from it and calls its hooks
(:meth:`fiftyone.core.runs.BaseRun.cleanup`, :meth:`~fiftyone.core.runs.BaseRun.rename`).
Registering every agreement run as an :class:`AgreementRunConfig` therefore
makes FiftyOne's own commands do what the plugin's do:

* ``dataset.delete_run(key)`` removes exactly the sample fields and label
  attributes the run recorded (:func:`remove_run_fields`), then the run;
* ``dataset.rename_run(key, new_key)`` renames them, ``{key}_x`` ->
  ``{new_key}_x`` (:func:`rename_run_fields`), then the run.

The config records what the run owns: ``sample_fields`` (``{key}_<suffix>``)
and ``label_attrs`` (``[label field, {key}_<suffix>]`` pairs), with the
method marker (``method``: ``iaa.<name>``), ``plugin="@iaa/agreement"``,
``status`` (``incomplete`` until the run is registered complete), the method
parameters and the input layout.

Runs written by releases before these classes carry a plain
:class:`fiftyone.core.runs.RunConfig` with the same attributes; they are
upgraded in place the first time the plugin touches them
(:func:`upgrade_legacy_run`).

FiftyOne imports this module by name when it loads a run's config
(``agreement.fo.runs.classes.AgreementRunConfig``). In a process that has
not loaded the plugin, that needs the core library installed: the install's
third step, ``python -m pip install <plugin folder>`` (the ``iaa-agreement``
package; see the README's "Install" section). Without it FiftyOne falls back
to its base classes (with a warning) and its commands cannot clean up; the
plugin warns about that when it loads.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import fiftyone.core.runs as fors

from agreement.fo.runs.errors import RunError
from agreement.fo.runs.locking import schema_lock
from agreement.fo.runs.results import retype_results
from agreement.fo.storage.writing import unset_run_values

__all__ = [
    "method_marker",
    "PLUGIN_NAME",
    "RUN_FORMAT_VERSION",
    "RunError",
    "AgreementRunConfig",
    "AgreementRun",
    "is_agreement_config",
    "is_legacy_config",
    "upgrade_legacy_run",
    "label_path",
    "remove_run_fields",
    "check_rename",
    "rename_run_fields",
    "first_existing_label_attr",
    "declared_label_attr",
    "stored_label_attr",
]

PLUGIN_NAME = "@iaa/agreement"
#: 1: plain RunConfig (legacy); 2: :class:`AgreementRunConfig` and typed results
RUN_FORMAT_VERSION = 2


class AgreementRunConfig(fors.RunConfig):
    """The config of an agreement run: method marker, parameters, input layout and the fields it owns.

    Args:
        **kwargs: ``method`` (``iaa.<name>``), ``plugin``, ``format_version``,
            ``status``, ``params``, ``input``, ``sample_fields``, ``label_attrs``
            (JSON-serialisable; stored as they are).
    """

    @property
    def owned_sample_fields(self) -> list[str]:
        """The per-sample fields the run owns."""
        return list(getattr(self, "sample_fields", None) or [])

    @property
    def owned_frame_fields(self) -> list[str]:
        """The frame fields the run owns (a run on video frame labels)."""
        return list(getattr(self, "frame_fields", None) or [])

    @property
    def owned_label_attrs(self) -> list[list[str]]:
        """The per-label attributes the run owns, as ``[label field, attribute]``."""
        return [list(x) for x in (getattr(self, "label_attrs", None) or [])]


class AgreementRun(fors.Run):
    """An agreement run: what FiftyOne calls to list, clean up and rename its fields.

    Args:
        config: an :class:`AgreementRunConfig`.
    """

    def get_fields(self, samples, key: str) -> list[str]:
        """The sample fields and label attribute paths the run owns."""
        dataset = samples._root_dataset
        schema = dataset.get_field_schema()
        attrs = [label_path(dataset, lf, attr) for lf, attr in self.config.owned_label_attrs if lf in schema]
        return self.config.owned_sample_fields + attrs + [f"frames.{f}" for f in self.config.owned_frame_fields]

    def cleanup(self, samples, key: str) -> None:
        """Removes every value and declaration of the run's fields and label attributes (not the run)."""
        remove_run_fields(samples._root_dataset, self.config)

    def rename(self, samples, key: str, new_key: str) -> None:
        """Renames the run's fields and attributes ``{key}_x`` -> ``{new_key}_x`` and records them."""
        rename_run_fields(samples._root_dataset, key, new_key)


def is_agreement_config(config: Any) -> bool:
    """Whether a run config is this plugin's (current or legacy format)."""
    return getattr(config, "plugin", None) == PLUGIN_NAME


def is_legacy_config(config: Any) -> bool:
    """Whether an agreement run's config predates :class:`AgreementRunConfig` (a plain ``RunConfig``)."""
    return is_agreement_config(config) and not isinstance(config, AgreementRunConfig)


def upgrade_legacy_run(dataset, key: str) -> bool:
    """Rewrites a legacy agreement run's config as an :class:`AgreementRunConfig` (same attributes), so that
    FiftyOne's ``delete_run``/``rename_run`` clean up after it; its results are re-saved typed
    (:mod:`agreement.fo.runs.results`). Returns whether it upgraded anything."""
    config = dataset.get_run_info(key).config
    if not is_legacy_config(config):
        return False
    attrs = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    new = AgreementRunConfig(method=config.method, **attrs)
    with schema_lock(dataset):
        dataset.update_run_config(key, new)
    retype_results(dataset, key)
    return True


def label_path(dataset, label_field: str, attr: str) -> str:
    """The schema path of attribute ``attr`` of the labels of ``label_field`` (``<field>.<list>.<attr>``)."""
    from agreement.fo.storage.label_schema import label_list_path

    return f"{label_list_path(label_field, dataset.get_field(label_field).document_type)}.{attr}"


def remove_run_fields(dataset, config: AgreementRunConfig) -> dict:
    """Removes the values and declarations of the sample fields and label attributes ``config`` records.

    Values are removed from the documents directly (``$unset``), so that a
    value whose declaration was lost (a process killed, a concurrent writer)
    goes too; then the declarations. Fields and attributes already gone are
    skipped; nothing else is touched.

    Returns:
        ``{"deleted_sample_fields": [...], "deleted_label_attrs": [...]}``
    """
    from agreement.fo.frames.fields import remove_frame_run_fields

    sample_fields = list(getattr(config, "sample_fields", None) or [])
    label_attrs = [list(x) for x in (getattr(config, "label_attrs", None) or [])]
    frame_fields = remove_frame_run_fields(dataset, config)
    unset_run_values(dataset, sample_fields, label_attrs)
    deleted_attrs = []
    with schema_lock(dataset):
        schema = dataset.get_field_schema()
        present = [f for f in sample_fields if f in schema]
        if present:
            dataset.delete_sample_fields(present)
        declared = []
        for lf, attr in label_attrs:
            if lf in schema:
                path = label_path(dataset, lf, attr)
                if dataset.get_field(path) is not None:
                    declared.append(path)
                deleted_attrs.append([lf, attr])
        if declared:  # the values are gone already: drop the declarations without another pass over the samples
            dataset.remove_dynamic_sample_fields(declared)
    deleted_attrs += [[lf, attr] for lf, attr in label_attrs if lf.startswith("frames.")]
    out = {"deleted_sample_fields": sample_fields, "deleted_label_attrs": deleted_attrs}
    if frame_fields:
        out["deleted_frame_fields"] = frame_fields
    return out


def _renamed(name: str, key: str, new_key: str) -> str:
    if not name.startswith(key + "_"):
        raise RunError(f"field {name!r} of run {key!r} is not named {key}_...: it cannot be renamed with the run")
    return new_key + name[len(key):]


def check_rename(dataset, key: str, new_key: str) -> tuple[dict, list]:
    """The renames of run ``key``'s fields and attributes to ``new_key``, refused if a target exists.

    Returns:
        ``({old field: new field}, [(label field, old attr, new attr), ...])``

    Raises:
        RunError: if a field or label attribute named for ``new_key`` already exists.
    """
    config = dataset.get_run_info(key).config
    schema = dataset.get_field_schema()
    renames = {}
    for f in getattr(config, "sample_fields", None) or []:
        new = _renamed(f, key, new_key)
        if new in schema:
            raise RunError(f"cannot rename run {key!r} to {new_key!r}: field {new!r} already exists")
        renames[f] = new
    attr_renames = [(lf, attr, _renamed(attr, key, new_key))
                    for lf, attr in getattr(config, "label_attrs", None) or []]
    clash = first_existing_label_attr(dataset, [(lf, new) for lf, _, new in attr_renames if lf in schema])
    if clash is not None:
        raise RunError(f"cannot rename run {key!r} to {new_key!r}: attribute {clash[1]!r} already exists "
                       f"on {clash[0]!r}")
    return renames, attr_renames


def _rename_inner_attrs(dataset, fields: list[str], key: str, new_key: str) -> None:
    """Inside label fields the run owns whole (e.g. ``{key}_consensus``), renames the labels' attributes
    named for the run (``{key}_support`` -> ``{new_key}_support``)."""
    flat = dataset.get_field_schema(flat=True)
    for field in fields:
        for path in sorted(p for p in flat if p.startswith(field + ".")):
            head, leaf = path.rsplit(".", 1)
            if leaf.startswith(key + "_"):
                dataset.rename_sample_field(path, f"{head}.{_renamed(leaf, key, new_key)}")


def rename_run_fields(dataset, key: str, new_key: str) -> dict:
    """Renames run ``key``'s sample fields and label attributes for ``new_key`` and records them in its
    config (the run itself keeps its key: FiftyOne's ``rename_run`` moves it after this hook).

    Returns:
        ``{"renamed_sample_fields": {old: new}, "renamed_label_attrs": [[field, old, new], ...]}``
    """
    from agreement.fo.frames.fields import check_frame_rename, rename_frame_run_fields

    renames, attr_renames = check_rename(dataset, key, new_key)
    check_frame_rename(dataset, dataset.get_run_info(key).config, key, new_key)
    with schema_lock(dataset):
        schema = dataset.get_field_schema()
        present = {f: n for f, n in renames.items() if f in schema}
        if present:
            dataset.rename_sample_fields(present)
            _rename_inner_attrs(dataset, list(present.values()), key, new_key)
        for lf, attr, new in attr_renames:
            if lf in schema and dataset.get_field(label_path(dataset, lf, attr)) is not None:
                dataset.rename_sample_field(label_path(dataset, lf, attr), label_path(dataset, lf, new))
        config = dataset.get_run_info(key).config
        frame_renames = rename_frame_run_fields(dataset, config, key, new_key)
        config.sample_fields = [renames.get(f, f) for f in getattr(config, "sample_fields", None) or []]
        config.label_attrs = [[lf, new] for lf, _, new in attr_renames]
        dataset.update_run_config(key, config)
    out = {"renamed_sample_fields": renames, "renamed_label_attrs": [[lf, a, n] for lf, a, n in attr_renames]}
    if frame_renames:
        out["renamed_frame_fields"] = frame_renames
    return out


def first_existing_label_attr(dataset, label_attrs: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first ``(label_field, attr)`` declared in the schema or stored on some label, else ``None``
    (declarations first, then one query over the documents that stops at the first hit)."""
    declared, paths = declared_label_attr(dataset, label_attrs)
    return declared if declared is not None else stored_label_attr(dataset._sample_collection, paths)


def declared_label_attr(dataset, label_attrs: Iterable[tuple[str, str]]) -> tuple[tuple | None, dict]:
    """The first ``(label_field, attr)`` the schema declares (else ``None``), and the document paths of
    the undeclared ones (``<field>.<list>.<attr>`` -> ``(label_field, attr)``)."""
    schema = dataset.get_field_schema()
    paths = {}
    for lf, attr in label_attrs:
        if lf not in schema:
            continue
        path = label_path(dataset, lf, attr)
        if dataset.get_field(path) is not None:
            return (lf, attr), {}
        paths[path] = (lf, attr)
    return None, paths


def stored_label_attr(collection, paths: Mapping[str, tuple]) -> tuple[str, str] | None:
    """The first of ``paths`` that some label of ``collection`` stores (one query, stopping at the first
    hit), else ``None``. Touches only the collection, so it may run in a thread."""
    if not paths:
        return None
    doc = collection.find_one(_any_label_stores(paths), list(paths))
    if doc is None:
        return None
    return next((found for path, found in paths.items() if _stored_at(doc, path.split("."))),
                next(iter(paths.values())))


def _any_label_stores(paths: Iterable[str]) -> dict:
    """The query of a document where some label stores one of ``paths`` (``<field>.<list>.<attr>``).

    One ``$elemMatch`` per label list, its attributes in one ``$or``: MongoDB
    then visits each label once, not once per attribute (half the time of
    an ``$exists`` per path for OT's seven attributes on the crowd benchmark).
    """
    by_list: dict[str, list[str]] = {}
    for path in paths:
        list_path, attr = path.rsplit(".", 1)
        by_list.setdefault(list_path, []).append(attr)
    clauses = [{lp: {"$elemMatch": {"$or": [{a: {"$exists": True}} for a in attrs]}}}
               for lp, attrs in by_list.items()]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def _stored_at(value: Any, parts: list[str]) -> bool:
    """Whether a (projected) document holds a value at the dotted path ``parts``, through lists."""
    if not parts:
        return True
    if isinstance(value, list):
        return any(_stored_at(v, parts) for v in value)
    return isinstance(value, dict) and parts[0] in value and _stored_at(value[parts[0]], parts[1:])


def method_marker(name: str) -> str:
    """The method marker of method ``name`` (the plugin's marker prefix, then the name; a marker is returned as
    it is).

    Args:
        name: a method's short name or its marker.

    Returns:
        The marker.
    """
    from agreement.fo.methods.markers import MARKER_PREFIX  # the registry package loads the declarations

    return name if name.startswith(MARKER_PREFIX) else MARKER_PREFIX + name
