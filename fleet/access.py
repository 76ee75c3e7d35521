"""Who sees what. Operators and researchers see the whole fleet; a team member sees their teams."""

OPERATORS_GROUP = "operators"
RESEARCHERS_GROUP = "researchers"


def is_operator(user) -> bool:
    return user.is_authenticated and (user.is_superuser or user.groups.filter(name=OPERATORS_GROUP).exists())


def is_researcher(user) -> bool:
    return user.is_authenticated and user.groups.filter(name=RESEARCHERS_GROUP).exists()


def sees_whole_fleet(user) -> bool:
    return is_operator(user) or is_researcher(user)
