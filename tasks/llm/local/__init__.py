"""Local models (``local/<name>``): the registry of names, the litellm provider that routes to them, the
engines that run them (llama.cpp for GGUF files, transformers for model folders) and the types they share,
their weights and tokenizer."""
