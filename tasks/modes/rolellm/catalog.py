"""RoleLLM's published Rouge-L tables (CUS, RAW, SPE, avg; x100), kept to set a run beside the paper's numbers
and to check the arithmetic: avg is the mean of the three sets everywhere but three rows of Table 5, which
the paper prints with other values (LLaMA, Alpaca, Vicuna)."""

from __future__ import annotations

Row = tuple[float, float, float, float]

PAPER_TABLES: dict[str, dict[str, Row]] = {
    "Table 3 (instruction generalization, English)": {
        "RoleGPT": (57.6, 53.2, 32.3, 47.7), "LLaMA": (12.9, 12.3, 25.5, 16.9),
        "LLaMA-script": (8.3, 5.1, 10.8, 8.1), "Alpaca": (24.2, 35.3, 27.0, 28.8), "Vicuna": (21.0, 25.5, 29.1, 25.2),
        "ChatPLUG": (24.0, 34.7, 25.8, 28.2), "Character.AI": (41.9, 45.7, 30.3, 39.3),
        "LLaMA-2-7B-Chat": (16.2, 26.2, 21.4, 21.2), "RoleLLaMA-7B": (32.9, 37.6, 38.1, 36.2),
        "RoleLLaMA2-13B-Chat": (37.5, 47.9, 48.8, 44.7)},
    "Table 4 (instruction generalization, Chinese)": {
        "RoleGPT": (53.7, 57.5, 24.8, 45.3), "ChatGLM2": (39.4, 50.6, 31.0, 40.3),
        "ChatGLM2-script": (14.0, 30.7, 9.1, 17.9), "ChatPLUG": (38.9, 61.4, 31.0, 43.8),
        "Character.AI": (42.0, 55.8, 28.7, 42.2), "Yi-6B-Chat": (40.6, 56.5, 26.9, 41.3),
        "RoleGLM": (50.5, 52.6, 34.1, 45.7)},
    "Table 5 (role generalization, English)": {
        "RoleGPT": (60.2, 53.2, 29.9, 47.8), "LLaMA": (13.2, 12.3, 25.5, 22.4), "Alpaca": (23.2, 35.3, 25.9, 30.2),
        "Vicuna": (20.8, 25.5, 27.8, 28.4), "ChatPLUG": (28.7, 34.7, 25.0, 29.5),
        "LLaMA-2-7B-Chat": (20.8, 26.2, 20.2, 22.4), "RoleLLaMA-7B": (41.3, 41.1, 25.7, 36.0)},
    "Table 10 (data mixing)": {
        "RoleLLaMA general": (35.7, 39.2, 21.4, 32.1), "RoleLLaMA specific": (25.1, 27.6, 28.2, 26.9),
        "RoleLLaMA mix": (32.9, 37.6, 38.1, 36.2), "RoleGLM general": (52.0, 53.4, 19.2, 41.5),
        "RoleGLM specific": (37.0, 46.9, 34.8, 39.6), "RoleGLM mix": (50.5, 52.6, 34.1, 45.7)},
    "Tables 12-13 (bilingual RoleGLM)": {
        "5+95 roles, English test": (31.4, 41.3, 29.3, 34.0), "5+5 roles, English test": (34.2, 44.6, 41.0, 39.9),
        "5+95 roles, Chinese test": (39.6, 44.5, 27.3, 37.2), "5+5 roles, Chinese test": (47.6, 54.4, 29.8, 43.9)},
}
PRINTED_OTHERWISE = {("Table 5 (role generalization, English)", m) for m in ("LLaMA", "Alpaca", "Vicuna")}
