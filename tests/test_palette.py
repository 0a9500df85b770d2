"""The colour bar of agreement heatmaps: a value that cannot fall below 0 does not read "≤ 0"."""

from agreement.reporting.figures.palette import AGREEMENT_RANGE, agreement_colour_axis


def test_lowest_tick_reads_below_zero_only_for_values_that_can_be_negative():
    alpha = agreement_colour_axis("α")["colorbar"]
    observed = agreement_colour_axis("observed agreement", below_zero=False)["colorbar"]
    assert alpha["ticktext"][0] == "≤ 0" and observed["ticktext"][0] == "0"
    assert alpha["tickvals"] == observed["tickvals"] == [AGREEMENT_RANGE[0], 0.5, AGREEMENT_RANGE[1]]


def test_the_pair_heatmap_uses_the_non_negative_bar_for_observed_agreement_only():
    from agreement.reporting.figures.pair_heatmap import pair_matrix, pair_matrix_figure

    detail = {"raters": ["a", "b", "c"],
              "rater_pairs": [{"rater_a": a, "rater_b": b, "alpha": v, "n_shared_samples": 4}
                              for a, b, v in (("a", "b", 0.4), ("a", "c", -0.2), ("b", "c", 0.9))]}
    counts = {f"{a}|{b}": {"n_units": 4, "n_agree": k} for a, b, k in (("a", "b", 3), ("a", "c", 1), ("b", "c", 4))}
    pm = pair_matrix(detail, "alpha", "α per pair", counts=counts)
    ticks = {statistic: pair_matrix_figure(pm, "α", "whole run", clickable=False, statistic=statistic)["traces"][0]
             ["colorbar"]["ticktext"][0] for statistic in ("value", "observed")}
    assert ticks == {"value": "≤ 0", "observed": "0"}
