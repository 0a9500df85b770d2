"""The labelling backend of a round: FiftyOne's annotation config, the reachability check, and Label Studio's
task -> sample check.

The server's URL and API key come only from FiftyOne's annotation config
(``fo.annotation_config.backends["labelstudio"]["url"]`` / ``["api_key"]``, which the environment variables
``FIFTYONE_LABELSTUDIO_URL`` / ``FIFTYONE_LABELSTUDIO_API_KEY`` or ``~/.fiftyone/annotation_config.json``
set). The plugin never records them: FiftyOne's Label Studio backend writes the URL into its annotation run's
config, and :func:`forget_url` clears it there after the upload (FiftyOne reads it from the annotation config
again when the labels are loaded).

FiftyOne maps Label Studio's tasks to samples by upload order (the project's last ``len(tasks)`` task ids, in
order). :func:`check_label_studio_tasks` checks that mapping task by task: the file each task holds must be the
sample's (same file name, else the same bytes).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from typing import Any, Mapping
from urllib.parse import parse_qs, urlparse

import fiftyone as fo

__all__ = ["LabellingBackendError", "TaskMismatchError", "CONFIG_HELP", "check_backend", "forget_url",
           "check_label_studio_tasks"]

CONFIG_HELP = ("FiftyOne's annotation config: set fo.annotation_config.backends['labelstudio']['url'] and "
               "['api_key'] (or the environment variables FIFTYONE_LABELSTUDIO_URL and "
               "FIFTYONE_LABELSTUDIO_API_KEY, or ~/.fiftyone/annotation_config.json) before starting FiftyOne; "
               "see FiftyOne's 'Label Studio integration' docs")


class LabellingBackendError(ValueError):
    """The labelling backend is not configured or cannot be reached; the message names FiftyOne's annotation
    config."""


class TaskMismatchError(ValueError):
    """Labels came back for other samples than the round's (a task mapped to the wrong sample)."""


def _config_help(backend: str) -> str:
    if backend == "labelstudio":
        return CONFIG_HELP
    return (f"FiftyOne's annotation config: fo.annotation_config.backends[{backend!r}] (its URL and credentials, "
            "from the FIFTYONE_<BACKEND>_... environment variables or ~/.fiftyone/annotation_config.json)")


def check_backend(backend: str) -> Any:
    """Checks that FiftyOne's annotation config knows ``backend`` with a URL and credentials, and that its
    server answers; returns FiftyOne's API object (connected).

    Args:
        backend: a FiftyOne annotation backend name (``"labelstudio"``, ``"cvat"``, ...).

    Raises:
        LabellingBackendError: not configured (naming the config to set) or not reachable (naming the URL).
    """
    import fiftyone.utils.annotations as foua

    backends = fo.annotation_config.backends
    if not isinstance(backend, str) or backend not in backends:
        raise LabellingBackendError(f"labelling backend {backend!r} is not in FiftyOne's annotation config "
                                    f"(backends: {sorted(backends)}); add it to {_config_help(str(backend))}")
    params = backends[backend]
    missing = [name for name in ("url", "api_key") if name in _expected_params(backend) and not params.get(name)]
    if missing:
        raise LabellingBackendError(f"labelling backend {backend!r} has no {' or '.join(missing)} in "
                                    f"{_config_help(backend)}")
    try:
        return foua.connect_to_api(backend)
    except Exception as error:  # noqa: BLE001 - any failure to connect is reported as one refusal
        raise LabellingBackendError(
            f"labelling backend {backend!r} at {params.get('url')!r} cannot be reached "
            f"({type(error).__name__}: {error}); start the server or correct {_config_help(backend)}") from None


def _expected_params(backend: str) -> tuple[str, ...]:
    """The config entries a backend cannot connect without (asked interactively by FiftyOne otherwise)."""
    return ("url", "api_key") if backend == "labelstudio" else ("url",)


def forget_url(samples, anno_key: str) -> None:
    """Clears the server URL FiftyOne's backend recorded in annotation run ``anno_key``'s config (it is read
    from the annotation config again at load time)."""
    import fiftyone.core.annotation as foan

    dataset = samples._root_dataset
    config = dataset.get_annotation_info(anno_key).config
    if getattr(config, "url", None) is not None:
        config.url = None
        foan.AnnotationMethod.update_run_config(dataset, anno_key, config)


_UPLOAD_PREFIX = re.compile(r"^[0-9a-f]{8}-")


def _valid_name(name: str) -> str:
    """A file name as Label Studio stores an upload (Django's ``get_valid_filename``)."""
    return re.sub(r"(?u)[^-\w.]", "", str(name).strip().replace(" ", "_"))


def _task_file(task: Mapping[str, Any], media_key: str) -> tuple[str, str]:
    """The file a task holds: ``(url path, file name)`` (an upload ``/data/upload/<project>/<uuid>-<name>``
    or a local file ``/data/local-files?d=<path>``)."""
    ref = str((task.get("data") or {}).get(media_key) or "")
    parsed = urlparse(ref)
    if "local-files" in parsed.path and "d" in parse_qs(parsed.query):
        return ref, os.path.basename(parse_qs(parsed.query)["d"][0])
    return ref, _UPLOAD_PREFIX.sub("", os.path.basename(parsed.path))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_label_studio_tasks(results, filepaths: Mapping[str, str], round_ids: list[str]) -> int:
    """Checks FiftyOne's task -> sample mapping of a Label Studio round before its labels are loaded.

    Every task of the round (``results.uploaded_tasks``: task id -> sample id) must map to a sample of the
    round, each sample once, and hold that sample's file: the same file name (as Label Studio stores uploads),
    or, where names differ or repeat within the round, the same bytes (downloaded from the server).

    Args:
        results: the round's ``LabelStudioAnnotationResults`` (``dataset.load_annotation_results``).
        filepaths: sample id -> the sample's media path.
        round_ids: the sample ids the round sent (its history).

    Returns:
        The number of tasks checked.

    Raises:
        TaskMismatchError: naming the task, the sample FiftyOne maps it to and the file the task holds.
    """
    tasks = {int(t): str(s) for t, s in dict(results.uploaded_tasks).items()}
    mapped, wanted = sorted(tasks.values()), sorted(map(str, round_ids))
    if mapped != wanted:
        extra, missing = sorted(set(mapped) - set(wanted)), sorted(set(wanted) - set(mapped))
        raise TaskMismatchError(f"the round's tasks map to other samples than it sent: {len(extra)} not sent "
                                f"({extra[:5]}), {len(missing)} sent and not mapped ({missing[:5]}); "
                                "nothing was loaded")
    client = results.connect_to_api()._client
    # one paged request for the round's tasks (as FiftyOne's backend reads them), not one per task
    fetched = {int(t["id"]): t for t in client.get_project(results.project_id).get_tasks(selected_ids=sorted(tasks))}
    gone = sorted(set(tasks) - set(fetched))
    if gone:
        raise TaskMismatchError(f"Label Studio project {results.project_id} lacks {len(gone)} of the round's tasks "
                                f"(e.g. {gone[:5]}): deleted there? nothing was loaded")
    repeated = {n for n, c in Counter(_valid_name(os.path.basename(filepaths[s])) for s in mapped).items() if c > 1}
    for task_id, sample_id in sorted(tasks.items()):
        ref, name = _task_file(fetched[task_id], "image")
        path = filepaths[sample_id]
        expected = _valid_name(os.path.basename(path))
        if name == expected and expected not in repeated:
            continue
        with open(path, "rb") as f:
            same = _digest(f.read()) == _digest(client.make_request("GET", ref).content)
        if not same:
            raise TaskMismatchError(
                f"Label Studio task {task_id} holds {name!r} but FiftyOne maps it to sample {sample_id} "
                f"({path!r}): the labels came back for other samples (FiftyOne maps tasks by upload order); "
                "nothing was loaded")
    return len(tasks)
