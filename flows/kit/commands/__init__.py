"""The kit's top floor: commands made from settings models and from a mode's spec. It runs flows (``running``)
and is run by the CLI; nothing below it imports it."""
