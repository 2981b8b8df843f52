"""Test characters: key-value profiles with public and private attributes (FURINA section 3.1)."""
