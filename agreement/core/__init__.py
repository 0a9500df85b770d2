"""The data model and what every method shares: validation, arrays, rater pairs, Krippendorff's α."""
