"""Reading a Plotly figure back out of an HTML page, whatever JSON encoder wrote it.

Plotly serialises figures with orjson when it is installed and with the standard library's
encoder otherwise; the two escape non-ASCII text differently (`·` or `\\u00b7`), so tests compare
the decoded figure, never the page's bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any


def figure_in_page(page: str, div_id: str) -> dict[str, Any]:
    """The ``{"data": [...], "layout": {...}}`` that ``Plotly.newPlot("div_id", ...)`` draws."""
    calls = [m.end() for m in re.finditer(r"Plotly\.newPlot\(\s*", page)]
    (start,) = [at for at in calls if page.startswith(f'"{div_id}"', at)]
    decoder = json.JSONDecoder()
    position = start + len(div_id) + 2
    parts: list[Any] = []
    for _ in range(2):
        while page[position] in " \t\r\n,":
            position += 1
        value, position = decoder.raw_decode(page, position)
        parts.append(value)
    return {"data": parts[0], "layout": parts[1]}


def trace_names(figure: dict[str, Any]) -> set[str]:
    """The names of the figure's traces that have one."""
    return {trace["name"] for trace in figure["data"] if "name" in trace}


def annotation_texts(figure: dict[str, Any]) -> set[str]:
    """The texts of the figure's annotations."""
    return {note.get("text", "") for note in figure["layout"].get("annotations", [])}
