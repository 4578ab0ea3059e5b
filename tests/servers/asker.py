"""A test MCP server whose tool asks the user mid-call (MCP elicitation), over stdio.

``book(room)``: asks for the booking's details (a form: ``name`` with no default, ``people``
defaulting to 2, ``pin`` defaulting to the door code in ``ASKER_PIN``) and says what it was
told, or that the user declined or cancelled.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("asker", log_level="WARNING")


class Booking(BaseModel):
    name: str = Field(default="", description="Who books")
    people: int = Field(default=2, description="How many people")
    pin: str = Field(default=os.environ.get("ASKER_PIN", "4711"), description="The door code")


@server.tool(description="Book a room; the server asks for the details.")
async def book(room: str, ctx: Context) -> str:
    answer = await ctx.elicit(f"Details for booking {room}?", Booking)
    if answer.action != "accept":
        return f"booking {room}: the user chose {answer.action}"
    got = answer.data
    return f"booked {room} for {got.people} ({got.name or 'nobody'}), door {got.pin}"


if __name__ == "__main__":
    server.run("stdio")
