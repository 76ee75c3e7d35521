"""The admin site: Django's, with the length of a search capped for every list it serves.

SQLite, the embedded default, fails a LIKE pattern over 50,000 bytes ("LIKE or GLOB pattern too
complex"), so a long ?q= on any list with a search box was a server error: ours, Django's users and
groups, django-axes' and the API keys'. The cap is the site's, not each ModelAdmin's, so an admin
registered later is covered too; it applies on PostgreSQL alike (docs/access-control.md, hostile input).
INSTALLED_APPS names FleetAdminConfig in place of "django.contrib.admin", which makes FleetAdminSite the
site that admin.site and @admin.register use.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.apps import AdminConfig
from django.contrib.admin.views.main import SEARCH_VAR
from django.http import HttpResponseRedirect, JsonResponse

# As the jobs list's search (triage/dashboard/filters.py, JobFilter.q).
ADMIN_SEARCH_MAX_LENGTH = 500


class FleetAdminSite(admin.AdminSite):
    def admin_view(self, view, cacheable=False):
        wrapped = super().admin_view(view, cacheable)

        def view_with_capped_search(request, *args, **kwargs):
            # Django sets request.resolver_match before it calls the view; a list's is "<app>_<model>_changelist".
            match = request.resolver_match
            term = request.GET.get(SEARCH_VAR, "")
            if match and (match.url_name or "").endswith("_changelist") and len(term) > ADMIN_SEARCH_MAX_LENGTH:
                if not self.has_permission(request):
                    return wrapped(request, *args, **kwargs)  # to the admin's login, as without the search
                messages.warning(
                    request,
                    f"A search takes at most {ADMIN_SEARCH_MAX_LENGTH} characters (this one had {len(term)}); "
                    "the list is shown unsearched.",
                )
                # The list's other parameters (its order, filters, a popup's) are kept; a POSTed action is not run.
                query = request.GET.copy()
                del query[SEARCH_VAR]
                return HttpResponseRedirect(request.path + (f"?{query.urlencode()}" if query else ""))
            return wrapped(request, *args, **kwargs)

        return view_with_capped_search

    def autocomplete_view(self, request):
        # A select box's search (autocomplete_fields) runs the target admin's search the same way.
        if len(request.GET.get("term", "")) > ADMIN_SEARCH_MAX_LENGTH:
            return JsonResponse({"results": [], "pagination": {"more": False}})
        return super().autocomplete_view(request)


class FleetAdminConfig(AdminConfig):
    default_site = "config.admin_site.FleetAdminSite"
