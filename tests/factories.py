from datetime import UTC, datetime, timedelta

import factory
from django.contrib.auth import get_user_model

from fleet.models import Cluster, Job, Owner, Team


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password("correct horse battery staple")


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda t: t.slug.replace("-", " ").title())


class OwnerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Owner

    user = factory.SubFactory(UserFactory)
    team = factory.SubFactory(TeamFactory)


class ClusterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Cluster
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"cluster{n}")


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Job

    cluster = factory.SubFactory(ClusterFactory)
    external_id = factory.Sequence(lambda n: str(100000 + n))
    name = factory.Sequence(lambda n: f"train-{n}")
    user = "someone"
    team = factory.SubFactory(TeamFactory)
    start_time = factory.Sequence(lambda n: datetime(2026, 11, 2, tzinfo=UTC) + timedelta(hours=n))
    end_time = factory.LazyAttribute(lambda j: j.start_time + timedelta(hours=2))
    gpu_count = 2
    gpu_model = "A100-80GB"
    gpu_hours = 4.0
    mean_gpu_util = 35.0
    unused_gpu_hours = 2.6
    idle_gpu_hours = 0.2
    coverage = 1.0
