"""App panels of the plugin (thin: they read run results through the bridge)."""

PANELS = []
