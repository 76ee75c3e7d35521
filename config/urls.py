from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path, reverse_lazy

from config.api import api_not_found
from config.methods import with_form
from fleet import personal_tokens
from fleet.accounts import PasswordResetForm, SettingsView, time_zone_view
from fleet.sso import SsoLoginView, SsoLogoutView, admin_logout, sso_callback, sso_login
from triage.views import metrics

# Django's form views take PUT as a POST (ProcessFormView.put): a form is posted, nothing else.
FORM = ["get", "post", "head", "options"]

# The admin's "View site": the overview, under the prefix the site is served under (URL_PREFIX); the
# admin's default "/" became the bare prefix (/triage), a redirect away through the proxy at best.
admin.site.site_url = reverse_lazy("dashboard:home")


def admin_site_urls():
    """The admin site's URLs with its logout (admin:logout, the "Log out" in its header) replaced by
    fleet.sso.admin_logout: the same logout as /logout/ for a single sign-on session, ending the
    provider's session too; the admin's own for a local account."""
    patterns, app_name, namespace = admin.site.urls
    patterns = [
        path("logout/", admin_logout, name="logout") if getattr(pattern, "name", None) == "logout" else pattern
        for pattern in patterns
    ]
    return patterns, app_name, namespace


urlpatterns = [
    path("login/", SsoLoginView.as_view(http_method_names=FORM), name="login"),
    # Single sign-on (fleet/sso.py): to the provider and back; 404 unless OIDC_ISSUER is set.
    path("login/sso/", sso_login, name="sso-login"),
    path("login/sso/callback/", sso_callback, name="sso-callback"),
    # A POST; for a single sign-on session it goes on to end the provider's session (fleet/sso.py).
    path("logout/", SsoLogoutView.as_view(), name="logout"),
    # A person changes the password an operator gave them (the other sessions are logged out).
    # Their settings page (its address kept from when it was only that): the time zone pages show
    # times in, posted to the address below, and the password.
    path("password/", SettingsView.as_view(), name="password_change"),
    path("account/time-zone/", time_zone_view, name="account-time-zone"),
    # Their own read-only API tokens, for their scripts and notebooks (fleet/personal_tokens.py).
    path("account/tokens/", personal_tokens.token_list, name="account-tokens"),
    path("account/tokens/<str:prefix>/revoke/", personal_tokens.token_revoke, name="account-token-revoke"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    # A forgotten password: Django's reset flow, its mail queued (fleet.accounts); no page says
    # whether an address has an account.
    path(
        "password/reset/",
        auth_views.PasswordResetView.as_view(form_class=PasswordResetForm, http_method_names=FORM),
        name="password_reset",
    ),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password/reset/<uidb64>/<token>/",
        # Wrapped: for a link that does not work it answers every method itself, before the class checks.
        with_form(auth_views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path("password/reset/complete/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("admin/", admin_site_urls()),
    path("metrics", metrics, name="metrics"),  # where a Prometheus scrape job looks by default
    path("api/v1/", include("config.api")),
    re_path(r"^api(?:/|$)", api_not_found, name="api-not-found"),  # /api/v1 itself, another version
    path("digests/", include("triage.digests.urls")),
    path("", include("triage.dashboard.urls")),
    path("triage/", include("triage.urls")),
    path("studies/", include("triage.labeling.urls")),
    path("connectors/", include("fleet.connectors.urls")),
    path("", include("fleet.urls")),
]

# JSON under /api/, the HTML page elsewhere.
handler400 = "config.api.bad_request"
handler404 = "config.api.page_not_found"
handler500 = "config.api.server_error"
