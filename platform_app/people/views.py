"""The People pages (staff only): users and groups. Views parse with a form, call a service
and redirect; a refused change (``PeopleError``) comes back as an error message. The pages of
one's own account (Password, the set-password link) are here too, for every user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.views import PasswordChangeView, PasswordResetConfirmView
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat_app.services.member_agents import group_sharing_forbidden
from infra import access
from platform_app.people import selectors, services
from platform_app.people.forms import GroupNameForm, MembersAddForm, UserCreateForm, UserEditForm
from platform_app.people.services import PeopleError
from tools_app.services.audit import audit_people_change

V = TypeVar("V", bound=Callable[..., HttpResponseBase])


def _group_choices(
    form: UserCreateForm | UserEditForm, actor: Any, *, member_of: set[int] | None = None
) -> list[dict[str, Any]]:
    """The groups checkboxes: which are ticked (posted, or the user's) and which this admin
    may not change (shown disabled, ticked as the user's membership is: a disabled box is
    not posted)."""
    values = form["groups"].value() or []
    ticked = {str(v.pk if isinstance(v, Group) else v) for v in values}
    locked = selectors.groups_locked_for(actor)
    member_of = member_of or set()
    return [
        {
            "id": g.pk,
            "name": g.name,
            "checked": g.pk in member_of if g.pk in locked else str(g.pk) in ticked,
            "locked": g.pk in locked,
        }
        for g in Group.objects.exclude(name=services.EVERYONE).order_by("name")
    ]


def _base_url(request: HttpRequest) -> str:
    return request.build_absolute_uri("/")


def _user(user_id: int) -> Any:
    return get_object_or_404(get_user_model(), pk=user_id)


def _no_store(response: HttpResponse) -> HttpResponse:
    # A page that shows a one-time link must not be kept by the browser or a proxy.
    response["Cache-Control"] = "no-store"
    return response


# --- users ---------------------------------------------------------------------------------
@access.staff
def users(request: HttpRequest) -> HttpResponse:
    q = request.GET.get("q", "").strip()[:100]
    show = request.GET.get("show", "active")
    show = show if show in ("active", "inactive", "all") else "active"
    context = {"rows": selectors.users_rows(q=q, show=show), "q": q, "show": show}
    return render(request, "people/users.html", context)


@access.staff
@require_http_methods(["GET", "POST"])
def user_new(request: HttpRequest) -> HttpResponse:
    try:
        services.check_password_login()
    except PeopleError as exc:
        messages.error(request, exc.message)
        return redirect("people:users")
    form = UserCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user, link = services.user_create(
                actor=request.user,
                username=data["username"],
                first_name=data["first_name"],
                last_name=data["last_name"],
                email=data["email"],
                is_staff=data["is_staff"],
                groups=data["groups"],
                password=form.password,
                base_url=_base_url(request),
            )
        except PeopleError as exc:
            messages.error(request, exc.message)
        else:
            if link is None:
                messages.success(
                    request,
                    _("%(get_username)s can log in now.") % {"get_username": user.get_username()},
                )
                return redirect("people:user", user_id=user.pk)
            return _user_page(request, user, link=link, invited=True)
    context = {"form": form, "group_choices": _group_choices(form, request.user)}
    return render(request, "people/user_new.html", context)


def _edit_form(user: Any, data: Any = None) -> UserEditForm:
    initial = {
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_staff": user.is_staff,
        "groups": list(user.groups.all()),
    }
    return UserEditForm(data, initial=initial)


def _user_page(
    request: HttpRequest,
    user: Any,
    *,
    form: UserEditForm | None = None,
    link: services.PasswordLink | None = None,
    invited: bool = False,
) -> HttpResponse:
    actor = request.user
    form = form or _edit_form(user)
    context = {
        "row": selectors.user_row(user),
        "subject": user,
        "form": form,
        "group_choices": _group_choices(
            form, actor, member_of=set(user.groups.values_list("pk", flat=True))
        ),
        "link": link,
        "invited": invited,
        "is_self": user.pk == actor.pk,
        "may_change": not (user.is_superuser and not actor.is_superuser),
        "email_enabled": services.email_enabled(),
        "link_days": max(1, round(settings.PASSWORD_RESET_TIMEOUT / 86400)),
    }
    response = render(request, "people/user.html", context)
    return _no_store(response) if link else response


@access.staff
@require_http_methods(["GET", "POST"])
def user_detail(request: HttpRequest, user_id: int) -> HttpResponse:
    user = _user(user_id)
    if request.method != "POST":
        return _user_page(request, user)
    form = _edit_form(user, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        # Groups this admin may not change are shown disabled and not posted: they stay.
        locked = selectors.groups_locked_for(request.user)
        kept = [g for g in user.groups.all() if g.pk in locked]
        chosen = [g for g in data["groups"] if g.pk not in locked]
        try:
            services.user_update(
                actor=request.user,
                user=user,
                first_name=data["first_name"],
                last_name=data["last_name"],
                email=data["email"],
                is_staff=data["is_staff"],
                groups=[*chosen, *kept],
            )
        except PeopleError as exc:
            messages.error(request, exc.message)
            user.refresh_from_db()
            return _user_page(request, user, form=form)
        messages.success(
            request, _("Saved %(get_username)s.") % {"get_username": user.get_username()}
        )
        return redirect("people:user", user_id=user.pk)
    return _user_page(request, user, form=form)


@access.staff
@require_POST
def user_active(request: HttpRequest, user_id: int) -> HttpResponse:
    user = _user(user_id)
    active = request.POST.get("active") == "1"
    try:
        services.user_set_active(actor=request.user, user=user, active=active)
    except PeopleError as exc:
        messages.error(request, exc.message)
    else:
        word = "reactivated: they can log in again" if active else "deactivated"
        messages.success(
            request,
            _("%(get_username)s %(word)s.") % {"get_username": user.get_username(), "word": word},
        )
    return redirect("people:user", user_id=user.pk)


@access.staff
@require_POST
def user_password_link(request: HttpRequest, user_id: int) -> HttpResponse:
    user = _user(user_id)
    try:
        link = services.user_password_reset(
            actor=request.user, user=user, base_url=_base_url(request)
        )
    except PeopleError as exc:
        messages.error(request, exc.message)
        return redirect("people:user", user_id=user.pk)
    return _user_page(request, user, link=link)


# --- groups --------------------------------------------------------------------------------
@access.staff
@require_http_methods(["GET", "POST"])
def groups(request: HttpRequest) -> HttpResponse:
    form = GroupNameForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            group = services.group_create(actor=request.user, name=form.cleaned_data["name"])
        except PeopleError as exc:
            form.add_error("name", exc.message)
        else:
            messages.success(
                request, _("Group “%(name)s” created. Add its members here.") % {"name": group.name}
            )
            return redirect("people:group", group_id=group.pk)
    context = {
        "groups": selectors.groups_rows(),
        "form": form,
        "everyone": services.EVERYONE,
        "active_users": selectors.active_user_count(),
    }
    return render(request, "people/groups.html", context)


def _group_page(request: HttpRequest, group: Group, *, form: GroupNameForm | None = None) -> Any:
    candidates = selectors.users_not_in(group)
    context = {
        "group": group,
        "is_everyone": services.is_everyone(group),
        "form": form or GroupNameForm(initial={"name": group.name}),
        "members": selectors.group_members(group),
        "add_form": MembersAddForm(candidates=candidates),
        "candidates": candidates,
        "active_users": selectors.active_user_count(),
        "is_auditor": selectors.group_is_auditor(group),
        "is_approver": group.pk in selectors.approver_group_ids(),
        "other_permissions": selectors.group_other_permissions(group),
        "locked": group.pk in selectors.groups_locked_for(request.user),
        "grants_url": reverse("people:group_grants", args=[group.pk]),
        "sharing_forbidden": group_sharing_forbidden(group),
    }
    return render(request, "people/group.html", context)


@access.staff
@require_http_methods(["GET", "POST"])
def group_detail(request: HttpRequest, group_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id)
    if request.method != "POST":
        return _group_page(request, group)
    form = GroupNameForm(request.POST)
    if form.is_valid():
        try:
            services.group_rename(actor=request.user, group=group, name=form.cleaned_data["name"])
        except PeopleError as exc:
            form.add_error("name", exc.message)
        else:
            messages.success(request, _("Renamed to “%(name)s”.") % {"name": group.name})
            return redirect("people:group", group_id=group.pk)
    group.refresh_from_db()
    return _group_page(request, group, form=form)


@access.staff
@require_POST
def group_delete(request: HttpRequest, group_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id)
    name = group.name
    try:
        services.group_delete(actor=request.user, group=group)
    except PeopleError as exc:
        messages.error(request, exc.message)
        return redirect("people:group", group_id=group_id)
    messages.success(
        request, _("Group “%(name)s” deleted; its members keep their accounts.") % {"name": name}
    )
    return redirect("people:groups")


@access.staff
@require_POST
def group_members_add(request: HttpRequest, group_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id)
    form = MembersAddForm(request.POST, candidates=selectors.users_not_in(group))
    if not form.is_valid():
        messages.error(request, _("Pick someone to add."))
        return redirect("people:group", group_id=group.pk)
    added = list(form.cleaned_data["users"])
    try:
        services.group_members_change(actor=request.user, group=group, add=added)
    except PeopleError as exc:
        messages.error(request, exc.message)
    else:
        names = ", ".join(u.get_username() for u in added)
        messages.success(
            request, _("Added %(names)s to “%(name)s”.") % {"names": names, "name": group.name}
        )
    return redirect("people:group", group_id=group.pk)


@access.staff
@require_POST
def group_member_remove(request: HttpRequest, group_id: int, user_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id)
    user = get_object_or_404(group.user_set, pk=user_id)
    try:
        services.group_members_change(actor=request.user, group=group, remove=[user])
    except PeopleError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            _("Removed %(get_username)s from “%(name)s”.")
            % {"get_username": user.get_username(), "name": group.name},
        )
    return redirect("people:group", group_id=group.pk)


@access.staff
@require_POST
def group_auditor(request: HttpRequest, group_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id)
    auditor = request.POST.get("auditor") == "1"
    try:
        services.group_auditor_set(actor=request.user, group=group, auditor=auditor)
    except PeopleError as exc:
        messages.error(request, exc.message)
    else:
        state = "may now read" if auditor else "no longer read"
        messages.success(
            request,
            _("Members of “%(name)s” %(state)s others' conversations.")
            % {"name": group.name, "state": state},
        )
    return redirect("people:group", group_id=group.pk)


@access.staff
@require_POST
def group_sharing(request: HttpRequest, group_id: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=group_id)
    forbidden = request.POST.get("forbidden") == "1"
    services.group_sharing_set(actor=request.user, group=group, forbidden=forbidden)
    if forbidden:
        message = _("Members may no longer share agents and prompts with “%(name)s”.")
    else:
        message = _("Members may share agents and prompts with “%(name)s”.")
    messages.success(request, message % {"name": group.name})
    return redirect("people:group", group_id=group.pk)


@access.staff
@require_http_methods(["GET", "POST"])
def group_grants(request: HttpRequest, group_id: int) -> HttpResponse:
    """What the group's members may use: tool groups or single functions, imported sources,
    agent profiles. Staff may use everything whatever is ticked here."""
    group = get_object_or_404(Group, pk=group_id)
    posted = None
    if request.method == "POST":
        try:
            services.group_grants_set(
                actor=request.user,
                group=group,
                tool_groups=request.POST.getlist("tool_group"),
                functions=request.POST.getlist("function"),
                sources=request.POST.getlist("source"),
                agents=request.POST.getlist("agent"),
            )
        except PeopleError as exc:
            messages.error(request, exc.message)
            posted = request.POST
        else:
            messages.success(request, _("Saved what “%(name)s” may use.") % {"name": group.name})
            return redirect("people:group_grants", group_id=group.pk)
    context = {
        "group": group,
        "is_everyone": services.is_everyone(group),
        "editor": selectors.grant_editor(group, posted),
    }
    return render(request, "people/grants.html", context, status=400 if posted else 200)


# --- one's own account ---------------------------------------------------------------------
class PasswordChange(PasswordChangeView):
    access = access.Rule(access.SIGNED_IN)  # PasswordChangeView requires a login itself
    """Every signed-in user changes their own password here (their session stays)."""

    template_name = "people/password.html"
    success_url = reverse_lazy("account:password")

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not services.password_login_enabled():  # the page says why; nothing is changed
            return self.get(request, *args, **kwargs)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        messages.success(self.request, _("Your password is changed."))
        return response


class SetPasswordFromLink(PasswordResetConfirmView):
    access = access.Rule(access.PUBLIC, "a one-time link: its token is the credential")
    """The page of a one-time link (invitation or reset): public, works once. Django's view
    moves the token into the session and off the URL before the form is shown."""

    template_name = "people/set_password.html"
    success_url = reverse_lazy("account:set_password_done")
    post_reset_login = False

    def get_user(self, uidb64: str) -> Any:
        user = super().get_user(uidb64)
        # A deactivated account's old link sets nothing; nor does any with password login off.
        if not services.password_login_enabled():
            return None
        return user if user is not None and user.is_active else None

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        user = form.user
        audit_people_change(
            user=user,
            subject=f"user {user.get_username()}",
            action="password_set",
            before={"password": "not set"},
            after={"password": "set through the one-time link"},
        )
        return response


@access.public("the page after a one-time link was used")
def set_password_done(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        raise Http404
    return render(request, "people/set_password_done.html")
