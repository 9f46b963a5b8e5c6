"""Model builds without weight initialisation where no drawn value survives: a build on the meta device holds no
values (transformers' ``from_pretrained`` builds there and then loads or initialises every tensor; the folder checks
build there to read shapes and module settings), yet torch's modules run their init functions on it all the same."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

# transformers.initialization.no_init_weights, and transformers' own guard of the init functions while it initialises
# a model (a build on a real device, or the tensors a load lacks), each replace torch's init functions in torch's
# modules for the whole process while they run and put back what they found. The package's builds and loads run one
# at a time under this lock, so none of them builds with another thread's functions nor puts them back in place.
_BUILDS = threading.RLock()


@contextlib.contextmanager
def one_build(skip_init: bool = False) -> Iterator[None]:
    """A model build or load of the package's, alone among them in the process. ``skip_init``: with weight
    initialisation left out (``transformers.initialization.no_init_weights``: torch's init functions and
    ``PreTrainedModel.init_weights`` do nothing), which only a build on the meta device may ask
    (:func:`building_on_meta`): its tensors hold no values to initialise."""
    with _BUILDS:
        if not skip_init:
            yield
            return
        from transformers.initialization import no_init_weights

        with no_init_weights():
            yield


@contextlib.contextmanager
def meta_build() -> Iterator[None]:
    """A build on the meta device (no memory is taken) without weight initialisation (:func:`one_build`)."""
    import torch

    with torch.device("meta"), one_build(skip_init=True):
        yield


def building_on_meta() -> bool:
    """Whether models are built on the meta device here (a ``torch.device("meta")`` context, or meta as torch's
    default device): transformers' own test before it initialises weights (``PreTrainedModel.init_weights``)."""
    import torch
    from transformers.modeling_utils import get_torch_context_manager_or_global_device

    return get_torch_context_manager_or_global_device() == torch.device("meta")
