"""Rules on prefill/decode pairs: the pair classes, TP ratios, KV heads, what must match."""
