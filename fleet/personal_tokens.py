"""A person's own API tokens: made, listed and revoked on their page (/account/tokens/).

A personal token reads the API as its owner (fleet.tokens.PersonalTokenAuthentication), for their
scripts and notebooks, as a GitHub or GitLab personal access token does; it only reads. Its key is
shown once, on the page that made it: djangorestframework-api-key keeps a prefix and a hash only.
Each has an expiry date, at most a year away, and a person holds at most PERSONAL_TOKENS_PER_USER
live ones (neither revoked nor expired) at once. Making and revoking one is in the audit log, as a
machine token's is; an operator revokes anyone's on the tokens page (`revoke`, called by both).
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Case, Q, Value, When
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from config.methods import with_form
from fleet import audit
from fleet.models import PersonalToken

# How long a new token lasts, in days: a choice, at most a year (a token that never expires is a
# secret that outlives the script it was made for).
LIFETIMES = [(7, "7 days"), (30, "30 days"), (90, "90 days"), (180, "180 days"), (365, "1 year")]
DEFAULT_LIFETIME = 90


class PersonalTokenForm(forms.Form):
    name = forms.CharField(
        max_length=50,
        label="Name",
        help_text="What will use it, e.g. “weekly notebook” or “laptop script”.",
        error_messages={"required": "Give the token a name, e.g. the script or notebook that will use it."},
    )
    lifetime = forms.TypedChoiceField(
        choices=LIFETIMES,
        coerce=int,
        initial=DEFAULT_LIFETIME,
        label="Expires after",
        help_text="At most a year; make a new one when it expires.",
        error_messages={
            "invalid_choice": "Choose how long the token lasts: 7, 30, 90 or 180 days, or 1 year.",
            "required": "Choose how long the token lasts.",
        },
    )

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the token a name, e.g. the script or notebook that will use it.")
        return name


def live(tokens):
    """The tokens that still read: neither revoked nor expired."""
    return tokens.filter(Q(expiry_date__isnull=True) | Q(expiry_date__gt=timezone.now()), revoked=False)


class TooManyTokens(Exception):
    """The person already has PERSONAL_TOKENS_PER_USER live tokens; the message says what to do."""


def create(owner, name: str, lifetime_days: int) -> tuple[PersonalToken, str]:
    """A new token of `owner`'s and its key (to show once), in the audit log; TooManyTokens when they
    already have PERSONAL_TOKENS_PER_USER live ones.

    A cap on the live ones, as GitHub and GitLab have: each is a secret somewhere, and an unbounded
    number is a script making one a run. Revoked and expired ones read nothing. The count and the new
    token are made under a lock on the owner's row (on PostgreSQL; SQLite has one writer at a time),
    so two made at once (two tabs, a double click) cannot both pass the count."""
    limit = settings.PERSONAL_TOKENS_PER_USER
    with transaction.atomic():
        get_user_model().objects.select_for_update(no_key=True).get(pk=owner.pk)
        if live(PersonalToken.objects.filter(owner=owner)).count() >= limit:
            raise TooManyTokens(
                f"You already have {limit} active tokens, the most one person may have. "
                "Revoke one you no longer use below, then create this one."
            )
        expiry = timezone.now() + timedelta(days=lifetime_days)
        token, key = PersonalToken.objects.create_key(owner=owner, name=name, expiry_date=expiry)
        audit.record(owner, "personal_token.create", token, details(token))
    return token, key


def revoke(actor, token: PersonalToken) -> bool:
    """Revoke for good (the owner, or an operator), in the audit log; False when it already was."""
    if token.revoked:
        return False
    token.revoked = True
    token.save(update_fields=["revoked"])
    audit.record(actor, "personal_token.revoke", token, details(token))
    return True


def details(token: PersonalToken) -> dict:
    """What an audit entry keeps of a personal token (never its key)."""
    return {
        "prefix": token.prefix,
        "owner": token.owner.get_username(),
        "expires": token.expiry_date.isoformat() if token.expiry_date else None,
    }


# In the order the lists show them, and the order a request with one is refused in (fleet.tokens):
# revoked before expired before an owner deactivated.
STATES = ("active", "owner deactivated", "expired", "revoked")


def with_state(tokens):
    """The tokens, each with `state`: active, owner deactivated (it reads nothing while the account
    is), expired or revoked."""
    now = timezone.now()
    for token in tokens:
        if token.revoked:
            token.state = "revoked"
        elif token.expiry_date is not None and token.expiry_date < now:
            token.state = "expired"
        elif not token.owner.is_active:
            token.state = "owner deactivated"
        else:
            token.state = "active"
    return tokens


def in_state_order(tokens):
    """A query of tokens ordered as STATES, then newest first (in the database, so it pages)."""
    now = timezone.now()
    order = Case(
        When(revoked=True, then=Value(STATES.index("revoked"))),
        When(expiry_date__lt=now, then=Value(STATES.index("expired"))),
        When(owner__is_active=False, then=Value(STATES.index("owner deactivated"))),
        default=Value(STATES.index("active")),
    )
    return tokens.annotate(state_order=order).order_by("state_order", "-created")


@login_required
@with_form
def token_list(request):
    """The signed-in person's own tokens: make one (its key shown this once), see when each was last
    used and when it expires, revoke. Nobody else's are listed or reachable here."""
    created, created_key = None, None
    form = PersonalTokenForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():  # else the form again, with its errors
        try:
            created, created_key = create(request.user, form.cleaned_data["name"], form.cleaned_data["lifetime"])
        except TooManyTokens as refused:
            form.add_error(None, str(refused))
        else:
            messages.success(request, f"Token “{created.name}” created. Copy it now: it is not shown again.")
            form = PersonalTokenForm()
    # The usable ones first, then the expired, then the revoked; newest first in each.
    tokens = with_state(list(PersonalToken.objects.filter(owner=request.user).order_by("-created")))
    tokens.sort(key=lambda token: STATES.index(token.state))
    context = {"form": form, "tokens": tokens, "created": created, "created_key": created_key}
    return render(request, "fleet/personal_token_list.html", context)


@login_required
@require_POST
def token_revoke(request, prefix: str):
    """Revoke one of one's own tokens, named by its prefix (its id holds the key's hash, which an address
    must not); another person's is a 404, as if it did not exist."""
    token = get_object_or_404(PersonalToken.objects.select_related("owner"), prefix=prefix, owner=request.user)
    if revoke(request.user, token):
        messages.success(request, f"Token “{token.name}” ({token.prefix}…) is revoked; requests with it are refused.")
    return redirect("account-tokens")
