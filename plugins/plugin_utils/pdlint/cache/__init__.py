"""What pdlint remembers between runs: whole checks, per-file results, units checked again after an edit."""
