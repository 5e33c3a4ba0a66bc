"""Talking-heads attention calls of clattn.Context (prefill, decode,
append)."""


class TalkingHeadsCalls:
    """Mixed into clattn.Context."""
