"""The temporary server answers its SQLite-busy 503s again itself (runtime/busy_retry.py), on a
FastAPI app handling errors as Prefect's does: an ``Exception`` handler answering 503 for the
retryable ones and 500 for the rest, after which Starlette raises the error again."""
import asyncio

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from citeline.runtime.busy_retry import RetryWhenBusy


class Busy(Exception):
    pass


def app_busy_for(tries: int, calls: list[bytes]) -> FastAPI:
    app = FastAPI()

    @app.post("/api/echo")
    async def echo(request: Request):
        calls.append(await request.body())
        if len(calls) <= tries:
            raise Busy("database is locked")
        return {"body": calls[-1].decode()}

    @app.post("/api/broken")
    async def broken(request: Request):
        calls.append(await request.body())
        raise ValueError("not retryable")

    @app.exception_handler(Exception)
    async def as_prefect_does(request: Request, exc: Exception):
        return JSONResponse({"exception_message": "Service Unavailable" if isinstance(exc, Busy) else "Internal"},
                            status_code=503 if isinstance(exc, Busy) else 500)

    return app


def post(app, path: str, body: bytes) -> httpx.Response:
    async def go():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://server") as client:
            return await client.post(path, content=body)
    return asyncio.run(go())


def test_a_request_answered_503_is_answered_again_with_its_body():
    calls = []
    response = post(RetryWhenBusy(app_busy_for(2, calls), waits_s=(0, 0, 0)), "/api/echo", b'{"x": 1}')
    assert response.status_code == 200 and response.json() == {"body": '{"x": 1}'}
    assert calls == [b'{"x": 1}'] * 3


def test_past_the_last_wait_the_client_gets_the_503_and_its_own_back_off_follows():
    calls = []
    response = post(RetryWhenBusy(app_busy_for(10, calls), waits_s=(0, 0)), "/api/echo", b"body")
    assert response.status_code == 503 and response.json() == {"exception_message": "Service Unavailable"}
    assert len(calls) == 3


def test_any_other_answer_goes_out_at_once():
    calls = []
    response = post(RetryWhenBusy(app_busy_for(0, calls), waits_s=(0, 0)), "/api/broken", b"body")
    assert response.status_code == 500 and len(calls) == 1
    calls.clear()
    assert post(RetryWhenBusy(app_busy_for(0, calls)), "/api/echo", b"fine").json() == {"body": "fine"}
    assert len(calls) == 1
