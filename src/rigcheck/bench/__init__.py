"""Measurements (need torch, imported lazily inside functions): launcher, collectives, devices, training."""
