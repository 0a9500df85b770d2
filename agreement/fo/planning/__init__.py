"""Planning a labelling task on a FiftyOne dataset: how many raters per item, which samples get one more label.

Import the submodules directly (this package imports nothing, so that each part loads on its own):

* :mod:`agreement.fo.planning.raters`: ``plan_raters`` (a run's statistic against the number of raters per
  item, the raters a target needs, the plan stored with the run) and ``stored_plan``;
  :mod:`agreement.fo.planning.plan_input` holds ``PlanningInput``, what a method's ``planning`` hook
  (:attr:`agreement.fo.runs.method_spec.MethodHooks.planning`) returns, and
  :mod:`agreement.fo.planning.plan_classes` the hooks of class agreement and class consensus runs,
  :mod:`agreement.fo.planning.plan_kalos` that of KαLOS runs, :mod:`agreement.fo.planning.plan_ot` of OT
  agreement runs (αOT), :mod:`agreement.fo.planning.plan_mask` of mask agreement runs (pixel α) and
  :mod:`agreement.fo.planning.plan_geometry` of geometry agreement runs (σ, distance α);
* :mod:`agreement.fo.planning.relabel` and its hooks: ``suggest_relabel``, which samples need one more rater.
"""
