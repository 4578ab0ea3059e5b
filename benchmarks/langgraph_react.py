"""The long-react workload through LangGraph, for issue 17's side-by-side figures.

One ReAct loop as LangGraph runs it: a StateGraph over ``MessagesState`` with an ``agent`` node (a
scripted model: a tool call on each of N turns, then an answer) and a ``tools`` node whose tool
returns 10,000 bytes, compiled with the sync SQLite checkpointer (``SqliteSaver``) and
``durability="sync"`` (a checkpoint written before each next step). One run per process; it prints
one JSON line:

- ``run``: ``{"first_call": <epoch s>, "steps": [s, ...], "cpu": [s, ...]}`` (step = time between
  model calls; cpu = process CPU between them);
- ``resume``: continues thread ``bench`` of the database from its last checkpoint (a run killed with
  SIGKILL by ``--kill-at K``, just after its K-th tool result) and prints ``{"first_call": ...}``.

    python benchmarks/langgraph_react.py run N DB [--kill-at K]
    python benchmarks/langgraph_react.py resume N DB

Needs ``pip install -e '.[bench]'`` (langgraph, langgraph-checkpoint-sqlite); the benchmark entry
point (``benchmarks/run_all.py``) runs it and says so when it is missing.
"""


import json
import os
import signal
import sqlite3
import sys
import time

PAYLOAD = 10_000


def build(n: int, db: str, kill_at: int | None, stamps: list[tuple[float, float, float]]):
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    def agent(state: MessagesState) -> dict:
        stamps.append((time.time(), time.perf_counter(), time.process_time()))
        turn = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        if turn >= n:
            return {"messages": [AIMessage(content="done")]}
        call = {"name": "echo", "args": {"n": turn}, "id": f"call_{turn}"}
        return {"messages": [AIMessage(content=f"step {turn}", tool_calls=[call])]}

    def tools(state: MessagesState) -> dict:
        call = state["messages"][-1].tool_calls[0]
        text = f"{call['args']['n']}:"
        return {"messages": [ToolMessage(content=text + "x" * (PAYLOAD - len(text)), tool_call_id=call["id"])]}

    def route(state: MessagesState) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    def after_tools(state: MessagesState) -> str:
        done = sum(1 for m in state["messages"] if isinstance(m, ToolMessage))
        if kill_at is not None and done >= kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return "agent"

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_conditional_edges("tools", after_tools, ["agent"])
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    return graph.compile(checkpointer=saver)


def main() -> None:
    mode, n, db = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    kill_at = int(sys.argv[sys.argv.index("--kill-at") + 1]) if "--kill-at" in sys.argv else None
    stamps: list[tuple[float, float, float]] = []
    app = build(n, db, kill_at, stamps)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 2 * n + 10}
    from langchain_core.messages import HumanMessage

    if mode == "run":
        app.invoke({"messages": [HumanMessage(content="read")]}, config, durability="sync")
        steps = [b[1] - a[1] for a, b in zip(stamps, stamps[1:])]
        cpu = [b[2] - a[2] for a, b in zip(stamps, stamps[1:])]
        print(json.dumps({"first_call": stamps[0][0], "steps": steps, "cpu": cpu}))
    else:
        app.invoke(None, config, durability="sync")
        print(json.dumps({"first_call": stamps[0][0]}))


if __name__ == "__main__":
    main()
