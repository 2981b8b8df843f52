"""`rpbench annotate`: push evaluation items to Label Studio as tasks, pull the annotations back."""
