"""The interface between the graph executor and a backend (TorchScript first)."""

from __future__ import annotations

from typing import Any, Protocol

import torch

from .ir import Node, Value


class Backend(Protocol):
    name: str

    def device_type(self) -> str:
        """The torch device type data lives on (``"cpu"``, ``"cuda"``)."""

    def to_data(self, tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
        """Upload a tensor: the backend's device data."""

    def from_data(self, data: torch.Tensor) -> torch.Tensor:
        """Download device data to a CPU tensor (a copy)."""

    def compile(self, order: list[Node], outputs: list[Value]) -> Any:
        """Lower a post-ordered graph whose outputs are ``outputs``; returns an executable."""

    def execute(self, executable: Any, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """Run an executable on device data, one tensor per output."""

    # Optional: ``launch(executable, inputs)`` starts a run and returns a handle whose
    # ``wait()`` gives what ``execute`` would. With it, ``mark_step`` returns while the graph
    # runs (see launches.py); without it, every graph runs synchronously.

    def dump(self, order: list[Node], outputs: list[Value]) -> str:
        """The backend's text of a graph (``debug.dump_ir(..., "backend")``)."""
