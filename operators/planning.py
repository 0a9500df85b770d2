"""Planning operators: ``plan_raters``, how many raters per item a task needs (issue 52).

Thin: the form reads the parameters, :func:`agreement.fo.planning.raters.plan_raters` does the work and
stores the plan with the run, the result is its flat dict
(:meth:`agreement.fo.planning.raters.RaterPlan.as_dict`).
"""

from __future__ import annotations

import fiftyone.operators.types as types

from .common import Progress, compute_config, execute_with_progress, existing_run_choice, require
from .outputs import result_property
from .python_call import AgreementOperator

_STATISTIC_HELP = ("the run's statistic to plan for (default: its method's first): 'alpha' (class agreement, class "
                   "consensus, KαLOS, pixel α of mask agreement), 'alpha_ot' (OT agreement), 'sigma' and "
                   "'distance_alpha' (geometry agreement), 'consensus_accuracy' "
                   "(class consensus; class agreement with a gold field), 'consensus_confidence' (class consensus)")


class PlanRaters(AgreementOperator):
    """``plan_raters``: a run's statistic against raters per item, and the raters a target needs."""

    outputs = (("key", "Run", "str"), ("method", "Method", "str"), ("statistic", "Statistic", "str"),
               ("note", "What it is", "str"), ("target", "Target", "float"), ("confidence", "Confidence", "float"),
               ("k_needed", "Raters per sample needed", "int"), ("reason", "Why none", "str"),
               ("measured", "Within the raters the data has", "bool"),
               ("labels_needed", "Labels needed (k × samples)", "int"),
               ("labels_per_item", "Labels per sample", "int"),
               ("value_at_k", "Lower bound at k (α: consensus reliability)", "float"),
               ("n_items", "Samples", "int"), ("n_raters", "Raters", "int"),
               ("max_k", "Most raters on one sample", "int"),
               ("projection", "Projection beyond the data", "str"), ("repeats", "Draws per k", "int"),
               ("seed", "Seed", "int"), ("statistics", "Statistics the run offers", "list"),
               ("curve", "Measured curve", "json"), ("target_curve", "Curve the target is read on", "json"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config("plan_raters", "Annotator Agreement: how many raters?",
                              "A run's statistic against the number of raters per sample (rater subsampling) and "
                              "the raters a target needs")

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        from agreement.fo.planning.raters import planning_methods

        inputs = types.Object()
        if existing_run_choice(inputs, ctx, needs=f"run one of {', '.join(planning_methods())} first"):
            inputs.str("statistic", required=False, label="Statistic", description=_STATISTIC_HELP)
            inputs.float("target", default=0.8, label="Target",
                         description="the consensus reliability (α) or accuracy to reach, in (0, 1)")
            inputs.float("confidence", default=0.9, label="Confidence",
                         description="coverage of the curve's intervals; k is read on their lower bound")
            inputs.str("gold_field", required=False, label="Gold field (optional)",
                       description="a Classification field of gold classes: the reference of the consensus accuracy")
            inputs.int("repeats", default=200, label="Draws per k", description="subsamples of raters per k")
            inputs.int("seed", default=0, label="Seed")
            inputs.int("max_k_projected", default=20, label="Project up to k",
                       description="how far the Spearman–Brown projection of α is drawn")
        return types.Property(inputs, view=types.View(label="How many raters per sample?"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.planning.raters import plan_raters

        p = ctx.params
        key = require(p, "key", "the run to plan from")

        def compute(progress: Progress) -> dict:
            progress(0.0, f"subsampling the raters of run {key!r}")
            plan = plan_raters(ctx.dataset, key, statistic=p.get("statistic") or None,
                               target=float(p.get("target", 0.8)), confidence=float(p.get("confidence", 0.9)),
                               gold_field=p.get("gold_field") or None, repeats=int(p.get("repeats", 200)),
                               seed=int(p.get("seed", 0)), max_k_projected=int(p.get("max_k_projected", 20)))
            return plan.as_dict()

        return execute_with_progress(ctx, compute, outputs=lambda r: result_property(self.outputs, r))
