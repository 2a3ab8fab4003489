"""Stand-ins for the thread policy's tests: a load sampler handing out given loads."""

__all__ = ["FakeSampler"]


class FakeSampler:
    """Hands out the given loads (CPUs used by others), one per sample; ``instants`` per restart."""

    def __init__(self, loads, instants=()):
        self.loads = list(loads)
        self.instants = list(instants)

    def sample(self):
        return self.loads.pop(0)

    def restart(self):
        return self.instants.pop(0)
