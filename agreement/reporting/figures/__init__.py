"""The panel's and the reports' figures and cards, as plain plotly dicts (no FiftyOne); their colours come from
one convention, :mod:`agreement.reporting.figures.palette` (blue high agreement, red low)."""
