"""PersonaGym on the kit's judged shape: personas answer their questions, two evaluators grade each five."""
