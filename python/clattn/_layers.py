"""Layers (GQA, talking-heads, Optimised, Efficient, Super, SwitchHead)
created from NumPy weights, and their KV caches."""
