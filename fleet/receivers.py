from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from config.middleware import IdleSessionMiddleware
from fleet.costs import recompute_costs
from fleet.models import Cluster, GpuModelPrice


@receiver([post_save, post_delete], sender=GpuModelPrice)
def reprice_cluster_jobs(sender, instance: GpuModelPrice, **kwargs):
    cluster = Cluster.objects.filter(pk=instance.cluster_id).first()
    if cluster is not None:  # None while the cluster itself is being deleted
        recompute_costs(cluster)


@receiver(user_logged_in)
def session_seen_at_login(sender, request, user, **kwargs):
    if request is not None and hasattr(request, "session"):
        IdleSessionMiddleware.seen(request)
