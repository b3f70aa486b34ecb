"""`pdlint explain`: the topology vLLM will build, rank by rank (model, then one renderer per format)."""
