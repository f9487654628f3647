"""gpuscope: the training side of the gpuscope GPU observability stack.

`gpuscope.training` sends each rank's step, mark and collective timing to the node agent's training
socket (docs/design/training.md). Standard library only; it never raises into the training script and
costs one failed system call, at most every few seconds, when no agent listens.
"""

__all__ = ["training"]
