"""Named seed streams: every source of randomness derives from the run's seed through one of them.

`derive(seed, stream, index)` is `seed * multiplier + index`; distinct large multipliers keep the
streams of different seeds and indices apart, so changing one stream never shifts another.
"""

from __future__ import annotations

STREAMS = {
    "envs": 1000,  # environment batches of a run: seeding (offset 0 train, 500 test), collection (1), tests (2)
    "collect": 100_003,  # the MPC agent and driver of the N-th collected episode
    "test": 7_000_003,  # the agent and driver of the N-th test phase (and PPO's N-th evaluation)
    "ppo-batch": 1_000_003,  # PPO's N-th batch of episodes
    "env-in-batch": 10_007,  # the I-th env of a batch, from the batch's seed
    "planner": 7_919,  # the CEM generator of the I-th env, from the agent's seed
}


def derive(seed: int, stream: str, index: int = 0) -> int:
    """The seed of item `index` of a named stream."""
    if stream not in STREAMS:
        raise ValueError(f"unknown seed stream {stream!r}; known: {', '.join(STREAMS)}")
    return seed * STREAMS[stream] + index
