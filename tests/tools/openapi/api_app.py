"""A tiny real API with its own generated OpenAPI 3.1 document (FastAPI), served by uvicorn
on a free loopback port for the duration of a test."""

# No `from __future__ import annotations`: FastAPI reads these annotations at run time.
from contextlib import AbstractContextManager
from typing import Annotated, Any

from fastapi import FastAPI, Header, HTTPException, Query
from pydantic import BaseModel, Field

from tests.httpserver import serving_asgi

API_KEY = "test-key-5f2a9c"


def make_app() -> FastAPI:
    app = FastAPI(title="Inventory", version="1.0")
    items: dict[int, dict[str, object]] = {1: {"id": 1, "name": "bolt", "qty": 10}}

    class NewItem(BaseModel):
        name: str = Field(description="Item name")
        qty: int = Field(ge=0, description="How many")

    def check(key: str | None) -> None:
        if key != API_KEY:
            raise HTTPException(status_code=401, detail="bad or missing API key")

    @app.get("/items/{item_id}", operation_id="get_item", summary="Get one item")
    def get_item(
        item_id: int,
        verbose: Annotated[bool, Query(description="Include the echo")] = False,
        x_api_key: Annotated[str | None, Header()] = None,
    ) -> dict[str, object]:
        check(x_api_key)
        if item_id not in items:
            raise HTTPException(status_code=404, detail="no such item")
        out = dict(items[item_id])
        if verbose:
            out["echo"] = {"item_id": item_id, "verbose": verbose}
        return out

    @app.post("/items", operation_id="create_item", summary="Create an item")
    def create_item(
        item: NewItem, x_api_key: Annotated[str | None, Header()] = None
    ) -> dict[str, object]:
        check(x_api_key)
        new_id = max(items) + 1
        items[new_id] = {"id": new_id, **item.model_dump()}
        return items[new_id]

    @app.get("/search", operation_id="search_items", summary="Search items by name")
    def search(
        q: Annotated[str, Query(min_length=1)], x_api_key: Annotated[str | None, Header()] = None
    ) -> list[dict[str, object]]:
        check(x_api_key)
        return [i for i in items.values() if q in str(i["name"])]

    return app


def serve(app: object) -> AbstractContextManager[str]:
    """``app`` on a free loopback port; yields its base URL."""
    return serving_asgi(app, lifespan="on")


def api_import(api: str, *, name: str, secret: str, user: Any, **options: Any) -> Any:
    """``api``'s generated document imported as a source calling it with an API key header
    (loopback allowed for both the document and the calls); ``options`` go to the import."""
    from tools_app.executors.openapi.importer import openapi_fetch, openapi_import

    url = f"{api}/openapi.json"
    return openapi_import(
        name=name,
        text=openapi_fetch(url, document_private=True),
        document_url=url,
        auth={"type": "api_key", "in": "header", "name": "X-API-Key"},
        secret=secret,
        api_private=True,
        user=user,
        **options,
    )
