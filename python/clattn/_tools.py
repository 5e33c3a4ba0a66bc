"""Explain, tune, the model's predictions and the tuning database, as
methods of clattn.Context and module functions."""


class ToolCalls:
    """Mixed into clattn.Context."""
