"""Fleet's part of the JSON API (jobs, ingest runs, archive uploads).

Machines push archives with a per-machine token (`Authorization: Api-Key <token>`); people use
their session, or for their scripts a personal token that only reads (`Authorization: Bearer
<token>`, fleet.tokens). Tokens come from djangorestframework-api-key: chosen over hand-rolled tokens
(and over knox, which is built around user logins) because it is made for machine keys: the key
is shown once, only a prefix and a hash are stored, and a revoked key cannot be revived.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from config.api import router
from config.api_params import KnownParameters
from config.api_schema import ErrorSerializer
from fleet import ingest
from fleet.access import is_operator
from fleet.models import IngestRun, MachineToken

# Who may call a reading operation: a machine token, a person's own token, or a session. Pushing takes
# no personal token: those only read (`fleet.tokens.PersonalTokenAuthentication`).
API_AUTH = [{"MachineToken": []}, {"PersonalToken": []}, {"cookieAuth": []}]
PUSH_AUTH = [{"MachineToken": []}, {"cookieAuth": []}]


class TokenMay(BasePermission):
    """A machine token made to do one thing (its `flag` ticked on the tokens page): push archives,
    read the jobs, the teams' report.

    A token without the flag is refused here, naming what it may not do and the box that allows it:
    DRF's `|` drops its operands' messages, and a request with a token is no person, so nothing else
    could let it in. An operator ticks the box on the token's edit page; its key stays the same."""

    flag = ""
    may_not = ""  # "read jobs": the 403 says "This token may not read jobs; ..."

    def has_permission(self, request, view) -> bool:
        if not isinstance(request.auth, MachineToken):
            return False
        if not getattr(request.auth, self.flag):
            raise PermissionDenied(refusal(self.may_not, self.flag))
        return True


def refusal(may_not: str, flag: str) -> str:
    """A token's 403: what it may not do, and where an operator allows it (the key stays the same)."""
    return (
        f"This token may not {may_not}; an operator can allow it on the tokens page: Edit on the token's row, "
        f"then tick its box (`{flag}`). The key stays the same: the machine needs no new secret."
    )


class TokenMayPush(TokenMay):
    """A machine token made to push archives (`pushes_archives`): one made only to read (for
    Prometheus, a billing script) pushes nothing into the fleet."""

    flag, may_not = "pushes_archives", "push archives"


class TokenMayFollowRuns(TokenMay):
    """A machine token reads the ingest runs it pushed, so only one made to push archives: one made
    only to read has none, and an empty list would read as "no push has landed yet". Its list and a
    run's page are each refused as a push is, naming the box (a run pushed before the box was
    unticked included)."""

    flag = "pushes_archives"
    may_not = "read ingest runs (a token reads the runs it pushed, so only one that may push archives)"


RUNS_REFUSED = OpenApiResponse(
    ErrorSerializer,
    description="Not allowed to do this: a person who is no operator, or a machine token made without "
    "`pushes_archives` (the detail names it; a token reads only the runs it pushed).",
)


class IsOperator(BasePermission):
    def has_permission(self, request, view) -> bool:
        return is_operator(request.user)


def token_of(request) -> MachineToken | None:
    """The machine token the API request was authenticated with, if it was."""
    return request.auth if isinstance(request.auth, MachineToken) else None


class RecordErrorSerializer(serializers.Serializer):
    file = serializers.CharField()
    row = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_blank=True)
    job_id = serializers.CharField(allow_blank=True)
    message = serializers.CharField()
    consequence = serializers.SerializerMethodField(
        help_text="What the importer did about it: 'job <id> not stored', 'row not stored', 'nothing rejected', "
        "'archive refused: nothing stored', 'this listing not stored: job <id> is stored from another' (a job native "
        "files list twice, or the jobs file too), or for a run that failed as a whole 'run failed: nothing stored' or "
        "'run stopped: the <n> jobs it stored are kept, the rest not imported'; empty where the run did not record "
        "it (a connector's pull, an older run)."
    )

    def get_consequence(self, error: dict) -> str:
        return ingest.error_consequence(error)


class IngestRunSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(
        view_name="ingest-run-detail", help_text="Where to follow the run (its status, counts and errors)."
    )
    errors = serializers.SerializerMethodField()
    uploaded_by = serializers.CharField(source="uploader", read_only=True)
    duration_s = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="Seconds from the run's start to its end, or to now while it goes on. null before it starts, and "
        "for a run no process imports (it reads `running` but its worker or web process stopped; its page says "
        "Elapsed `stopped`): the run records no time of its last progress, so no duration is told.",
    )
    seconds_left = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="An estimate of the seconds the run has left, from the rate it has stored jobs at since it began "
        "storing them (after reading the archive). null until that rate means something (5 s of storing and 2 % "
        "of the jobs to store), once the run has finished, and for a run no process imports (it reads `running` but "
        "its worker or web process stopped; its page offers Import now / Mark failed).",
    )
    finished = serializers.BooleanField(source="is_finished", read_only=True)
    jobs_total = serializers.IntegerField(
        read_only=True,
        help_text="How many jobs the archive holds, rejected ones included; 0 until they are counted "
        "(`jobs_counted` false): read `jobs_counted` before taking 0 for an empty archive.",
    )
    jobs_counted = serializers.BooleanField(
        read_only=True,
        help_text="Whether `jobs_total` is known. false while the run is pending or its archive is still being "
        "read (its jobs not counted yet: `jobs_total` is 0 then, not an empty archive, which is refused), and "
        "while a connector's pull runs (it counts what it has fetched so far); true once the archive is read "
        "and once the run has finished.",
    )

    class Meta:
        model = IngestRun
        fields = [
            "id",
            "url",
            "status",
            "finished",
            "phase",
            "source",
            "archive_name",
            "uploaded_by",
            "created_at",
            "started_at",
            "finished_at",
            "duration_s",
            "seconds_left",
            "jobs_total",
            "jobs_counted",
            "jobs_done",
            "jobs_created",
            "jobs_updated",
            "jobs_unchanged",
            "jobs_rejected",
            "samples",
            "attempts",
            "errors",
        ]
        read_only_fields = fields

    @extend_schema_field(RecordErrorSerializer(many=True))
    def get_errors(self, run: IngestRun) -> list[dict]:
        # By file, row and field, as the run's page and CSV list them: a connector's pull (and a run
        # stored before the importer sorted them) keeps its errors in the order they were found.
        return RecordErrorSerializer(ingest.in_row_order(run.errors), many=True).data


class IngestRunRefusedSerializer(IngestRunSerializer):
    """The push's 503: the run (failed, nothing imported) and why, for the schema only."""

    detail = serializers.CharField(read_only=True, help_text="Why: the task queue (Redis) could not be reached.")

    class Meta(IngestRunSerializer.Meta):
        fields = [*IngestRunSerializer.Meta.fields, "detail"]
        read_only_fields = fields


class ArchiveUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="The archive: a .zip or .tar.gz in fleet archive format v1.")


class IngestRunViewSet(KnownParameters, viewsets.ReadOnlyModelViewSet):
    """Ingest runs with their progress and every error (file, row, field, job, message).

    Operators see every run (with a personal token too); a machine token sees the runs it pushed, if it
    may push archives (`pushes_archives`): one made only to read is a 403 naming that box, as its push is."""

    serializer_class = IngestRunSerializer
    permission_classes = [IsOperator | TokenMayFollowRuns]
    filterset_fields = ["status", "source"]

    def get_queryset(self):
        runs = IngestRun.objects.select_related("created_by", "api_key").order_by("-created_at", "-pk")
        if is_operator(self.request.user):
            return runs
        token = token_of(self.request)
        return runs.filter(api_key=token) if token is not None else runs.none()

    @extend_schema(auth=API_AUTH, responses={200: IngestRunSerializer, 403: RUNS_REFUSED})
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def paginate_queryset(self, queryset):
        """The page's runs, whether a process holds each (`duration_s`, `seconds_left`) told for all in one query."""
        page = super().paginate_queryset(queryset)
        if page is not None:  # a list (a page is always asked for: DEFAULT_PAGINATION_CLASS)
            ingest.tell_no_process_holds(page)
        return page

    @extend_schema(auth=API_AUTH, responses={200: IngestRunSerializer, 403: RUNS_REFUSED})
    def retrieve(self, request, *args, **kwargs):
        return super().retrieve(request, *args, **kwargs)


class ArchiveViewSet(mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Push an archive; it is imported in the background. Poll the returned run for progress.

    An operator's session, or a machine token made to push archives (`pushes_archives`, ticked by
    default on the tokens page); a token made only to read is a 403 saying so, nothing stored."""

    serializer_class = ArchiveUploadSerializer
    parser_classes = [MultiPartParser]
    permission_classes = [IsOperator | TokenMayPush]

    @extend_schema(
        auth=PUSH_AUTH,
        # Inline, so the file shows as binary without splitting every component into request/response.
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        # Django's FileField refuses an empty file ("The submitted file is empty.").
                        "minLength": 1,
                        "description": "The archive: a .zip or .tar.gz in fleet archive format v1. An empty file is a "
                        "400 on `file`, and nothing is stored.",
                    }
                },
                "required": ["file"],
            }
        },
        # 400 and 403 are documented for every operation (config.api_schema).
        parameters=[
            OpenApiParameter(
                "Location",
                str,
                OpenApiParameter.HEADER,
                response=[202],
                description="The run's address (its `url`), to follow its progress.",
            ),
            OpenApiParameter(
                "Retry-After",
                int,
                OpenApiParameter.HEADER,
                response=[503],
                description="Seconds to wait before sending the archive again.",
            ),
        ],
        responses={
            202: IngestRunSerializer,
            413: OpenApiResponse(ErrorSerializer, description="The archive is larger than the upload limit."),
            503: OpenApiResponse(
                IngestRunRefusedSerializer,
                description="The task queue (Redis) could not be reached: the run is failed, saying so in its "
                "errors and in `detail`, and nothing was imported. Send the archive again after `Retry-After` s.",
            ),
        },
        summary="Push an archive",
    )
    def create(self, request, *args, **kwargs):
        upload = self.get_serializer(data=request.data)
        upload.is_valid(raise_exception=True)
        token = token_of(request)
        run = ingest.start_upload(
            upload.validated_data["file"],
            source=IngestRun.Source.API,
            user=request.user if token is None else None,
            api_key=token,
        )
        body = IngestRunSerializer(run, context=self.get_serializer_context()).data
        if run.status == IngestRun.Status.FAILED and not run.attempts:
            # Failed before any worker saw it: the queue (Redis) is unreachable. 503, so that a script
            # sends the archive again later; the run, failed, says why. A run that failed in its import
            # (tasks run in the request without REDIS_URL: a file that is no archive) is the 202 with
            # its errors, as with workers: sending it again would fail again.
            body["detail"] = run.errors[0]["message"]
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "60"})
        # 202 Accepted: the import goes on in the background; Location says where to follow it.
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": str(body["url"])})


router.register("archives", ArchiveViewSet, basename="archive")
router.register("ingest-runs", IngestRunViewSet, basename="ingest-run")
