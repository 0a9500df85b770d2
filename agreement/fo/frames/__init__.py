"""Video frames as the units of an agreement run: frame runs, the frame dataset, frame-level fields and counts."""
