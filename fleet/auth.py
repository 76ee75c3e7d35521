"""Authentication backends that fetch a user with their profile (fleet.UserProfile: the time zone every
page is shown in, config.middleware.UserTimeZoneMiddleware) in one query: Django's own asked for the user,
and then each page asked again for their zone."""

from __future__ import annotations

from django.contrib.auth import backends, get_user_model


def get_user_with_profile(user_id):
    """The user of a session with their profile (None when they have none, asked no further), or None."""
    try:
        return get_user_model()._default_manager.select_related("profile").get(pk=user_id)
    except get_user_model().DoesNotExist:
        return None


class ModelBackend(backends.ModelBackend):
    """Django's username and password backend; a logged-in user is loaded with their profile."""

    def get_user(self, user_id):
        user = get_user_with_profile(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
