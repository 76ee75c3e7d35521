from django.utils import timezone
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from fleet.access import is_operator, is_researcher


def roles(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"is_operator": False, "is_researcher": False}
    return {"is_operator": is_operator(user), "is_researcher": is_researcher(user)}


def time_zone(request):
    """The zone times are shown in (config.middleware.UserTimeZoneMiddleware), for the labels that
    name it: "Europe/Berlin", or "UTC" for anyone who chose none."""
    name = timezone.get_current_timezone_name()
    # For a table's column header ("Start (America/Argentina/Buenos_Aires)"): the same words, free to
    # break after each '/', since one long unbreakable name pushed a table's last columns out of view.
    header = format_html_join(mark_safe("/<wbr>"), "{}", ((part,) for part in name.split("/")))
    return {"time_zone": name, "time_zone_in_header": header}
