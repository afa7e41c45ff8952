"""Text from users shown as text: `plain` makes Markdown show it literally.

Streamlit renders every message, caption, title and progress text as GitHub-flavoured Markdown
(and its own ``:color[...]``/``:material/...:`` directives), and has no escape function. So a
URL parameter, a run's name or a stored error that reaches such an element could draw a link or
fetch an image (``[log in](https://evil.example) ![x](http://host/x.png)``). Every piece of text
a user (or a stored run) supplied goes through `plain` before it is formatted into one.
"""

from __future__ import annotations

import re

__all__ = ["plain", "why_stopped"]

_SPECIALS = re.compile(r"([\\`*_{}\[\]()<>#+\-!|~$:&=])")
"""Characters with a meaning in Markdown, HTML or Streamlit's directives (CommonMark lets a
backslash escape any ASCII punctuation; '.' is left alone, so numbers read as written)."""
_ZERO_WIDTH = "\u200b"
# GitHub-flavoured Markdown also links bare addresses (https://..., www...., a@b.c), after
# escapes are resolved; an invisible space inside each trigger keeps them text.
_AUTOLINKS = re.compile(r"(?i)(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)")
_LIST_START = re.compile(r"(?m)^(\s*\d+)(?=[.)])")


def plain(value: object) -> str:
    """``str(value)`` escaped so that Markdown shows it as written: no link, image, emphasis,
    heading, list, table, HTML, math or Streamlit directive; bare web and mail addresses are
    not linked either (a zero-width space breaks them)."""
    text = _AUTOLINKS.sub(_ZERO_WIDTH, str(value))
    text = _SPECIALS.sub(r"\\\1", text)
    return _LIST_START.sub(lambda m: m.group(1) + "\\", text)


def why_stopped(error: object, default: str = "by its owner") -> str:
    """Why a run stopped, as a sentence's end: the stored reason without its "stopped"
    prefix ("stopped: by ...", "stopped to free memory: ..." read "The run stopped: by ...",
    "... stopped: to free memory: ..."), or ``default`` where there is none (a store from
    before reasons were kept reads None, or NaN in a table)."""
    if not isinstance(error, str) or not error.strip():
        return default
    return error.removeprefix("stopped: ").removeprefix("stopped; ").removeprefix("stopped ")
