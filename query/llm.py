"""A minimal client for an OpenAI-compatible chat endpoint (llama.cpp server, vLLM, Ollama).

Standard library only: one ``POST .../v1/chat/completions`` with temperature 0, so
the same prompt gives the same answer where the server allows it. Every failure
(unreachable, timeout, HTTP error, malformed reply) raises ``LLMError``.
"""
from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from citeline.schemas.errors import LLMError

ENV_URL = "CITELINE_LLM_URL"
ENV_MODEL = "CITELINE_LLM_MODEL"
ENV_API_KEY = "CITELINE_LLM_API_KEY"
_FALLBACKS = {ENV_URL: "OPENAI_BASE_URL", ENV_MODEL: "OPENAI_MODEL", ENV_API_KEY: "OPENAI_API_KEY"}
DEFAULT_TIMEOUT = 120.0
_SNIPPET = 300  # characters of an error body worth showing


def chat_url(base_url: str) -> str:
    """The chat-completions URL for a server root, a ``/v1`` root or the full URL.

    >>> chat_url("http://127.0.0.1:8080"), chat_url("http://h/v1/")
    ('http://127.0.0.1:8080/v1/chat/completions', 'http://h/v1/chat/completions')
    >>> chat_url("http://h/v1/chat/completions")
    'http://h/v1/chat/completions'
    """
    url = base_url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise LLMError(f"LLM URL must start with http:// or https://, got {base_url!r}")
    if url.endswith("/chat/completions"):
        return url
    if url.endswith("/v1"):
        return f"{url}/chat/completions"
    return f"{url}/v1/chat/completions"


def chat_client(timeout: float = DEFAULT_TIMEOUT) -> "ChatClient":
    """The chat endpoint this process's environment names: the one client ``citeline ask
    --generate``, ``Index.ask`` and the HTTP app all build (``ChatClient.from_env``).

    Raises:
        LLMError: no endpoint configured.
    """
    return ChatClient.from_env(os.environ, timeout)


@dataclass(frozen=True)
class ChatClient:
    """One chat model behind an OpenAI-compatible endpoint."""

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_env(cls, env: Mapping[str, str], timeout: float = DEFAULT_TIMEOUT) -> "ChatClient":
        """Read ``CITELINE_LLM_URL``, ``CITELINE_LLM_MODEL`` and optional ``CITELINE_LLM_API_KEY``,
        each falling back to the standard ``OPENAI_BASE_URL``, ``OPENAI_MODEL``, ``OPENAI_API_KEY``.
        Every caller (``citeline ask --generate``, ``Index.ask``, the HTTP app) reads them here.

        >>> ChatClient.from_env({"OPENAI_BASE_URL": "http://h:1/v1", "OPENAI_MODEL": "m",
        ...                      "CITELINE_LLM_MODEL": "mine"})
        ChatClient(url='http://h:1/v1', model='mine', timeout=120.0)

        Raises:
            LLMError: if the URL or the model is not set.
        """
        env = {name: env.get(name) or env.get(fallback, "") for name, fallback in _FALLBACKS.items()}
        missing = [name for name in (ENV_URL, ENV_MODEL) if not env.get(name)]
        if missing:
            err = LLMError(f"no chat endpoint configured: {', '.join(missing)} not set")
            err.add_note(
                f"Help: set {ENV_URL}=http://127.0.0.1:8080 and {ENV_MODEL}=<model name> "
                "(or OPENAI_BASE_URL and OPENAI_MODEL; any OpenAI-compatible server: llama.cpp, vLLM, Ollama)."
            )
            raise err
        return cls(env[ENV_URL], env[ENV_MODEL], env.get(ENV_API_KEY) or None, timeout)

    def complete(self, prompt: str, max_tokens: int | None = None) -> str:
        """Send ``prompt`` as one user message and return the reply text.

        Args:
            prompt: the full prompt (see query/prompt.py).
            max_tokens: an upper bound on the reply length; None leaves it to the server.

        Returns:
            The content of the first choice's message.

        Raises:
            LLMError: on a connection failure, a timeout, an HTTP error status, or a
                reply without a text answer.
        """
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "stream": False,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return _answer_text(self._post(body))

    def stream(self, prompt: str, max_tokens: int | None = None) -> Iterator[str]:
        """Send ``prompt`` with ``stream: true`` and yield the reply's text as it arrives.

        The server answers with server-sent events, one ``data: {json}`` line per delta
        (``choices[0].delta.content``), ended by ``data: [DONE]``.

        Raises:
            LLMError: as :meth:`complete`; also when the stream ends with no text.
        """
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": 0, "stream": True}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        url = chat_url(self.url)
        produced = False
        with self._open(body) as response:
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line.removeprefix("data:").strip()
                if data == "[DONE]":
                    break
                text = _delta_text(data, url)
                if text:
                    produced = True
                    yield text
        if not produced:
            raise LLMError("the model returned an empty answer")

    def _post(self, body: dict) -> dict:
        url = chat_url(self.url)
        with self._open(body) as response:
            raw = response.read()
        try:
            return json.loads(raw)
        except ValueError as exc:
            snippet = raw[:_SNIPPET].decode("utf-8", "replace")
            raise LLMError(f"{url} returned something other than JSON: {snippet!r}") from exc

    def _open(self, body: dict):
        """The open HTTP response to ``body``; every failure to get one is an ``LLMError``."""
        url = chat_url(self.url)
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers=self._headers(), method="POST"
        )
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:_SNIPPET]
            raise LLMError(f"{url} answered HTTP {exc.code} {exc.reason}: {detail}") from exc
        except (TimeoutError, socket.timeout) as exc:
            raise LLMError(f"{url} did not answer within {self.timeout:g} s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise LLMError(f"{url} did not answer within {self.timeout:g} s") from exc
            raise LLMError(f"cannot reach {url}: {exc.reason}") from exc

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers


def _delta_text(data: str, url: str) -> str:
    """The text of one streamed chunk (``choices[0].delta.content``; "" for a role-only delta)."""
    try:
        return json.loads(data)["choices"][0]["delta"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise LLMError(f"{url} streamed something other than a chat delta: {data[:_SNIPPET]!r}") from exc


def _answer_text(reply: dict) -> str:
    """The first choice's message content; anything else is the server's fault."""
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMError(f"reply has no choices[0].message.content: {str(reply)[:_SNIPPET]}") from exc
    if not isinstance(content, str) or not content.strip():
        raise LLMError("the model returned an empty answer")
    return content
