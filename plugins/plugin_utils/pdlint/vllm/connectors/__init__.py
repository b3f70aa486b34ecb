"""The KV connectors per release: registry, composites, what pairs two sides."""
