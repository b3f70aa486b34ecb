"""The one rules core entry point, and the stages around the rules (suppression, redaction)."""
