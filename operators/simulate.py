"""Operator: simulated raters from a reference field (noise models of the OT paper and KaLOS)."""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.simulate.raters import NOISE_MODELS, simulate_raters
from agreement.fo.storage.label_schema import label_fields

from .common import compute_config, execute_with_progress, require, run_inputs
from .outputs import result_property, shown_result
from .python_call import AgreementOperator
from .target import target_input, target_record, target_view


class SimulateRaters(AgreementOperator):
    """``simulate_raters``: adds simulated raters derived from a reference field."""

    takes_target = True
    outputs = (("key", "Run", "str"), ("target", "Simulated on", "str"), ("fields", "Fields written", "list"),
               ("raters", "Simulated raters", "raters"), ("labels", "Labels drawn", "json"),
               ("school", "School (raters sharing an offset)", "json"),
               ("cannibalised", "Boxes merged away", "json"),
               ("clipped_boxes", "Reference boxes clipped to the image", "int"),
               ("outside_boxes", "Reference boxes outside the image", "int"),
               ("dropped_boxes", "Reference boxes dropped", "int"), ("resized_masks", "Masks resized", "int"),
               ("warnings", "Warnings", "lines"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config(
            "simulate_raters",
            "Annotator Agreement: simulate raters",
            "Adds simulated raters derived from a reference field (never modifies existing fields)",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        target_input(inputs, ctx, "Simulate on")
        choices = label_fields(ctx.dataset) if ctx.dataset is not None else []
        if not choices:
            inputs.view("no_fields", types.Warning(label="No label fields",
                                                   description="Simulation needs a reference Detections field."))
            return types.Property(inputs)
        inputs.enum("field", choices, required=True, label="Reference field",
                    description="The annotations the simulated raters start from (read only)")
        inputs.int("num_raters", default=3, min=1, label="Number of raters (K)")
        noise = types.RadioGroup()
        noise.add_choice("empirical", label="empirical (KaLOS: misses, false positives, splits/merges, class mistakes, shifts)")
        noise.add_choice("drop", label="drop a fraction γ of boxes")
        noise.add_choice("shift", label="shift centres by γ × box size")
        noise.add_choice("swap", label="swap labels of a fraction γ of boxes")
        inputs.enum("noise", list(NOISE_MODELS), default="empirical", label="Noise model", view=noise)
        inputs.float("magnitude", default=1.0, min=0.0, label="Magnitude (λ or γ)",
                     description="empirical: λ scales every error rate and residual (1 = as fitted); perturbations: γ")
        if (ctx.params.get("noise") or "empirical") == "empirical":
            inputs.str("profile", default="lvis", label="Noise profile",
                       description="'lvis' (shipped) or a JSON file from `python -m agreement.simulate.noise.fit`")
            inputs.int("school_size", default=0, min=0, label="School size",
                       description="The first raters share a systematic box offset (0: no school)")
        inputs.int("seed", default=0, label="Seed")
        layout = types.RadioGroup()
        layout.add_choice("fields", label="One field per simulated rater")
        layout.add_choice("attribute", label="One field, rater in a label attribute")
        inputs.enum("layout", ["fields", "attribute"], default="fields", label="Write as", view=layout)
        run_inputs(inputs, ctx, default_prefix="sim")
        return types.Property(inputs, view=types.View(label="Simulate raters"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        p = ctx.params
        kwargs = dict(
            field=require(p, "field", "the reference label field"),
            key=require(p, "key", "a name for the simulated raters' run"),
            num_raters=p.get("num_raters", 3),
            magnitude=float(p.get("magnitude", 1.0)),
            profile=p.get("profile") or "lvis",
            noise=p.get("noise") or "empirical",
            seed=int(p.get("seed", 0)),
            layout=p.get("layout") or "fields",
            school_size=int(p.get("school_size", 0) or 0),
            overwrite=bool(p.get("overwrite", False)),
        )
        from .reports import describe_target

        samples = target_view(ctx)
        where = describe_target(target_record(ctx, samples))
        return execute_with_progress(
            ctx, lambda progress: {"target": where, **simulate_raters(samples, **kwargs, progress=progress)},
            reload_dataset=True, outputs=lambda r: result_property(self.outputs, r),
            show=lambda r: shown_result(self.outputs, r),
        )
