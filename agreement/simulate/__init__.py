"""Simulated raters: the papers' noise models and synthetic scenes and crowds."""
