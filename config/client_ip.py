"""The address a request came from, for login throttling (django-axes' `AXES_CLIENT_IP_CALLABLE`).

Behind a reverse proxy every request's REMOTE_ADDR is the proxy's: throttled by (username, that
address), five wrong passwords from anyone locked the user out for everyone. Each proxy appends the
address it received the request from to X-Forwarded-For, so with `TRUSTED_PROXIES` = n proxies in
front, the client is the n-th address from the right: what the outermost proxy saw. Anything left of
it was written by the client and is ignored, so a forged header neither escapes a lockout nor
charges another address. With 0 (the default: reached directly) the header is not read at all.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def client_ip(request) -> str:
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = getattr(settings, "TRUSTED_PROXIES", 0)
    if not proxies:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    if len(forwarded) < proxies:  # not through every proxy (or none added the header)
        return remote
    candidate = forwarded[-proxies]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:  # not an address (a misconfigured proxy): the proxy's own, as without the setting
        return remote
