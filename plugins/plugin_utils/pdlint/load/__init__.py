"""Loaders: inventory sources -> HostVars (one contract, values with origins)."""
