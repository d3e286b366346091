"""Stand-ins for the OpenHands SDK's event classes (class and attribute names as in openhands-sdk 1.58.2).

The adapter recognises events by class name and reads their attributes, so these let its logic run on
Python 3.11, where the SDK (Python >= 3.12) cannot be installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TextContent:
    text: str
    type: str = "text"


@dataclass
class MessageToolCall:
    id: str
    name: str
    arguments: str


@dataclass
class ActionEvent:
    tool_name: str
    tool_call_id: str
    llm_response_id: str
    tool_call: MessageToolCall
    thought: list = field(default_factory=list)
    action: Any = None


@dataclass
class Observation:
    """An SDK observation: its ``content`` (a TextContent list; ``text=`` builds a one-item one, as the SDK's
    ``Observation.from_text``), error flag, exit code."""

    text: str | None = None
    is_error: bool | None = False
    exit_code: int | None = None
    content: list = field(default_factory=list)

    def __post_init__(self):
        if self.text is not None and not self.content:
            self.content = [TextContent(self.text)]


@dataclass
class ObservationEvent:
    tool_name: str
    tool_call_id: str
    observation: Observation
    action_id: str = ""


@dataclass
class AgentErrorEvent:
    tool_name: str
    tool_call_id: str
    error: str
