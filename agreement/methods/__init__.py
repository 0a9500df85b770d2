"""The agreement methods: OT and αOT, KαLOS (with calibration and diagnostics), geometry agreement, consensus and STAPLE."""
