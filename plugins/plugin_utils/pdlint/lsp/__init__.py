"""`pdlint lsp`: the whole-inventory rules inside the editor, as you type.

Only server.py imports pygls/lsprotocol (the `lsp` extra); the other modules are plain Python over the rules core,
so the package imports without pygls.
"""
