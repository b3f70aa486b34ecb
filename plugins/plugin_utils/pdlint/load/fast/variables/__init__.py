"""A host's variables with origins: vars files in one event pass, values, templates, precedence."""
