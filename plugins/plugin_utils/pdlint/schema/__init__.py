"""The JSON Schema of the contract: the document, a quick pre-check, and the `schema` rule."""
