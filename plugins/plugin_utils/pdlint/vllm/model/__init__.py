"""What a model's config.json makes of an engine: layers, PP stages, the KV cache manager."""
