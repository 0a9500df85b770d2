"""The labelling round trip of a run (issue 52): send samples to a labelling tool for one more rater, load the
labels back into that rater's field and recompute the run.

* :mod:`agreement.fo.labelling.request`: :func:`~agreement.fo.labelling.request.request_labels` (the samples,
  the label schema and the new rater from the run, then FiftyOne's ``samples.annotate``);
* :mod:`agreement.fo.labelling.load`: :func:`~agreement.fo.labelling.load.load_requested_labels` (FiftyOne's
  ``load_annotations`` into the rater's field, the task -> sample mapping checked, the run recomputed with
  the rater added, all or nothing);
* :mod:`agreement.fo.labelling.history`: the rounds recorded with the run
  (:func:`~agreement.fo.labelling.history.run_rounds`);
* :mod:`agreement.fo.labelling.schema`: the run's rater layout, label schema and next rater name;
* :mod:`agreement.fo.labelling.backend`: FiftyOne's annotation config (server URL and key, never stored
  here), the reachability check and Label Studio's task -> sample check.

Submodules are imported directly (this package imports none of them).
"""
