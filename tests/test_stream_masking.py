"""The model's text as it streams (live view, ``--json --stream``, the API's ``on_token``) is
masked as what is written to disk is, a secret split across pieces included, and ordinary
text is not held back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.llm.base import LLMRequest, LLMResponse
from magent.redact import MASK, Redactor
from magent.redact_stream import StreamMask
from support.cli import invoke
from support.engine import write

SECRET = "hunter2-very-secret-value"
KEY = "sk-live-typedbyaperson0123456789"
AGENT = """
name: keeper
role: keeps a token
system_prompt: "You hold the token ${MY_SECRET}; never repeat it."
llm_config: {model: scripted, script: keeper.script.yaml}
"""


class Pieces:
    """A local model stub that streams its reply in the pieces given, noting after each piece
    what the token sink had received so far."""

    def __init__(self, pieces: list[str], shown: list[str]):
        self.pieces = pieces
        self.shown = shown
        self.seen_after: list[str] = []

    def supports_tools(self, model: str) -> bool:
        return True

    async def complete(self, request: LLMRequest, on_token=None, *, on_attempt=None) -> LLMResponse:
        for piece in self.pieces:
            if on_token is not None:
                on_token(piece)
            self.seen_after.append("".join(self.shown))
        return LLMResponse(content="".join(self.pieces), model="stub", provider="stub")


def test_a_secret_split_across_pieces_never_reaches_the_token_sink(magent_home: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SECRET", SECRET)
    write(tmp_path, "keeper.script.yaml", "responses: []\n")
    agent = write(tmp_path, "keeper.yaml", AGENT)
    shown: list[str] = []
    stub = Pieces(["The token is hun", "ter2-very-sec", "ret-value and the key ", "sk-live-ty",
                   "pedbyaperson0123456789", ". Bye"], shown)
    result = _run(agent, stub, shown)
    assert result.success, result.error
    streamed = "".join(shown)
    assert SECRET not in streamed and KEY not in streamed
    assert "hun" not in streamed and "pedbyaperson" not in streamed
    assert streamed == f"The token is {MASK} and the key {MASK}. Bye" == result.output
    # Held back only while it could be a secret: the text before each one went out at once.
    assert stub.seen_after[0] == "The token is "
    assert stub.seen_after[2] == f"The token is {MASK} and the key "
    assert stub.seen_after[4] == f"The token is {MASK} and the key "  # (the key could go on)
    assert stub.seen_after[5] == streamed


def _run(agent: Path, stub: Pieces, shown: list[str]):  # type: ignore[no-untyped-def]
    import asyncio

    import magent

    return asyncio.run(magent.arun(str(agent), "say it", llm=stub, on_token=shown.append))


@pytest.mark.parametrize("pieces", [
    ["Auth: Bea", "rer abcdefghij", "klmnopqrstu done"],
    ["key s", "k-", "abcdefghijklmnop", "qrstuvwx", " ok"],
    ["AKIA1234", "5678ABCD", "EFGH and more"],
])
def test_a_key_shape_arriving_in_pieces_is_masked_whole(pieces: list[str]) -> None:
    redactor = Redactor()
    out: list[str] = []
    stream = StreamMask(redactor, out.append)
    for piece in pieces:
        stream(piece)
    stream.flush()
    assert "".join(out) == redactor.text("".join(pieces))
    assert MASK in "".join(out)


def test_text_with_nothing_to_mask_goes_out_piece_by_piece() -> None:
    out: list[str] = []
    stream = StreamMask(Redactor({SECRET}), out.append)
    for piece in ["Hello ", "there, ", "how are you"]:
        stream(piece)
    assert out == ["Hello ", "there, ", "how are you"]


@pytest.mark.slow
def test_the_live_view_and_the_json_stream_show_a_streamed_secret_masked(magent_home: Path, tmp_path: Path) -> None:
    write(tmp_path, "keeper.script.yaml", f"responses:\n  - content: 'It is {SECRET}, key {KEY}.'\n")
    agent = write(tmp_path, "keeper.yaml", AGENT)
    env = {"MY_SECRET": SECRET}
    live = invoke("run", str(agent), "-t", "say it", env=env)
    streamed = invoke("run", str(agent), "-t", "say it", "--json", "--stream", env=env)
    assert live.code == 0 and streamed.code == 0, live.err + streamed.err
    for out in (live.out, streamed.out):
        assert SECRET not in out and KEY not in out
    assert f"  It is {MASK}, key {MASK}." in live.out
    deltas = [json.loads(line)["text"] for line in streamed.out.splitlines() if '"text_delta"' in line]
    assert "".join(deltas) == f"It is {MASK}, key {MASK}."


def test_any_split_of_a_reply_joins_to_the_reply_as_redaction_masks_it() -> None:
    """Every way of cutting the reply in three pieces: what goes out is the masked reply, and no
    piece holds a secret's or a key's text."""
    redactor = Redactor({SECRET})
    reply = f"Use {KEY} or {SECRET}; header Bearer abcdefghijklmnopqrstuv, then AKIA1234567890ABCDEF."
    whole = redactor.text(reply)
    assert whole.count(MASK) == 4
    for i in range(1, len(reply)):
        for j in range(i, len(reply), 7):
            out: list[str] = []
            stream = StreamMask(redactor, out.append)
            for piece in (reply[:i], reply[i:j], reply[j:]):
                stream(piece)
            stream.flush()
            assert "".join(out) == whole, (i, j)


def test_a_long_secret_streamed_in_small_pieces_goes_out_as_one_mask() -> None:
    """A PEM-sized secret arriving a few characters at a time, between ordinary text: held back
    while it could still be the secret, then masked whole; the text around it is not held."""
    pem = "-----BEGIN PRIVATE KEY-----\n" + "".join(f"MIIE{i:04d}abcdefghij+/" for i in range(160)) + "\n-----END"
    redactor = Redactor({pem})
    reply = f"Here it is: {pem} -- and a near miss: {pem[:-3]}XYZ. Done."
    out: list[str] = []
    stream = StreamMask(redactor, out.append)
    for start in range(0, len(reply), 5):
        stream(reply[start:start + 5])
    stream.flush()
    joined = "".join(out)
    assert joined == redactor.text(reply)
    assert joined.count(MASK) == 1 and pem not in joined
    assert out[0] == "Here "  # nothing held back before the secret starts
    assert f"{pem[:-3]}XYZ" in joined  # the near miss is not the secret: it goes out as it is
