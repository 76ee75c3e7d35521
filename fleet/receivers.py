from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from fleet.costs import recompute_costs
from fleet.models import Cluster, GpuModelPrice


@receiver([post_save, post_delete], sender=GpuModelPrice)
def reprice_cluster_jobs(sender, instance: GpuModelPrice, **kwargs):
    cluster = Cluster.objects.filter(pk=instance.cluster_id).first()
    if cluster is not None:  # None while the cluster itself is being deleted
        recompute_costs(cluster)
