"""Rendering: typed template models -> Jinja templates -> black -> atomic, write-if-changed files."""
