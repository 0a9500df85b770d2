"""``suggest_relabel``: which samples of a run need one more rater (thin: the bridge is
:mod:`agreement.fo.planning.relabel`)."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo.runs import store as fo_runs

from .common import existing_run_choice, require
from .python_call import AgreementOperator

_RULES = {
    "expected_error_reduction": "Expected error reduction: the expected drop in the chance that the sample's "
                                "consensus is wrong if one more typical rater labelled it",
    "lowest_agreement": "Lowest agreement first",
    "fewest_raters": "Fewest raters first",
    "random": "Random (seeded)",
}


class SuggestRelabel(AgreementOperator):
    """``suggest_relabel``: ranks a run's samples by the value of one more label, writes ``{key}_relabel_priority``
    and shows the top ``budget`` samples."""

    outputs = (("key", "Run", "str"), ("rule", "Rule", "str"), ("budget", "Samples suggested", "int"),
               ("field", "Priority field (every sample of the run)", "str"),
               ("expected_errors_now", "Expected consensus errors now", "float"),
               ("expected_errors_after", "Expected consensus errors after one more label each", "float"),
               ("sample_ids", "Suggested samples, highest priority first", "list"),
               ("priorities", "Their priorities", "json"), ("n_samples", "Samples of the run ranked", "int"),
               ("notes", "Notes", "lines"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return foo.OperatorConfig(
            name="suggest_relabel",
            label="Annotator Agreement: suggest samples for another rater",
            description="Ranks a consensus or agreement run's samples by the expected value of one more label, "
                        "writes <key>_relabel_priority and shows the top samples",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        from agreement.fo.methods import hooks_of
        from agreement.methods.planning.relabel import RELABEL_RULES

        inputs = types.Object()
        keys = existing_run_choice(inputs, ctx, needs="run compute_consensus or compute_class_agreement first")
        if not keys:
            return types.Property(inputs, view=types.View(label="Suggest samples for another rater"))
        key = ctx.params.get("key") if ctx.params.get("key") in keys else inputs.properties["key"].default
        method = fo_runs.get_agreement_run_info(ctx.dataset, key)["method"]
        if hooks_of(method).relabel is None:
            inputs.view("no_relabel", types.Warning(
                label=f"Run {key!r} ({method}) cannot rank samples for another rater",
                description="Choose a consensus or class agreement run"))
        n = len(ctx.view) if ctx.view is not None else 1
        # (no min/max: the bridge refuses a budget outside 1 .. the samples with its own message)
        inputs.int("budget", default=min(10, n), required=True, label="Samples to suggest",
                   description=f"How many samples get one more rater (at most the {n} of the view)")
        rules = types.RadioGroup()
        for name in RELABEL_RULES:
            rules.add_choice(name, label=_RULES.get(name, name))
        inputs.enum("rule", list(RELABEL_RULES), default=RELABEL_RULES[0], label="Rule", view=rules)
        inputs.int("seed", default=0, min=0, label="Seed", description="Seed of a fitted consensus and of 'random'")
        return types.Property(inputs, view=types.View(label="Suggest samples for another rater"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.planning.relabel import suggest_relabel

        p = ctx.params
        key = require(p, "key", "the run whose samples to rank")
        budget = require(p, "budget", "how many samples to suggest")
        suggestion = suggest_relabel(ctx.view, key, budget=budget, rule=p.get("rule") or "expected_error_reduction",
                                     seed=int(p.get("seed") or 0))
        ctx.ops.set_view(view=ctx.view.select(suggestion.sample_ids, ordered=True))
        return suggestion.as_dict()
