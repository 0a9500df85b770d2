"""Input and output formats: multi-rater COCO and Label Studio exports."""
