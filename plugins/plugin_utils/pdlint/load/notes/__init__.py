"""The file-level findings the loaders add: group names, role conflicts, unmatched vars."""
