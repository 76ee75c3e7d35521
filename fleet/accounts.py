"""A forgotten password: Django's own reset flow (django.contrib.auth.views), its mail sent by a task.

The form answers the same whether or not the address has an account (Django's view always goes on
to "check your mail"), and it only queues the mail: with a worker the page does not wait for the
mail server, so it answers as fast for an address without an account. An account is sent one mail
per PASSWORD_RESET_MAIL_MINUTES, however often its address is entered, so the form cannot flood a
mailbox; with REDIS_URL the limit is kept in Redis (the cache, config/settings.py), so it holds across
the web processes, and a worker whose mail failed frees it. The link goes to PUBLIC_BASE_URL, never
to the host the request named, and works once (Django's token changes with the password), for
PASSWORD_RESET_TIMEOUT.

Also a person's own settings page (the password page, where their name in the top bar leads): the
time zone pages show their times in (fleet.timezones, config.middleware.UserTimeZoneMiddleware).
"""

from __future__ import annotations

import logging

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.tokens import default_token_generator
from django.core.cache import cache
from django.core.mail import EmailMessage
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.views.decorators.http import require_http_methods

from config.url_prefix import public_url
from fleet import timezones
from fleet.tasking import QueueUnreachable, publish

logger = logging.getLogger(__name__)


def _cooldown_key(user_id: int) -> str:
    return f"password-reset-mail:{user_id}"


def claim_cooldown(user_id: int) -> bool:
    """Start the account's PASSWORD_RESET_MAIL_MINUTES without a mail; False when one runs already, or
    when the cache (Redis, with REDIS_URL: the same in every process) cannot be reached, as then the
    queue on it cannot take the mail either. Never raises: the page must look the same."""
    try:
        return cache.add(_cooldown_key(user_id), True, settings.PASSWORD_RESET_MAIL_MINUTES * 60)
    except Exception as exc:  # redis.ConnectionError and kin; the backend is a setting
        logger.warning("No password reset mail for user %s: the cache could not be reached: %s", user_id, exc)
        return False


class PasswordResetForm(auth_forms.PasswordResetForm):
    def save(self, **ignored) -> None:
        """Queue a reset mail for each active account of this address with a password, at most one per
        account per PASSWORD_RESET_MAIL_MINUTES. The view's mail options (domain, templates) are
        ignored: the mail is built by `reset_mail`, with PUBLIC_BASE_URL."""
        from fleet.tasks import send_password_reset_task

        for user in self.get_users(self.cleaned_data["email"]):
            if claim_cooldown(user.pk):
                try:
                    publish(send_password_reset_task, (user.pk,), not_done="no reset mail was sent")
                except QueueUnreachable:  # logged; the page must look the same, mailed or not
                    forget_cooldown(user.pk)


def reset_mail(user) -> EmailMessage:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    context = {
        "user": user,
        "link": public_url(reverse("password_reset_confirm", args=[uid, token])),
        "login": public_url(reverse("login")),
        "valid_minutes": settings.PASSWORD_RESET_TIMEOUT // 60,
    }
    subject = "".join(render_to_string("registration/password_reset_subject.txt", context).splitlines())
    body = render_to_string("registration/password_reset_email.txt", context)
    return EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [user.email])


def send_reset_mail(user_id: int) -> bool:
    """Send the reset mail to an account that still may have one; False when it no longer may."""
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is None or not user.has_usable_password() or not user.email:
        return False
    reset_mail(user).send()
    return True


def forget_cooldown(user_id: int) -> None:
    """A mail that could not be sent: the person may ask again at once (in every process: a worker
    frees what the web process claimed)."""
    try:
        cache.delete(_cooldown_key(user_id))
    except Exception as exc:  # the cooldown then runs out by itself
        logger.warning("The password reset limit of user %s could not be freed: %s", user_id, exc)


# --- A person's own settings: the password page, and the time zone pages show times in ---------------


class TimeZoneForm(forms.Form):
    time_zone = forms.CharField(
        max_length=64,
        label="Time zone",
        help_text="An IANA name, such as Europe/Berlin or America/New_York. Exports, the API, mails and "
        "the dashboard's periods (whole days and weeks) stay in UTC.",
        widget=forms.TextInput(attrs={"list": "time-zone-names", "autocomplete": "off", "spellcheck": "false"}),
    )

    def clean_time_zone(self) -> str:
        name = self.cleaned_data["time_zone"]
        spelled = timezones.canonical(name)
        if spelled is None:
            timezones.validate_time_zone(name)  # raises, saying what it refuses
        return spelled


def time_zone_context(user, form: TimeZoneForm | None = None) -> dict:
    """What the settings page needs for its time zone form."""
    if form is None:
        form = TimeZoneForm(initial={"time_zone": chosen_time_zone(user)})
    return {
        "time_zone_form": form,
        "time_zone_names": timezones.names(),
        # An account made by single sign-on (fleet/sso.py) has no password here to change.
        "sso_provider": settings.OIDC_PROVIDER_NAME if settings.OIDC_ENABLED else "single sign-on",
    }


def chosen_time_zone(user) -> str:
    """The zone the user chose, or UTC: from the profile loaded with a logged-in user (fleet.auth), else
    fetched (and kept on the user for the rest of the request)."""
    from fleet.models import UserProfile

    try:
        return user.profile.time_zone or timezones.DEFAULT
    except UserProfile.DoesNotExist:
        return timezones.DEFAULT


def without_autofocus(form):
    """Django's password form puts the cursor in Old password: on the settings page that is past the time
    zone form above it, where a keyboard or screen reader user who came to change their zone would start."""
    form.fields["old_password"].widget.attrs.pop("autofocus", None)
    return form


class SettingsView(auth_views.PasswordChangeView):
    """The page a person's name in the top bar leads to: their time zone, and their password."""

    http_method_names = ["get", "post", "head", "options"]  # a form is posted, nothing else

    def get_form(self, form_class=None):
        return without_autofocus(super().get_form(form_class))

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | time_zone_context(self.request.user)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def time_zone_view(request):
    """Saves the time zone chosen on the settings page; the page itself answers a GET."""
    from fleet.models import UserProfile

    if request.method != "POST":
        return redirect("password_change")
    form = TimeZoneForm(request.POST)
    if not form.is_valid():
        context = {"form": without_autofocus(auth_forms.PasswordChangeForm(request.user))}
        context |= time_zone_context(request.user, form)
        return render(request, "registration/password_change_form.html", context)
    UserProfile.objects.update_or_create(user=request.user, defaults={"time_zone": form.cleaned_data["time_zone"]})
    messages.success(request, f"Times are now shown in {form.cleaned_data['time_zone']}.")
    return redirect("password_change")
