"""Rank and world size, shared by the loader and checkpoints."""

import os

import torch


def rank_world(rank, world_size):
    """Explicit arguments, else torch.distributed when initialised, else RANK / WORLD_SIZE."""
    if rank is None or world_size is None:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            r, w = dist.get_rank(), dist.get_world_size()
        else:
            r, w = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        rank = r if rank is None else rank
        world_size = w if world_size is None else world_size
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in [0, world_size={world_size})")
    return int(rank), int(world_size)
