"""Helpers shared by several test files."""
