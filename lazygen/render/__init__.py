"""Rendering: typed contexts -> Jinja templates -> black -> atomic, write-if-changed files."""
