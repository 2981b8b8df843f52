"""CoSER's given-circumstance acting: actors, an environment and a next-speaker predictor play a scene from a
book; a critic lists each dimension's flaws against the original conversation (Wang et al., ICML 2025)."""
