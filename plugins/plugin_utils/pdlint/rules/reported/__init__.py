"""Rules the stages report outside the rule loop: loading, schema, command lines, pdlint_skip."""
