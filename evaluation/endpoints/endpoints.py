"""The endpoints a run talks to: URLs from options and files, and the provider (one endpoint, a fleet
or a built-in baseline) built from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from envsim.evaluation.errors import InvalidOption


def endpoint_urls(base_urls: tuple[str, ...] | list[str], url_file: Path | None) -> list[str]:
    """``--base-url`` values (repeatable) and the URLs of ``--base-url-file``, in order, without repeats."""
    from envsim.evaluation.endpoints.fleet import read_url_file

    urls = [u.strip() for u in base_urls if u.strip()]
    if url_file is not None:
        try:
            urls += read_url_file(url_file)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidOption("--base-url-file", f"cannot read {url_file}: {exc}") from None
        if not urls:
            raise InvalidOption("--base-url-file", f"{url_file} lists no endpoint")
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        raise InvalidOption("--base-url", f"not an http(s) URL: {', '.join(bad)}")
    return list(dict.fromkeys(urls))


def make_endpoint_provider(model: str, urls: list[str], log: Callable[[str], None] | None = None,
                           **kwargs: Any) -> Any:
    """One endpoint (or none: the built-in baselines) as before; several as a ``FleetProvider`` whose
    warnings go to ``log``."""
    from envsim.evaluation.endpoints.providers import make_provider

    if len(urls) <= 1:
        return make_provider(model, urls[0] if urls else None, **kwargs)
    from envsim.evaluation.endpoints.fleet import make_fleet

    return make_fleet(model, urls, log=log or (lambda text: None), **kwargs)
