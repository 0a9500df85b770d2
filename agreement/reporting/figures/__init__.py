"""The panel's and the reports' figures and cards, as plain plotly dicts (no FiftyOne)."""
