"""App panels of the plugin (thin: they read run results through the bridge)."""

from .agreement_panel import AgreementPanel

PANELS = [AgreementPanel]
