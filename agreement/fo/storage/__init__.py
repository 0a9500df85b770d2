"""Reading multi-rater annotations from FiftyOne, writing results back, and how values are stored."""
