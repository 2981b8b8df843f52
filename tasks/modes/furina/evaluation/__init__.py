"""FURINA-Bench evaluation: answers, judgments in both orders, scores, hallucination checks, analysis."""
