"""`labeller label` and `labeller cache ...` (placeholder until the labelling engine lands)."""
