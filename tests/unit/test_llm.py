"""The chat client against a real local HTTP server with canned answers (the one allowed fake)."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from citeline.query.answer_check import check_answer
from citeline.query.llm import ChatClient, chat_url
from citeline.query.prompt import build_prompt
from citeline.schemas.errors import CitelineError, LLMError
from citeline.schemas.retrieval import Citation

GOOD = "Paged attention splits the KV cache into blocks [1]. Blocks hold 16 tokens [2]."
BAD = (
    "Paged attention splits the KV cache into blocks [7]. "
    "It was invented in 1850. It is fast [1]."
)


def _reply(content) -> bytes:
    return json.dumps(
        {"id": "x", "object": "chat.completion",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                      "finish_reason": "stop"}]}
    ).encode()


# first path segment -> (status, body, delay in seconds)
CANNED = {
    "good": (200, _reply(GOOD), 0),
    "bad": (200, _reply(BAD), 0),
    "fail": (500, b'{"error": "model crashed"}', 0),
    "slow": (200, _reply(GOOD), 1.0),
    "html": (200, b"<html>proxy login</html>", 0),
    "nochoices": (200, b'{"choices": []}', 0),
    "blank": (200, _reply("   "), 0),
}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length", 0))
        self.server.requests.append(
            {"path": self.path, "headers": dict(self.headers),
             "body": json.loads(self.rfile.read(length))}
        )
        status, body, delay = CANNED[self.path.strip("/").split("/")[0]]
        time.sleep(delay)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and hung up, as the timeout test intends

    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="module")
def _running():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.requests = []
    # A short poll interval so that shutdown does not wait half a second.
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def server(_running):
    _running.requests.clear()
    return _running, f"http://127.0.0.1:{_running.server_address[1]}"


@pytest.mark.parametrize(
    "suffix", ["/good", "/good/", "/good/v1", "/good/v1/", "/good/v1/chat/completions"]
)
def test_every_url_form_reaches_the_chat_completions_path(server, suffix):
    srv, root = server
    assert ChatClient(root + suffix, "tiny").complete("hello") == GOOD
    assert srv.requests[-1]["path"] == "/good/v1/chat/completions"


def test_request_is_one_user_message_at_temperature_zero(server):
    srv, root = server
    cites = [Citation(1, "d1", "a.md", "A > B", "#char=0,4", "text")]
    prompt = build_prompt("what?", cites)
    ChatClient(root + "/good", "qwen-0.5b").complete(prompt, max_tokens=64)
    request = srv.requests[-1]
    assert request["body"] == {
        "model": "qwen-0.5b",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "stream": False,
        "max_tokens": 64,
    }
    assert request["headers"]["Content-Type"] == "application/json"
    assert "Authorization" not in request["headers"]


def test_api_key_is_sent_as_a_bearer_token_and_kept_out_of_repr(server):
    srv, root = server
    client = ChatClient(root + "/good", "m", api_key="sk-secret")
    client.complete("hi")
    assert srv.requests[-1]["headers"]["Authorization"] == "Bearer sk-secret"
    assert "sk-secret" not in repr(client)


def test_bad_answer_is_caught_by_the_answer_check(server):
    _, root = server
    answer = ChatClient(root + "/bad", "m").complete("prompt")
    check = check_answer(answer, (1, 2))
    assert check.unknown == (7,)
    assert check.uncited == (
        "Paged attention splits the KV cache into blocks.",
        "It was invented in 1850.",
    )
    assert check.answer == (
        "Paged attention splits the KV cache into blocks. It was invented in 1850. It is fast [1]."
    )


def test_http_500_raises_llm_error_with_status_and_body(server):
    _, root = server
    with pytest.raises(LLMError, match=r"HTTP 500 .*model crashed") as info:
        ChatClient(root + "/fail", "m").complete("prompt")
    assert isinstance(info.value, CitelineError)


def test_slow_server_hits_the_timeout(server):
    _, root = server
    started = time.perf_counter()
    with pytest.raises(LLMError, match=r"did not answer within 0.2 s"):
        ChatClient(root + "/slow", "m", timeout=0.2).complete("prompt")
    assert time.perf_counter() - started < 0.9


@pytest.mark.parametrize(
    "route, message",
    [
        ("/html", "something other than JSON"),
        ("/nochoices", r"no choices\[0\].message.content"),
        ("/blank", "empty answer"),
    ],
)
def test_malformed_replies_raise_llm_error(server, route, message):
    _, root = server
    with pytest.raises(LLMError, match=message):
        ChatClient(root + route, "m").complete("prompt")


def test_unreachable_server_raises_llm_error():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens on this port now
    with pytest.raises(LLMError, match=f"cannot reach http://127.0.0.1:{port}"):
        ChatClient(f"http://127.0.0.1:{port}", "m", timeout=2).complete("prompt")


def test_url_without_scheme_is_rejected():
    with pytest.raises(LLMError, match="must start with http"):
        chat_url("localhost:8080")


def test_config_from_environment():
    env = {"CITELINE_LLM_URL": "http://h:1", "CITELINE_LLM_MODEL": "m", "CITELINE_LLM_API_KEY": ""}
    client = ChatClient.from_env(env, timeout=5)
    got = (client.url, client.model, client.api_key, client.timeout)
    assert got == ("http://h:1", "m", None, 5)


def test_missing_configuration_names_the_variables_and_how_to_set_them():
    with pytest.raises(LLMError, match="CITELINE_LLM_MODEL not set") as info:
        ChatClient.from_env({"CITELINE_LLM_URL": "http://h:1"})
    assert any("Help: set CITELINE_LLM_URL" in note for note in info.value.__notes__)
