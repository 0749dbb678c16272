"""Helpers that several test modules share, one module per noun; no tests here."""
