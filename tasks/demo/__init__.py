"""The Foundation demo: characters answer a line, a judge scores each answer."""
