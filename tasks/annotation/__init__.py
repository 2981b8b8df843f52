"""Human validation of judges: tasks for annotators made from an evaluation, and their answers read back."""
