"""Rules on one engine alone: TP against the model, connector settings, kv_role, flags, env."""
