"""The train-lora flow and the train and merge commands."""
