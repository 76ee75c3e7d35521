from django.utils import timezone

from fleet.access import is_operator, is_researcher


def roles(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"is_operator": False, "is_researcher": False}
    return {"is_operator": is_operator(user), "is_researcher": is_researcher(user)}


def time_zone(request):
    """The zone times are shown in (config.middleware.UserTimeZoneMiddleware), for the labels that
    name it: "Europe/Berlin", or "UTC" for anyone who chose none."""
    return {"time_zone": timezone.get_current_timezone_name()}
