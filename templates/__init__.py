"""Jinja2 templates of generated files, one per kind of file (package data)."""
