"""skillgit: train a skill document like a network's weights while the model stays frozen; every step in Git."""

__version__ = "0.1.0"
