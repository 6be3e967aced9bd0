from django.apps import AppConfig


class ArmadaConfig(AppConfig):
    name = "armada"
    verbose_name = "Armada"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import logging

        from django.conf import settings

        import armada.lookups  # noqa: F401 (registers the ``__any`` lookup)
        from armada.metrics import register_collectors

        register_collectors()
        retry = settings.ARMADA.scheduling.retry_policy
        if retry.enabled and retry.global_max_retries == 0:
            logging.getLogger("armada").warning(
                "retry policies are enabled with scheduling.retryPolicy.globalMaxRetries 0: "
                "the kill switch is on, and no job will be retried whatever its policy says"
            )
