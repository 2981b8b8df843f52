"""The character-scene pool: books to chunks to scenes (FURINA appendix B, after CoSER's extraction)."""
