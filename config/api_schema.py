"""The API's OpenAPI schema: drf-spectacular's, with the error responses every operation can give.

drf-spectacular documents what a view returns when all goes well. A client generated from the
schema (or a contract test) also needs the refusals DRF itself sends, so they are added here once
for every operation instead of on each view:

- 400 with the messages per field or query parameter: every operation takes a query string, and
  a NUL character in it is refused before the view (`config.middleware`), besides what an operation
  checks itself (a body, a list's filters);
- 401 with a `detail` and `WWW-Authenticate`, where an operation needs a login or a machine token
  and the request has neither, or a token that cannot be used (malformed, unknown, a wrong secret,
  revoked, expired); the detail says which;
- 403 with a `detail`, for a person or a token not allowed to do this (a token is told what it may not do);
- 404 with a `detail`, for an object that does not exist or is not visible to the caller, and for a
  list's page past the last;
- 406 with a `detail`, for an Accept header naming no type the operation answers;
- 415 with a `detail`, for a body of a type the operation does not take, and 411 for a multipart
  body sent chunked without a length (`fleet.uploads`).

An operation that documents one of these codes itself keeps its own. A body given inline as a
schema with required fields (the archive upload's) is marked required, as a serializer's is.
"""

from __future__ import annotations

from django.urls import get_script_prefix
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_array_type, build_basic_type, build_object_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny


class ErrorSerializer(serializers.Serializer):
    """A refusal that is not about one field, with its reason."""

    detail = serializers.CharField(help_text="What went wrong, in words.")


FIELD_ERRORS = OpenApiResponse(
    build_object_type(additionalProperties=build_array_type(build_basic_type(OpenApiTypes.STR))),
    description="Invalid input: each field or query parameter in error, with its messages.",
)
UNAUTHENTICATED = OpenApiResponse(
    ErrorSerializer,
    description="Not logged in and no machine token, or a machine token that cannot be used (what is wrong, in words).",
)
REFUSED = OpenApiResponse(ErrorSerializer, description="Not allowed to do this (a token: what it may not do).")
NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No such object visible to you, or a page past the last one.")
NOT_ACCEPTABLE = OpenApiResponse(
    ErrorSerializer, description="The Accept header names no type this operation answers (see its 200)."
)
LENGTH_REQUIRED = OpenApiResponse(
    ErrorSerializer, description="A multipart body sent chunked, without a Content-Length: send its length."
)
UNSUPPORTED_MEDIA_TYPE = OpenApiResponse(
    ErrorSerializer, description="The body is not of the type this operation takes (see its request body)."
)


class FleetAutoSchema(AutoSchema):
    def _get_request_body(self, direction="request"):
        body = super()._get_request_body(direction)
        if body and any(media.get("schema", {}).get("required") for media in body.get("content", {}).values()):
            body["required"] = True
        return body

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction == "response":
            for code, response in self._error_responses().items():
                if code not in responses:
                    responses[code] = self._get_response_for_code(response, code, direction=direction)
        return responses

    def _error_responses(self) -> dict[str, OpenApiResponse]:
        listing = self.method == "GET" and self._is_list_view()
        errors = {"400": FIELD_ERRORS}
        if not all(isinstance(permission, AllowAny) for permission in self.view.get_permissions()):
            errors["401"] = UNAUTHENTICATED
            errors["403"] = REFUSED
        if "{" in self.path or (listing and self._get_paginator()):
            errors["404"] = NOT_FOUND
        errors["406"] = NOT_ACCEPTABLE  # DRF negotiates the Accept header of every request
        if self.method in ("POST", "PUT", "PATCH"):
            errors["415"] = UNSUPPORTED_MEDIA_TYPE
            if any(media.startswith("multipart/") for media in self.map_parsers()):
                errors["411"] = LENGTH_REQUIRED  # fleet.uploads.UploadLimitMiddleware
        return errors


def without_slashless_twins(endpoints):
    """drf-spectacular's preprocessing hook: the schema documents each address once, with its
    trailing slash, not also the twin `config.api.Router` adds without it."""
    return [endpoint for endpoint in endpoints if endpoint[0].endswith("/")]


def served_under_prefix(result, generator, request, public):
    """drf-spectacular's postprocessing hook: served under a path prefix (URL_PREFIX, or a proxy's
    SCRIPT_NAME), the schema names it as its server, `servers: [{url: /triage}]`, a path relative to
    the schema's own address; its paths (/api/v1/jobs/) are then the server's, as a client generated
    from it or Swagger UI reads them. Without a prefix, no server: the schema's own host."""
    prefix = get_script_prefix().rstrip("/")
    if prefix:
        result["servers"] = [{"url": prefix}]
    return result
