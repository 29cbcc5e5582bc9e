"""Running the item function on a Ray cluster: one engine per actor, as many actors as the cluster allows.

Each actor is an ``ItemWorker``: it resolves the model on its own node (into
that node's cache; a folder path must exist on every node), and writes the
item's files into the output folder, which must be a path every node shares
(NFS, a mounted bucket, ...) - with the same atomic and resumable rules as a
local run.  Ray is optional (``pip install .[batch]``) and imported only here.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..errors import ModelNotAvailable
from .items import BatchItem
from .worker import ItemWorker, Job, ModelSpec


def _ray():
    try:
        import ray
    except ImportError:
        raise ModelNotAvailable("--ray needs Ray: pip install 'omnivoice-onnx-studio[batch]' (or pip install ray)."
                                ) from None
    return ray


class RayBackend:
    """``address``: ``auto`` (a running cluster), ``local`` (start one on this machine) or ``ray://host:port``."""

    def __init__(self, spec: ModelSpec, address: str = "auto", cpus_per_actor: int = 1,
                 gpus_per_actor: float = 0, max_actors: Optional[int] = None):
        ray = _ray()
        self.ray = ray
        self.started_here = False
        if not ray.is_initialized():
            ray.init(address=None if address == "local" else address, log_to_driver=False)
            self.started_here = True
        resources = ray.cluster_resources()
        if gpus_per_actor:
            fits = int(resources.get("GPU", 0) // gpus_per_actor)
        else:
            fits = int(resources.get("CPU", 0) // cpus_per_actor)
        count = min(fits, max_actors) if max_actors else fits
        if count < 1:
            raise ModelNotAvailable(f"The Ray cluster has room for no actor of {cpus_per_actor} CPU(s)"
                                    f"{f' and {gpus_per_actor} GPU(s)' if gpus_per_actor else ''}: {resources}.")
        actor = ray.remote(num_cpus=cpus_per_actor, num_gpus=gpus_per_actor)(ItemWorker)
        self.actors = [actor.remote(spec, cpus_per_actor) for _ in range(count)]
        self.workers = count

    def check(self, items: list[BatchItem], audio_format: str):
        return self.ray.get(self.actors[0].check.remote(items, audio_format))

    def run(self, items: list[BatchItem], job: Job) -> Iterator[dict]:
        from ray.util import ActorPool

        pool = ActorPool(self.actors)
        yield from pool.map_unordered(lambda actor, item: actor.run.remote(item, job), items)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started_here:
            self.ray.shutdown()
