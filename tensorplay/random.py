"""The global counter-based random generator behind `rand`, `randn`, `randint`, ...

State is (seed, offset). Each draw of n elements takes the key (seed, offset)
and advances offset by n, so the bits depend only on the seed and the order of
draws, never on whether the draw ran eagerly, in the interpreter, or compiled.
"""
from __future__ import annotations

import numpy as np

DEFAULT_SEED = 67280421310721


class Generator:
    """A Philox key source: hands out (seed, offset) keys for draws of a given size."""

    def __init__(self, seed: int = DEFAULT_SEED):
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> "Generator":
        seed = int(seed)
        self.seed = seed - (1 << 64) if seed >= (1 << 63) else seed
        if not -(1 << 63) <= self.seed < (1 << 63):
            raise ValueError(f"manual_seed: seed {seed} does not fit in 64 bits")
        self.offset = 0
        return self

    def initial_seed(self) -> int:
        return self.seed

    def take_key(self, count: int) -> np.ndarray:
        """The key for a draw of `count` elements; advances the state past them."""
        key = np.array([self.seed, self.offset], dtype=np.int64)
        self.offset += max(int(count), 1)
        return key

    def get_state(self) -> tuple[int, int]:
        return (self.seed, self.offset)

    def set_state(self, state) -> None:
        self.seed, self.offset = int(state[0]), int(state[1])


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generator; later draws are reproducible in every execution mode."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the global generator non-deterministically and return the seed."""
    s = int(np.random.SeedSequence().entropy % (1 << 63))
    default_generator.manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)
