"""Agreement on video tracks on a FiftyOne video dataset: compute, write back, register.

The raters' labels are frame fields (``frames.<rater>``, ``Detections``, the
track id in each box's ``index``; or one frame field whose boxes carry the
rater in an attribute). Per video, the raters' tracks are put in
correspondence by spatio-temporal IoU (:func:`agreement.methods.tracks.track_agreement`:
Hungarian matching per rater pair at ``tau``, units of at most one track per
rater); pooled over every video, α of track presence, track class and track
localisation (``δ = 1 − STIoU``; presence and localisation against chance pairs
of videos of comparable length, ``metadata.total_frame_count``, read here and
passed to the kernel: :mod:`agreement.methods.tracks.chance`); per rater pair, HOTA
(DetA, AssA, LocA), IDF1, identity switches and fragmentations, pooled over
the videos both raters labelled.

Written to the dataset (``key`` is the run key), through the frame run of
:mod:`agreement.fo.frames.runs`:

==================================  ===============================================
``frames.{key}_tracks_agree``       per frame: share of its boxes whose track unit
                                    holds a track of every rater of the video
``frames.<rater>...{key}_track_unit``  per box: its track unit in the video
``frames.<rater>...{key}_track_stiou`` per box: the least STIoU within its unit
``{key}_hota``, ``{key}_idf1``      per video: mean over its rater pairs
``{key}_id_switches``,              per video: summed over its rater pairs (both
``{key}_fragmentations``            directions)
``{key}_frames_*``                  per video: mean / worst / share of frames below
                                    0.5 of ``tracks_agree``
``frames.{key}_consensus``          with ``consensus=True``: the consensus tracks
                                    (``index`` = unit, ``confidence``, ``{key}_n_raters``)
==================================  ===============================================

Reference: Luiten et al., "HOTA: A Higher Order Metric for Evaluating
Multi-Object Tracking", IJCV 2021; Ristani et al., "Performance Measures and a
Data Set for Multi-Target, Multi-Camera Tracking" (IDF1), ECCV 2016;
Bernardin & Stiefelhagen, "Evaluating Multiple Object Tracking Performance:
the CLEAR MOT Metrics", 2008.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import fiftyone as fo
import fiftyone.core.labels as fol

from agreement.fo.frames.units import UNITS_INFO_KEY, is_frame_units
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodOutput, MethodSpec
from agreement.methods.tracks import TrackAgreementResult, Tracks, pool_track_agreement, track_agreement
from agreement.methods.tracks.hota import LOCA_UNMATCHED

__all__ = ["compute_track_agreement", "METHOD", "SPEC", "DECLARATION"]

METHOD = "iaa.tracks"


def _extra(samples, read, params: dict) -> dict:
    """The video and frame number of every frame unit, and the track id of every box (by label id)."""
    if not is_frame_units(samples):
        raise ValueError("compute_track_agreement reads tracks on video frames: give frame fields "
                         "(fields=['frames.r1', 'frames.r2', ...] or field='frames.<field>' with rater_attr) "
                         "of a video dataset, the track id in each box's index")
    # one raw read of the units (their video, frame number and path) and of every box's track id, as stored:
    # per field, the boxes' ids as strings (made by the database) and their track ids, two flat lists
    fields = list(read.label_fields)
    project: dict = {"_sample_id": 1, "frame_number": 1, "filepath": 1}
    for k, lf in enumerate(fields):
        boxes = {"$ifNull": [f"${lf}.detections", []]}
        project[f"i{k}"] = {"$map": {"input": boxes, "as": "x", "in": {"$toString": "$$x._id"}}}
        project[f"t{k}"] = {"$map": {"input": boxes, "as": "x", "in": "$$x.index"}}
    where: dict = {}
    index = _TrackIdsBuilder()
    for doc in samples._aggregate(pipeline=[{"$project": project}]):
        where[str(doc["_id"])] = (str(doc.get("_sample_id")), int(doc["frame_number"]),
                                  os.path.basename(doc["filepath"]).rsplit(" frame ", 1)[0])
        for k in range(len(fields)):
            ids = doc.get(f"i{k}")
            if ids:
                index.add(ids, doc[f"t{k}"])
    frame_count: dict = {}
    source = (samples._dataset.info or {}).get(UNITS_INFO_KEY, {}).get("dataset")
    if source and fo.dataset_exists(source):
        vids, counts = fo.load_dataset(source).select(sorted({v for v, _, _ in where.values()})).values(
            ["id", "metadata.total_frame_count"])
        frame_count = {str(v): c for v, c in zip(vids, counts, strict=True) if c}
    return {"where": where, "index": index.build(), "frame_count": frame_count}


class _TrackIds:
    """Each box's track id (``Detection.index`` as stored, ``None`` where unset), by label id: the ids as
    sorted 12-byte keys, looked up in bulk (no dict of millions of strings)."""

    def __init__(self, label_ids: bytes, tracks: list) -> None:
        keys = np.frombuffer(label_ids, dtype="S12")
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]
        self.tracks = np.asarray(tracks + [None], dtype=object)[:-1]

    def of(self, label_ids: np.ndarray) -> np.ndarray:
        """The track id of each of ``label_ids`` (24-hex-digit strings), ``None`` where unknown or unset."""
        out = np.full(len(label_ids), None, dtype=object)
        if not len(label_ids) or not len(self.keys):
            return out
        # any string that is no id (24 lowercase hex digits) is unknown, as it was no key of the dict this replaces
        wanted, ok = _id_bytes(label_ids)
        # the last of equal keys (stable order): the value a dict keeps for a repeated id
        at = np.maximum(np.searchsorted(self.keys, wanted, side="right") - 1, 0)
        found = ok & (self.keys[at] == wanted)
        out[found] = self.tracks[self.order[at[found]]]
        return out


class _TrackIdsBuilder:
    """Collects label ids (24-hex-digit strings) and their track ids as they are read, keeping the ids as 12 bytes
    each: the strings are converted every :attr:`CHUNK` ids, so that millions of them never stay in memory."""

    CHUNK = 200_000

    def __init__(self) -> None:
        self._keys = bytearray()
        self._tracks: list = []
        self._ids: list[str] = []
        self._pending: list = []

    def add(self, label_ids: list[str], tracks: list) -> None:
        """Adds one list of label ids and their track ids (as many of each)."""
        if len(label_ids) != len(tracks):
            raise ValueError(f"{len(label_ids)} label ids but {len(tracks)} track ids")
        self._ids.extend(label_ids)
        self._pending.extend(tracks)
        if len(self._ids) >= self.CHUNK:
            self._flush()

    def build(self) -> _TrackIds:
        """The lookup of every id added; a string that is no id is left out, with its track id."""
        self._flush()
        return _TrackIds(bytes(self._keys), self._tracks)

    def _flush(self) -> None:
        if not self._ids:
            return
        keys, ok = _id_bytes(self._ids)
        if ok.all():
            self._keys += keys.tobytes()
            self._tracks.extend(self._pending)
        else:
            self._keys += keys[ok].tobytes()
            self._tracks.extend(t for t, good in zip(self._pending, ok.tolist(), strict=True) if good)
        self._ids.clear()
        self._pending.clear()


def _id_bytes(label_ids) -> tuple[np.ndarray, np.ndarray]:
    """The 12 bytes (``S12``) of each ObjectId given as 24 lowercase hex digits (``str(ObjectId)``), and whether
    each string is one (the bytes of any other string are meaningless)."""
    digits = np.asarray(label_ids, dtype="S24").view(np.uint8).reshape(-1, 24).astype(np.int16)
    decimal, letter = (digits >= 48) & (digits <= 57), (digits >= 97) & (digits <= 102)
    ok = np.asarray((decimal | letter).all(axis=1), dtype=bool)
    nibble = np.where(letter, digits - 87, np.where(decimal, digits - 48, 0))
    return ((nibble[:, 0::2] << 4) | nibble[:, 1::2]).astype(np.uint8).view("S12").reshape(-1), ok


def _video_rows(data, where: dict) -> dict:
    """``{video: (frame units, rows)}`` of the corpus (one grouping of units and rows by video, in order)."""
    video_of = np.asarray([where[s][0] for s in data.sample_ids], dtype=object)
    names, code = np.unique(video_of, return_inverse=True)
    code = code.reshape(-1)
    units = np.argsort(code, kind="stable")
    rows = np.argsort(code[data.sample_index], kind="stable")
    u_cut = np.searchsorted(code[units], np.arange(len(names) + 1))
    r_cut = np.searchsorted(code[data.sample_index[rows]], np.arange(len(names) + 1))
    return {v: (units[u_cut[k]:u_cut[k + 1]], rows[r_cut[k]:r_cut[k + 1]]) for k, v in enumerate(names.tolist())}


def _tracks_of(data, units: np.ndarray, rows: np.ndarray, where: dict, index: np.ndarray, frame: np.ndarray) -> dict:
    """``{rater: Tracks}`` of one video (every rater assigned to some frame of it); ``frame``: the frame number
    of every corpus unit."""
    name = where[data.sample_ids[units[0]]][2]
    out = {}
    for r in np.flatnonzero(data.assigned[units].any(axis=0)):
        mine = rows[data.rater_index[rows] == r]
        track = index[mine].tolist()
        missing = [k for k, t in enumerate(track) if t is None]
        if missing:
            k = mine[missing[0]]
            raise ValueError(f"video {name!r}, frame {frame[data.sample_index[k]]}, rater {data.raters[r]!r}: "
                             f"box {data.label_ids[k]} has no track id (Detection.index); tracks need one on every "
                             "box (FiftyOne's CVAT video importer sets it)")
        out[data.raters[r]] = Tracks(frame[data.sample_index[mine]], data.boxes[mine], np.asarray(track, np.int64),
                                     data.labels[mine], rater=data.raters[r], video=name)
    return out


def _per_label(data, rows: np.ndarray, res, index: np.ndarray, stiou_out: np.ndarray, unit_out: np.ndarray) -> None:
    """Each box's track unit and the unit's least STIoU."""
    u = res.units
    lookup = {}
    for k in range(len(u)):
        for c, r in enumerate(u.raters):
            if u.present[k, c]:
                lookup[(r, int(u.track_ids[k, c]))] = k
    for row in rows:
        unit = lookup.get((data.raters[data.rater_index[row]], int(index[row])))
        if unit is not None:
            unit_out[row] = unit
            stiou_out[row] = u.min_stiou[unit]


def _frame_agreement(data, units: np.ndarray, rows: np.ndarray, res, unit_of_row: np.ndarray) -> dict:
    """Per frame unit: the share of its boxes whose track unit holds a track of every rater of the video."""
    full = res.units.present.all(axis=1) if len(res.units) else np.zeros(0, bool)
    ok = np.zeros(len(rows), bool)
    has = unit_of_row[rows] >= 0
    ok[has] = full[unit_of_row[rows][has]]
    s = np.searchsorted(units, data.sample_index[rows])  # the video's own units, ascending
    n = np.bincount(s, minlength=len(units))
    good = np.bincount(s, weights=ok, minlength=len(units))
    return dict(zip(units.tolist(), np.where(n > 0, good / np.maximum(n, 1), np.nan).tolist(), strict=True))


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    data = read.annotations
    where = extra["where"]
    index = extra["index"].of(data.label_ids)  # each corpus row's track id (None: unset)
    videos = _video_rows(data, where)
    frame = np.asarray([where[s][1] for s in data.sample_ids], dtype=np.int64)
    N = len(data.boxes)
    unit_of_row, stiou = np.full(N, -1, np.int64), np.full(N, np.nan)
    frame_score = np.full(data.num_samples, np.nan)
    results: list[TrackAgreementResult] = []
    video_values: dict[str, dict[str, Any]] = {"hota": {}, "idf1": {}, "id_switches": {}, "fragmentations": {}}
    consensus_docs: dict = {}
    for k, (v, (units, rows)) in enumerate(videos.items()):
        res = track_agreement(_tracks_of(data, units, rows, where, index, frame), video=where[data.sample_ids[units[0]]][2],
                              tau=params["tau"], iou_threshold=params["iou_threshold"],
                              consensus=params["consensus"], quorum=params["quorum"],
                              loca_unmatched=params["loca_unmatched"],
                              frame_count=extra.get("frame_count", {}).get(v))
        results.append(res)
        if params["consensus"]:
            consensus_docs.update(_consensus_documents(data.sample_ids[units], where, res.consensus, params["key"]))
        _per_label(data, rows, res, index, stiou, unit_of_row)
        for s, x in _frame_agreement(data, units, rows, res, unit_of_row).items():
            frame_score[s] = x
        pairs = [p.as_dict() for p in res.pairs]
        video_values["hota"][v] = float(np.nanmean([p["hota"] for p in pairs])) if pairs else None
        video_values["idf1"][v] = float(np.nanmean([p["idf1"] for p in pairs])) if pairs else None
        video_values["id_switches"][v] = int(sum(p["id_switches"] for p in pairs))
        video_values["fragmentations"][v] = int(sum(p["fragmentations"] for p in pairs))
        report((k + 1) / len(videos), f"video {k + 1} of {len(videos)}")
    pooled = pool_track_agreement(results)
    records = pooled.pair_records()
    alphas = pooled.alpha.as_dict()
    summary = {**{f"alpha_{n}": alphas[n]["alpha"] for n in ("presence", "classes", "localisation")},
               **{f"alpha_{n}_reason": alphas[n]["reason"] for n in ("presence", "classes", "localisation")},
               "hota": _mean(records, "hota"), "det_a": _mean(records, "det_a"), "ass_a": _mean(records, "ass_a"),
               "loc_a": _mean(records, "loc_a"), "idf1": _mean(records, "idf1"), "id_switches": int(sum(r["id_switches"] for r in records)),
               "fragmentations": int(sum(r["fragmentations"] for r in records)),
               "n_units": int(sum(len(r.units) for r in results)), "n_track_videos": len(results)}
    detail = {"raters": list(data.raters), "rater_pairs": records, "alpha": alphas, "video_values": video_values,
              "tau": params["tau"], "iou_threshold": params["iou_threshold"]}
    fields = {}
    if params["consensus"]:
        summary["n_consensus_tracks"] = int(sum(len(np.unique(r.consensus.tracks.track_ids)) for r in results
                                                if r.consensus is not None))  # every one, with consensus asked
        fields["consensus"] = ("Detections", consensus_docs, {"index": [1], "confidence": [0.5],
                                                             f"{params['key']}_n_raters": [1]})
    return MethodOutput(summary=summary, detail=detail, label_fields=fields,
                        sample_values={"tracks_agree": frame_score},
                        label_values={"track_unit": [None if u < 0 else int(u) for u in unit_of_row],
                                      "track_stiou": stiou})


def _consensus_documents(unit_ids, where: dict, consensus, key: str) -> dict:
    """``{frame unit id: [label documents]}`` of a video's consensus tracks (an empty list on a frame
    without one): the track id in ``index``, the share of raters agreeing with its class in ``confidence``."""
    from agreement.fo.storage.stored_values import label_document

    frame_unit = {where[u][1]: u for u in unit_ids}
    docs: dict = {u: [] for u in unit_ids}
    t = consensus.tracks
    labels = t.labels if t.labels is not None else [None] * len(t.frames)
    for f, box, tid, lab, conf, n in zip(t.frames, t.boxes, t.track_ids, labels, consensus.confidence,
                                         consensus.n_raters, strict=False):
        unit = frame_unit.get(int(f))
        if unit is not None:
            n_raters: dict[str, Any] = {f"{key}_n_raters": int(n)}
            docs[unit].append(label_document("Detections", label=None if lab is None else str(lab),
                                             bounding_box=[float(x) for x in box], index=int(tid),
                                             confidence=float(conf) if np.isfinite(conf) else None, **n_raters))
    return docs


def _mean(records: list, name: str) -> float:
    vals = [r[name] for r in records if r.get(name) is not None and np.isfinite(r[name])]
    return float(np.mean(vals)) if vals else float("nan")


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("tracks_agree", "consensus"),
    label_suffixes=("track_unit", "track_stiou"),
    compute=_compute,
    extra=_extra,
    read_options=lambda p: {"image_sizes": True},
)

#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "Track agreement",
    "score_suffix": "tracks_agree",
    "score_label": "share of the frame's boxes whose track every rater has",
    "score_axis": "share of boxes tracked by every rater (1 = all agree)",
    "score_name": "tracked by all",
    "score_range": lambda params: (0.0, 1.0),
    "cards": [
        {"key": "alpha_presence", "label": "α of track presence"},
        {"key": "alpha_classes", "label": "α of track class"},
        {"key": "alpha_localisation", "label": "α of track localisation (1 − STIoU)"},
        {"key": "hota", "label": "HOTA (mean over rater pairs)"},
        {"key": "idf1", "label": "IDF1 (mean over rater pairs)"},
        {"key": "id_switches", "label": "identity switches", "integer": True},
    ],
    # the text report's lines beside the cards (AgreementResults.report)
    "report_cards": [
        {"key": "loc_a", "label": "LocA (mean over rater pairs)"},
        {"key": "fragmentations", "label": "fragmentations", "integer": True},
        {"key": "n_track_videos", "label": "videos with tracks", "integer": True},
    ],
    "pair_matrix": ("hota", "HOTA per rater pair"),
    "pair_value": "HOTA",
}

DECLARATION = MethodDeclaration(
    operator="compute_track_agreement",
    label="Annotator Agreement: video tracks",
    description="Raters' tracks matched by spatio-temporal IoU; alpha of track presence, class and localisation; "
                "HOTA, IDF1, identity switches and fragmentations per rater pair",
    spec=SPEC,
    view=VIEW,
    params=(
        Param("tau", float, 0.5, "Track match threshold (STIoU)",
              "Two raters' tracks are the same object when their spatio-temporal IoU (mean box IoU over the "
              "frames either track has) is at least this", low=0.0, high=1.0, low_open=True),
        Param("iou_threshold", float, 0.5, "Box match threshold (IoU)",
              "The least box IoU of a match for IDF1, identity switches and fragmentations", low=0.0, high=1.0,
              low_open=True),
        Param("loca_unmatched", str, "skip", "LocA where nothing matched",
              "How HOTA's LocA counts a localisation threshold at which no box pair matched: skip leaves it out "
              "(the mean localisation of the thresholds with a match, never lifted by worse boxes); one counts "
              "it 1, as TrackEval does (LocA equal to TrackEval's)", choices=LOCA_UNMATCHED),
        Param("consensus", bool, False, "Consensus tracks",
              "Also write {key}_consensus on the frames: per track unit, on each frame where at least the quorum "
              "of its raters has a box, the mean box and the majority class (index = the unit's track id, "
              "confidence = share of the video's raters agreeing)"),
        Param("quorum", float, 0.5, "Quorum", "Share of a unit's raters that must have a box on a frame for "
              "the consensus track to have one there", low=0.0, high=1.0, low_open=True),
    ),
    records_key=True,
    outputs=(("alpha_presence", "Alpha of track presence", "float"), ("alpha_classes", "Alpha of track class", "float"),
             ("alpha_localisation", "Alpha of track localisation", "float"), ("hota", "HOTA (mean over pairs)", "float"),
             ("loc_a", "LocA (mean over pairs)", "float"),
             ("idf1", "IDF1 (mean over pairs)", "float"), ("id_switches", "Identity switches", "int"),
             ("fragmentations", "Fragmentations", "int")),
    key_prefix="tracks",
    streams=False,
    label_types=(fol.Detections,),
)

#: ``compute_track_agreement(samples, key, *, fields=[...frame fields...], tau=0.5, iou_threshold=0.5, ...)``.
compute_track_agreement = python_function(DECLARATION)
