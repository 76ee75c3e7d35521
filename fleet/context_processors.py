from fleet.access import is_operator, is_researcher


def roles(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"is_operator": False, "is_researcher": False}
    return {"is_operator": is_operator(user), "is_researcher": is_researcher(user)}
