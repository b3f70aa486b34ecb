"""Every explain format, chosen by name: (model, colour) -> document. Only text colours, and only on a terminal."""
from __future__ import annotations

from collections.abc import Callable

from . import as_json, html, markdown, text
from .model import Explanation

FORMATS: dict[str, Callable[[Explanation, bool], str]] = {
    "text": text.render, "json": as_json.render, "markdown": markdown.render, "html": html.render}
