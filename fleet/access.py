"""Who sees what. Operators and researchers see the whole fleet; a team member sees their teams."""

OPERATORS_GROUP = "operators"
RESEARCHERS_GROUP = "researchers"


def is_operator(user) -> bool:
    return user.is_authenticated and (user.is_superuser or OPERATORS_GROUP in group_names(user))


def is_researcher(user) -> bool:
    return user.is_authenticated and RESEARCHERS_GROUP in group_names(user)


def group_names(user) -> frozenset[str]:
    """The user's groups, read once per user object: a page asks who its viewer is several times
    (navigation, scoping, the view itself), and `request.user` lives for one request."""
    names = getattr(user, "_fleet_group_names", None)
    if names is None:
        names = user._fleet_group_names = frozenset(user.groups.values_list("name", flat=True))
    return names


def sees_whole_fleet(user) -> bool:
    return is_operator(user) or is_researcher(user)


def operator_required(view):
    """Login, then operators only; to anyone else the page does not exist (404, not 403)."""
    from functools import wraps

    from django.contrib.auth.decorators import login_required
    from django.http import Http404

    @wraps(view)
    @login_required
    def wrapped(request, *args, **kwargs):
        if not is_operator(request.user):
            raise Http404
        return view(request, *args, **kwargs)

    return wrapped
