"""Reporters, chosen by name: findings -> text, JSON, SARIF, GitHub annotations."""
